"""Real programs, run plain and under `objtier record` with every sampler the CLI offers.

The programs are ones nobody on this project wrote: Debian's coreutils sort, sqlite3, xz,
gzip, nodejs, a JVM and redis (with its jemalloc), numpy from PyPI, plus small C/C++
programs compiled here that stand for common build modes and runtime mechanisms
(FORTIFY_SOURCE=3 checked reads, C++ exceptions through frames that hold tracked
allocations, dlopen'ed libraries that allocate, AddressSanitizer).

A recorded run passes when
  - its exit status is the plain run's,
  - its output (stdout plus the files it writes, SHA-256) is the plain run's,
  - the trace holds at least one object when the program makes large allocations
    (cases that allocate nothing over the recorder's threshold say why, and are not held to it),
  - objtier printed no traceback.
A run that `objtier record` refuses with one line of its own and a non-zero exit is reported
as refused (a pass only where the case allows refusing: AddressSanitizer).
The samplers are read from `objtier record --help` (the --sampler choices), never listed here.
The overhead ratio is median(recorded wall time) / median(plain wall time), the runs of one
case and sampler interleaved (plain, recorded, plain, recorded, ...).

    .venv/bin/python bench/real_programs.py [--repeat 3] [--only sort,xz] [--samplers fault,perf]
        [--quick] [--json results.json] [--markdown results.md] [--workdir DIR]

--quick runs the sizes the default test suite uses (tests/realprog/); without it the cases use
their full sizes (multi-million-line sort, hundreds of MB for xz/gzip). The heavy cases
(nodejs, JVM, redis under redis-benchmark) install what they need with apt-get when run as
root and missing (idempotent), or are reported as skipped with the reason.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import hashlib
import json
import os
import platform
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROGRAMS = REPO / "tests" / "realprog" / "programs"
OBJTIER = REPO / ".venv" / "bin" / "objtier"
PYTHON = REPO / ".venv" / "bin" / "python"
RECORD_TIMEOUT_S = 900


# ---------------------------------------------------------------- samplers from the CLI

def discover_samplers(objtier: Path = OBJTIER) -> list[str]:
    """The --sampler choices `objtier record` offers, in its order.

    Read from `record --help` ("--sampler {a,b,c}"); if the help shows no choices, from the
    error an invalid choice draws ("choose from 'a', 'b'")."""
    helptext = subprocess.run([str(objtier), "record", "--help"], capture_output=True,
                              text=True, timeout=120).stdout
    found = re.search(r"--sampler \{([^}]+)\}", helptext)
    if found:
        return [s.strip() for s in found.group(1).split(",") if s.strip()]
    probe = subprocess.run([str(objtier), "record", "--sampler", "\x01none\x01", "--", "true"],
                           capture_output=True, text=True, timeout=120)
    found = re.search(r"choose from ([^)\n]+)", probe.stderr)
    if found:
        return re.findall(r"'([^']+)'", found.group(1)) or [
            s.strip() for s in found.group(1).split(",") if s.strip()]
    raise RuntimeError("cannot read the sampler choices from `objtier record --help`")


def resolve_sampler(sampler: str, objtier: Path = OBJTIER) -> str:
    """The sampler a --sampler choice runs on this machine (auto -> perf, fault, ...), read from
    the "sampler NAME: reason" line `objtier record` prints; the choice itself if none."""
    with tempfile.TemporaryDirectory(prefix="objtier-probe-") as scratch:
        run = subprocess.run([str(objtier), "record", "-f", "-o", f"{scratch}/probe.otr",
                              "--sampler", sampler, "--", "true"],
                             capture_output=True, text=True, timeout=120)
    found = re.search(r"objtier record: sampler (\S+?):", run.stderr)
    return found.group(1) if found else sampler


# ---------------------------------------------------------------- cases

@dataclasses.dataclass
class Prepared:
    """One ready-to-run program: its command and where its output goes."""

    command: list[str]
    cwd: Path
    outputs: list[Path] = dataclasses.field(default_factory=list)  # files it writes
    env: dict[str, str] = dataclasses.field(default_factory=dict)  # added to os.environ
    stdin: Path | None = None
    # A server: started (plain or under record), then driven by this function, which
    # returns the text whose checksum is compared and stops the server.
    driver: Callable[[subprocess.Popen], str] | None = None


@dataclasses.dataclass
class Case:
    name: str
    what: str
    prepare: Callable[[Path, bool], Prepared]  # (work directory, full size?) -> Prepared
    fast: bool = True  # in the default test suite (at the --quick size)
    needs: Callable[[], str | None] = lambda: None  # None when runnable, else why not
    objects_expected: bool = True
    objects_note: str = ""  # why no objects are expected, or where the allocator hides them
    may_refuse: bool = False  # a one-line refusal by objtier counts as a pass


def _which(*names: str) -> Callable[[], str | None]:
    def check() -> str | None:
        missing = [n for n in names if not shutil.which(n)]
        return f"not installed: {', '.join(missing)}" if missing else None
    return check


def _compile(work: Path, source: str, output: str, compiler: str, *flags: str) -> Path:
    """Compile PROGRAMS/source into work/output once (kept across runs of one work dir)."""
    exe = work / output
    if not exe.exists():
        cmd = [compiler, *flags, "-o", str(exe), str(PROGRAMS / source)]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"compile failed: {' '.join(cmd)}\n{run.stderr}")
    return exe


def _text_file(path: Path, mib: int) -> Path:
    """Compressible, deterministic text: numbered lines with words from a small vocabulary."""
    if path.exists() and path.stat().st_size >= mib << 20:
        return path
    rng = random.Random(1125)
    words = ["tier", "page", "object", "sample", "fault", "swap", "node", "plan", "heap",
             "arena", "record", "cache", "line", "window", "hot", "cold", "memory", "scan"]
    with open(path, "w") as out:
        written, line = 0, 0
        while written < mib << 20:
            chunk = "".join(f"{line + i} {' '.join(rng.choices(words, k=9))} "
                            f"{rng.randrange(1 << 30)}\n" for i in range(4096))
            out.write(chunk)
            written += len(chunk)
            line += 4096
    return path


def _numbers_file(path: Path, lines: int) -> Path:
    if not path.exists():
        rng = random.Random(2026)
        with open(path, "w") as out:
            for start in range(0, lines, 100_000):
                count = min(100_000, lines - start)
                out.write("".join(f"{rng.randrange(10 ** 12) - 5 * 10 ** 11}\n"
                                  for _ in range(count)))
    return path


def prepare_sort(work: Path, full: bool) -> Prepared:
    lines = 3_000_000 if full else 1_000_000
    data = _numbers_file(work / f"numbers-{lines}.txt", lines)
    return Prepared(["sort", "-n", str(data)], work, env={"LC_ALL": "C.UTF-8"})


SQLITE_QUERIES = """
PRAGMA cache_size = -131072;
PRAGMA temp_store = memory;
SELECT count(*), sum(amount), min(label), max(label) FROM orders;
SELECT customer % 97 AS bucket, count(*), sum(amount) FROM orders GROUP BY bucket ORDER BY bucket;
SELECT label, amount FROM orders ORDER BY amount DESC, id LIMIT 20;
SELECT c.region, count(*), sum(o.amount)
  FROM orders o JOIN customers c ON c.id = o.customer GROUP BY c.region ORDER BY c.region;
SELECT count(DISTINCT label) FROM orders;
SELECT id, amount FROM orders ORDER BY label, id LIMIT 5 OFFSET 1000;
"""


def prepare_sqlite(work: Path, full: bool) -> Prepared:
    rows = 1_000_000 if full else 200_000
    database = work / f"orders-{rows}.db"
    if not database.exists():
        build = f"""
PRAGMA journal_mode = off;
CREATE TABLE customers (id INTEGER PRIMARY KEY, region TEXT);
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9999)
INSERT INTO customers SELECT i, 'region-' || (i * 7919 % 13) FROM n;
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer INTEGER, amount INTEGER, label TEXT);
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {rows - 1})
INSERT INTO orders SELECT i, (i * 2654435761) % 10000, (i * 40503) % 100000,
       printf('item-%08d', (i * 69069) % 1000003) FROM n;
"""
        scratch = database.with_suffix(".tmp")
        scratch.unlink(missing_ok=True)
        subprocess.run(["sqlite3", str(scratch)], input=build, text=True, check=True)
        scratch.rename(database)
    queries = work / "queries.sql"
    queries.write_text(SQLITE_QUERIES)
    return Prepared(["sqlite3", "-readonly", str(database)], work, stdin=queries)


def prepare_numpy(work: Path, full: bool) -> Prepared:
    return Prepared([str(PYTHON), str(PROGRAMS / "numpy_work.py"), "8" if full else "1.5"],
                    work, env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})


def prepare_gzip(work: Path, full: bool) -> Prepared:
    data = _text_file(work / f"text-{64 if full else 12}.txt", 64 if full else 12)
    return Prepared(["gzip", "-6", "-c", str(data)], work)


def prepare_xz(work: Path, full: bool) -> Prepared:
    if full:
        return Prepared(["xz", "-T1", "-6", "-c", str(_text_file(work / "text-24.txt", 24))],
                        work)
    return Prepared(["xz", "-T1", "-3", "-c", str(_text_file(work / "text-3.txt", 3))], work)


def prepare_fortify(work: Path, full: bool) -> Prepared:
    exe = _compile(work, "fortify_read.c", "fortify_read", "gcc", "-O2", "-g",
                   "-D_FORTIFY_SOURCE=3")
    data = _text_file(work / f"text-{64 if full else 24}.txt", 64 if full else 24)
    return Prepared([str(exe), str(data), "8" if full else "4"], work)


def prepare_cxx(work: Path, full: bool) -> Prepared:
    exe = _compile(work, "cxx_throw.cpp", "cxx_throw", "g++", "-O2", "-g")
    return Prepared([str(exe), "4000" if full else "600"], work)


def prepare_dlopen(work: Path, full: bool) -> Prepared:
    library = _compile(work, "alloclib.c", "liballoc.so", "gcc", "-O2", "-g", "-fPIC", "-shared")
    exe = _compile(work, "dlopen_main.c", "dlopen_main", "gcc", "-O2", "-g", "-ldl")
    return Prepared([str(exe), str(library), "12" if full else "3"], work)


def prepare_asan(work: Path, full: bool) -> Prepared:
    exe = _compile(work, "asan_prog.c", "asan_prog", "gcc", "-O1", "-g", "-fsanitize=address")
    return Prepared([str(exe), "256" if full else "48"], work)


def prepare_node(work: Path, full: bool) -> Prepared:
    return Prepared(["node", str(PROGRAMS / "node_work.js"), "8" if full else "4"], work)


def prepare_java(work: Path, full: bool) -> Prepared:
    classes = work / "java-classes"
    if not (classes / "JavaWork.class").exists():
        classes.mkdir(exist_ok=True)
        subprocess.run(["javac", "-d", str(classes), str(PROGRAMS / "JavaWork.java")],
                       check=True, capture_output=True)
    return Prepared(["java", "-Xmx2g", "-XX:+UseParallelGC", "-XX:ParallelGCThreads=2",
                     "-cp", str(classes), "JavaWork", "8" if full else "4"], work)


def _redis_cli(sock: Path, *args: str, data: str | None = None) -> str:
    run = subprocess.run(["redis-cli", "-s", str(sock), *args], input=data,
                         capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        raise RuntimeError(f"redis-cli {' '.join(args)}: {run.stderr.strip()}")
    return run.stdout


def prepare_redis(work: Path, full: bool) -> Prepared:
    sock = work / f"redis-{os.getpid()}.sock"
    keys = 100_000 if full else 20_000
    requests = 200_000 if full else 40_000
    protocol = work / f"redis-load-{keys}.txt"
    if not protocol.exists():
        rng = random.Random(7)
        with open(protocol, "w") as out:
            for i in range(keys):
                value = "".join(rng.choices("abcdefghijklmnop", k=1024))
                out.write(f"SET data:{i} {value}\n")

    def drive(server: subprocess.Popen) -> str:
        deadline = time.monotonic() + 60
        while True:
            if server.poll() is not None:
                return f"server exited {server.returncode} before accepting connections"
            try:
                with socket.socket(socket.AF_UNIX) as probe:
                    probe.connect(str(sock))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        with open(protocol) as lines:
            subprocess.run(["redis-cli", "-s", str(sock)], stdin=lines, check=True,
                           stdout=subprocess.DEVNULL, timeout=600)
        bench = subprocess.run(["redis-benchmark", "-s", str(sock), "-q", "-n", str(requests),
                                "-r", "100000", "-d", "4096", "-t", "set,get,lpush,lpop"],
                               capture_output=True, text=True, timeout=900)
        summary = [f"benchmark exit {bench.returncode}",
                   f"benchmark tests {len(re.findall(r'requests per second', bench.stdout))}"]
        summary.append("dbsize-data " + _redis_cli(sock, "eval",
                       "return #redis.call('keys','data:*')", "0").strip())
        digest = hashlib.sha256()
        for start in range(0, keys, 5000):
            names = [f"data:{i}" for i in range(start, min(keys, start + 5000))]
            digest.update(_redis_cli(sock, "mget", *names).encode())
        summary.append("data " + digest.hexdigest()[:16])
        _redis_cli(sock, "shutdown", "nosave")
        return "\n".join(summary) + "\n"

    return Prepared(["redis-server", "--port", "0", "--unixsocket", str(sock),
                     "--save", "", "--appendonly", "no", "--daemonize", "no",
                     "--loglevel", "warning"], work, driver=drive)


CASES: list[Case] = [
    Case("sort", "coreutils sort -n on a file of integers (1M lines; 3M full)", prepare_sort,
         needs=_which("sort")),
    Case("sqlite3", "sqlite3 query set (GROUP BY, ORDER BY, JOIN) on a generated database "
         "(200k rows; 1M full), 128 MiB page cache", prepare_sqlite, needs=_which("sqlite3"),
         objects_expected=False,
         objects_note="sqlite3 allocates its page cache and sorter in pieces under the 128 KiB "
         "object threshold (largest 85 KiB; --min-size 8K records about 11,500 objects)"),
    Case("numpy", "python3 + numpy (PyPI wheel in .venv): sort, unique, FFT, matmul "
         "(1.5M elements; 8M full)", prepare_numpy),
    Case("gzip", "gzip -6 of a text file (12 MiB; 64 MiB full)", prepare_gzip,
         needs=_which("gzip"), objects_expected=False,
         objects_note="gzip's window and buffers are static arrays, not allocations"),
    Case("xz", "xz -T1 -3 of a 3 MiB text file (-6 of 24 MiB full)", prepare_xz,
         needs=_which("xz")),
    Case("fortify", "gcc -O2 -D_FORTIFY_SOURCE=3 program: __read_chk, __pread_chk, "
         "__fread_chk, __fread_unlocked_chk, __fgets_chk into 24 MiB heap buffers",
         prepare_fortify, needs=_which("gcc")),
    Case("cxx-exceptions", "g++ program throwing/rethrowing through 9 frames holding "
         "256 KiB vectors", prepare_cxx, needs=_which("g++")),
    Case("dlopen", "dlopen'ed library that mallocs and mmaps 16 MiB tables, closed and "
         "reopened", prepare_dlopen, needs=_which("gcc")),
    Case("asan", "gcc -fsanitize=address program with two 48 MiB buffers", prepare_asan,
         needs=_which("gcc"), may_refuse=True),
    Case("nodejs", "node (V8 JIT): typed arrays and a Map of objects (4M; 8M full)",
         prepare_node, fast=False, needs=_which("node")),
    Case("java", "OpenJDK 17 (HotSpot JIT, ParallelGC, -Xmx2g): arrays, sort, HashMap "
         "(4M; 8M full)", prepare_java, fast=False, needs=_which("java", "javac")),
    Case("redis", "redis-server (jemalloc) loaded with 1 KiB values, then redis-benchmark "
         "set/get/lpush/lpop with 4 KiB values", prepare_redis, fast=False,
         needs=_which("redis-server", "redis-cli", "redis-benchmark"),
         objects_note="jemalloc serves redis's small values from its own extents, which reach "
         "the trace as mmap objects; redis's large tables as malloc/calloc/realloc objects"),
]
CASES_BY_NAME = {case.name: case for case in CASES}

# Heavy cases' Debian packages, installed by this script when run as root and missing.
BENCH_APT = {"redis": ["redis-server", "redis-tools"], "java": ["openjdk-17-jdk-headless"],
             "nodejs": ["nodejs"]}


def install_heavy(names: list[str]) -> None:
    wanted = [pkg for name in names for pkg in BENCH_APT.get(name, [])]
    missing = [pkg for pkg in wanted if subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True,
        text=True).stdout.find("install ok installed") < 0]
    if missing and os.geteuid() == 0:
        print(f"installing {' '.join(missing)}", file=sys.stderr)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                        *missing], env=env, check=False, stdout=subprocess.DEVNULL)
        # The Debian package starts a system redis; this suite starts its own.
        if "redis-server" in missing:
            subprocess.run(["systemctl", "disable", "--now", "redis-server"],
                           capture_output=True, check=False)


# ---------------------------------------------------------------- running

@dataclasses.dataclass
class Run:
    exit_status: int  # shell convention: 128 + N when killed by signal N
    checksum: str  # SHA-256 (16 hex digits) of stdout plus the output files
    stderr: str
    wall_s: float
    objects: int | None = None  # recorded runs: allocations in the trace
    trace_note: str = ""  # recorded runs: the trace's warnings, or why it is unreadable
    kinds: str = ""  # recorded runs: objects per allocation call, e.g. "malloc 3, mmap 12"


def _shell_status(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def run_program(prepared: Prepared, prefix: list[str] | None = None) -> Run:
    """Run prepared.command (after prefix, e.g. an `objtier record ... --` line)."""
    for output in prepared.outputs:
        output.unlink(missing_ok=True)
    env = {**os.environ, **prepared.env}
    command = [*(prefix or []), *prepared.command]
    stdin = open(prepared.stdin, "rb") if prepared.stdin else subprocess.DEVNULL
    started = time.monotonic()
    try:
        if prepared.driver is None:
            done = subprocess.run(command, cwd=prepared.cwd, env=env, stdin=stdin,
                                  capture_output=True, timeout=RECORD_TIMEOUT_S)
            returncode, stdout, stderr = done.returncode, done.stdout, done.stderr
        else:
            returncode, stdout, stderr = _run_server(prepared, command, env)
    finally:
        if prepared.stdin:
            stdin.close()
    wall = time.monotonic() - started
    digest = hashlib.sha256(stdout)
    for output in prepared.outputs:
        digest.update(output.read_bytes() if output.exists() else b"<missing>")
    return Run(_shell_status(returncode), digest.hexdigest()[:16],
               stderr.decode(errors="replace"), wall)


def _run_server(prepared: Prepared, command: list[str],
                env: dict[str, str]) -> tuple[int, bytes, bytes]:
    errors = tempfile.TemporaryFile()
    server = subprocess.Popen(command, cwd=prepared.cwd, env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=errors)
    try:
        summary = prepared.driver(server)
        returncode = server.wait(timeout=300)
    except BaseException:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        raise
    errors.seek(0)
    return returncode, summary.encode(), errors.read()


def record_prefix(sampler: str, trace: Path) -> list[str]:
    return [str(OBJTIER), "record", "-q", "-f", "-o", str(trace), "--sampler", sampler, "--"]


def run_recorded(prepared: Prepared, sampler: str, trace: Path) -> Run:
    shutil.rmtree(trace, ignore_errors=True)  # a refusal must not find an older trace
    run = run_program(prepared, record_prefix(sampler, trace))
    run.objects, run.trace_note, run.kinds = read_trace(trace)
    return run


def read_trace(trace: Path) -> tuple[int | None, str, str]:
    """(objects, warnings, objects per allocation call) of a trace; None objects if unreadable."""
    from collections import Counter

    from objtier.errors import ObjtierError
    from objtier.trace import open_trace
    from objtier.trace.format import ALLOC_KINDS

    if not trace.exists():
        return None, "no trace directory", ""
    try:
        opened = open_trace(trace)
    except ObjtierError as error:
        return None, f"trace unreadable: {error}", ""
    counts = Counter(opened.allocations.column("kind").to_pylist())
    kinds = ", ".join(f"{ALLOC_KINDS.get(k, k)} {n}" for k, n in sorted(counts.items()))
    return opened.allocations.num_rows, "; ".join(opened.warnings), kinds


def record_messages(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("objtier")]


def program_stderr(stderr: str) -> str:
    return "\n".join(line for line in stderr.splitlines() if not line.startswith("objtier"))


def verdict(case: Case, plain: Run, recorded: Run) -> tuple[str, str]:
    """('pass' | 'refused' | 'fail', why). 'refused' is a pass only where the case allows it."""
    if "Traceback (most recent call last)" in recorded.stderr:
        return "fail", "objtier printed a traceback: " + recorded.stderr.strip().splitlines()[-1]
    messages = record_messages(recorded.stderr)
    if (recorded.exit_status != plain.exit_status and recorded.exit_status in (2, 3, 4)
            and messages and recorded.objects is None):
        return "refused", messages[-1]
    problems = []
    if recorded.exit_status != plain.exit_status:
        problems.append(f"exit status {recorded.exit_status}, plain {plain.exit_status}")
    if recorded.checksum != plain.checksum:
        problems.append("output differs")
    if problems:
        said = program_stderr(recorded.stderr).strip().splitlines()
        if said and said != program_stderr(plain.stderr).strip().splitlines():
            problems.append("program said: " + said[0][:160])
        return "fail", "; ".join(problems)
    if case.objects_expected and not recorded.objects:
        return "fail", f"no objects in the trace ({recorded.trace_note or 'no warning'})"
    return "pass", case.objects_note if not recorded.objects else ""


def passed(case: Case, outcome: str) -> bool:
    return outcome == "pass" or (outcome == "refused" and case.may_refuse)


# ---------------------------------------------------------------- the bench

def measure(case: Case, sampler: str, prepared: Prepared, work: Path, repeat: int) -> dict:
    plains, recordeds = [], []
    for round_ in range(repeat):
        plains.append(run_program(prepared))
        recordeds.append(run_recorded(prepared, sampler, work / f"{case.name}-{sampler}.otr"))
    outcomes = [verdict(case, plains[0], r) for r in recordeds]
    worst = next((o for o in outcomes if not passed(case, o[0])), outcomes[0])
    failures = sum(not passed(case, o[0]) for o in outcomes)
    plain_s = statistics.median(p.wall_s for p in plains)
    recorded_s = statistics.median(r.wall_s for r in recordeds)
    return {
        "case": case.name, "sampler": sampler,
        "result": "pass" if failures == 0 else f"fail {failures}/{repeat}",
        "outcome": worst[0], "why": worst[1],
        "exit_plain": plains[0].exit_status,
        "exit_recorded": sorted({r.exit_status for r in recordeds}),
        "checksum_match": all(r.checksum == plains[0].checksum for r in recordeds),
        "plain_stable": len({p.checksum for p in plains}) == 1,
        "objects": [r.objects for r in recordeds],
        "trace_note": recordeds[-1].trace_note, "kinds": recordeds[-1].kinds,
        "plain_s": round(plain_s, 3), "recorded_s": round(recorded_s, 3),
        "overhead": round(recorded_s / plain_s, 2) if plain_s > 0 else None,
    }


def markdown(rows: list[dict], meta: dict) -> str:
    lines = [f"Machine: {meta['machine']}. Date: {meta['date']}. Command: `{meta['command']}`. "
             f"Repeats per case and sampler: {meta['repeat']} (plain and recorded interleaved; "
             "times are medians of real wall-clock runs; the machine was shared with other "
             "builds and tests, so overhead ratios are noisy).", "",
             "| case | sampler | result | exit plain/recorded | output same | objects | "
             "overhead | why / note |", "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        if row.get("skipped"):
            lines.append(f"| {row['case']} | {row['sampler']} | skipped | | | | | "
                         f"{row['skipped']} |")
            continue
        objects = ",".join("-" if o is None else str(o) for o in row["objects"])
        if row.get("kinds"):
            objects += f" ({row['kinds']})"
        exits = "/".join(str(e) for e in row["exit_recorded"])
        note = row["why"] or row["trace_note"]
        note = note.replace("|", "\\|")[:220]
        lines.append(f"| {row['case']} | {row['sampler']} | {row['result']} | "
                     f"{row['exit_plain']}/{exits} | {'yes' if row['checksum_match'] else 'no'} | "
                     f"{objects} | {row['overhead']}x | {note} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated case names")
    parser.add_argument("--samplers", default="", help="comma-separated (default: all offered)")
    parser.add_argument("--quick", action="store_true", help="the test suite's sizes")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--markdown", type=Path, default=None)
    parser.add_argument("--workdir", type=Path, default=None,
                        help="inputs and builds (kept; default: a temporary directory)")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    offered = discover_samplers()
    samplers = [s for s in args.samplers.split(",") if s] or offered
    unknown = [s for s in samplers if s not in offered]
    if unknown:
        parser.error(f"unknown sampler(s) {','.join(unknown)}; offered: {','.join(offered)}")
    names = [n for n in args.only.split(",") if n] or [c.name for c in CASES]
    for name in names:
        if name not in CASES_BY_NAME:
            parser.error(f"unknown case {name}; known: {','.join(CASES_BY_NAME)}")
    install_heavy(names)
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
        run_cases(args, names, samplers, args.workdir)
        return
    with tempfile.TemporaryDirectory(prefix="objtier-realprog-") as tmp:
        run_cases(args, names, samplers, Path(tmp))


def run_cases(args, names: list[str], samplers: list[str], work: Path) -> None:
    """Measures every case with every sampler in work; prints and writes the tables."""
    meta = {"machine": f"{platform.node()} ({os.cpu_count()} CPUs, {platform.release()})",
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "command": " ".join(["bench/real_programs.py", *sys.argv[1:]]),
            "repeat": args.repeat, "samplers": samplers, "full": not args.quick}
    rows = []
    for name in names:
        case = CASES_BY_NAME[name]
        why_not = case.needs()
        if why_not:
            rows += [{"case": name, "sampler": s, "skipped": why_not} for s in samplers]
            continue
        prepared = case.prepare(work, not args.quick)
        for sampler in samplers:
            row = measure(case, sampler, prepared, work, args.repeat)
            rows.append(row)
            print(f"{name:15} {sampler:6} {row['result']:9} objects={row['objects']} "
                  f"overhead={row['overhead']}x {row['why'][:100]}", file=sys.stderr, flush=True)
    table = markdown(rows, meta)
    print(table)
    if args.markdown:
        args.markdown.write_text(table)
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
