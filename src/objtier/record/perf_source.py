"""perf as a source of access samples.

`objtier record --with-perf [EVENT] -- CMD` attaches `perf record -d -p` to the program before
it runs (a gate holds it until perf's events are enabled), beside the runtime's allocation
tracking; `objtier import-perf perf.data --objects run.otr` reads a
perf.data recorded separately. Either way perf's samples (time, pid, tid, data address, and
where perf has them period, data source and weight) are read with `perf script` and a pinned
field list (never by parsing perf.data), and stored in the recording as one `perf-<pid>.otr`
per process: a trace file of kind PERF (format 1.5) holding SAMPLE records, the runtime's own
record type, flagged SAMPLE_PERF. The reader takes them as the recording's samples
(Trace.samples; the runtime sampler's stay in Trace.runtime_samples), so that objects, report
and plan map them onto the objects by pid, address and time like any other samples.

Events: `mem` is `perf mem record` (PEBS/IBS; perf handles each CPU's events); without it
(no hardware PMU) the default is a software event with data addresses: major faults when the
runtime's pageout sampler pushes sampled pages to swap (their re-faults are real accesses),
else every page fault (first touches). Any other EVENT is passed to `perf record -e`.

Mapping onto the header (as the runtime's own perf sampler, sampler_perf.c): period ->
weight, perf's weight (access latency, cycles) -> latency, data_src -> level, TLB and
load/store; a major fault is a swap-in (level swap, flag MAJOR).
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np

from objtier.errors import EnvironmentProblem, TraceError, UsageError
from objtier.trace import format as F

BASE_FIELDS = ("pid", "tid", "time", "event", "addr", "period")   # perf script -F, pinned
FAULT_EVENTS = ("page-faults", "faults", "major-faults", "minor-faults")
U32_MAX = (1 << 32) - 1
ENABLE_WAIT_S = 30.0  # most seconds perf may take to attach and enable its events
STOP_WAIT_S = 10.0    # seconds perf gets to end after its target, and after SIGINT

# perf script --ns -F pid,tid,time,event,addr,period[,data_src][,weight] prints (perf's own
# order): "PID/TID SEC.NSEC: PERIOD EVENT: ADDR [DATA_SRC |decoded|] [WEIGHT]"
_LINE = re.compile(r"^\s*(\d+)/(\d+)\s+(\d+)\.(\d+):\s+(\d+)\s+(\S+):\s+([0-9a-fA-F]+)(.*)$")
_EVENT = re.compile(r"^# event : name = ([^,]*),.*?sample_type = ([A-Z_|]+)")


def find_perf() -> str:
    perf = shutil.which("perf")
    if not perf:
        raise EnvironmentProblem("perf is not installed (Debian: apt-get install linux-perf)")
    return perf


def perf_mem_support(perf: str) -> tuple[bool, str]:
    """(True, events) when `perf mem record` has memory events here, else (False, perf's
    reason, e.g. "memory events not supported" on a machine without PEBS/IBS)."""
    try:
        done = subprocess.run([perf, "mem", "record", "-e", "list"], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return False, f"perf mem did not answer ({error})"
    text = (done.stdout + done.stderr).strip()
    available = [line.split(":")[0].strip() for line in text.splitlines()
                 if line.rstrip().endswith(": available")]
    if available:
        return True, ", ".join(available)
    reason = text.splitlines()[0] if text else f"exit status {done.returncode}"
    return False, reason.removeprefix("failed: ")


# --- perf script output -> SAMPLE records --------------------------------------------------

@dataclass
class ScriptHeader:
    events: dict[str, set[str]]     # event name -> sample_type bits
    monotonic: bool                 # recorded with -k CLOCK_MONOTONIC

    def fields(self) -> tuple[str, ...]:
        """The pinned -F list for this perf.data: the base fields, plus data_src and weight
        when every event has them (perf script refuses a field an event lacks)."""
        if not self.events:
            raise TraceError("the perf.data holds no events")
        lacking = sorted(name for name, bits in self.events.items()
                         if not {"TID", "TIME", "ADDR"} <= bits)
        if lacking:
            raise UsageError(f"perf.data events {', '.join(lacking)} have no data addresses, "
                             f"thread or time (record with perf record -d)")
        out = list(BASE_FIELDS)
        if all("DATA_SRC" in bits for bits in self.events.values()):
            out.append("data_src")
        if all(bits & {"WEIGHT", "WEIGHT_STRUCT"} for bits in self.events.values()):
            out.append("weight")
        return tuple(out)


def parse_header(text: str) -> ScriptHeader:
    """`perf script --header-only` text -> its events' sample types and clock."""
    events: dict[str, set[str]] = {}
    monotonic = False
    for line in text.splitlines():
        match = _EVENT.match(line)
        if match:
            events[match.group(1).strip()] = set(match.group(2).split("|"))
        elif line.startswith("# clockid:") and "monotonic" in line:
            monotonic = True
    return ScriptHeader(events=events, monotonic=monotonic)


def decode_data_src(value: int) -> tuple[int, int, int]:
    """perf_mem_data_src (linux/perf_event.h) -> (level, tlb, flags) as sampler_perf.c."""
    op, lvl = value & 0x1F, (value >> 5) & 0x3FFF
    dtlb, lvl_num, remote = (value >> 26) & 0x7F, (value >> 33) & 0xF, (value >> 37) & 0x1
    flags = 0
    if op & 0x4:                      # PERF_MEM_OP_STORE
        flags = F.SAMPLE_WRITE | F.SAMPLE_RW_KNOWN
    elif op & 0x2:                    # PERF_MEM_OP_LOAD
        flags = F.SAMPLE_RW_KNOWN
    tlb = 2 if dtlb & 0x4 else 1 if dtlb & 0x2 else 0   # TLB_MISS, TLB_HIT
    by_num = {0x1: 1, 0xC: 2, 0x2: 3, 0x3: 4, 0x9: 8, 0xE: 7}   # L1 LFB L2 L3 CXL PMEM
    if lvl_num in by_num:
        return by_num[lvl_num], tlb, flags
    if lvl_num == 0xD:                # RAM
        return (6 if remote else 5), tlb, flags
    for bit, level in ((0x8, 1), (0x10, 2), (0x20, 3), (0x40, 4), (0x80, 5), (0x300, 6),
                       (0x2000, 10)):  # the legacy mem_lvl bits, in sampler_perf.c's order
        if lvl & bit:
            return level, tlb, flags
    return 0, tlb, flags


def _event_kind(name: str, has_data_src: bool) -> tuple[int, int, int]:
    """(source, flags, level) an event's samples get before their data source."""
    base = name.split(":")[0]
    if base == "major-faults":
        return 4, F.SAMPLE_MAJOR, 9    # PERF_SWFAULT, a swap-in (as sampler_perf.c)
    if base in FAULT_EVENTS or not has_data_src:
        return 4, 0, 0
    return (3 if "ibs" in name else 2), 0, 0   # IBS op, else PEBS


@dataclass
class ParsedSamples:
    records: np.ndarray             # F.SAMPLE records
    pids: np.ndarray                # uint32, per record
    events: dict[str, int] = field(default_factory=dict)   # samples per event
    no_address: int = 0             # samples with address 0, dropped
    bad_lines: int = 0


def parse_script(lines: Iterable[str], fields: tuple[str, ...]) -> ParsedSamples:
    """perf script --ns -F <fields> output -> SAMPLE records (flag SAMPLE_PERF)."""
    has_src, has_weight = "data_src" in fields, "weight" in fields
    rows: list[tuple] = []
    pids: list[int] = []
    events: dict[str, int] = {}
    kinds: dict[str, tuple[int, int, int]] = {}
    no_address = bad = 0
    for line in lines:
        match = _LINE.match(line)
        if not match:
            bad += bool(line.strip())
            continue
        pid, tid, sec, nsec, period, event, addr, rest = match.groups()
        address = int(addr, 16)
        events[event] = events.get(event, 0) + 1
        if address == 0:
            no_address += 1
            continue
        kind = kinds.get(event)
        if kind is None:
            kind = kinds[event] = _event_kind(event, has_src)
        source, flags, level = kind
        tlb = latency = 0
        words = rest.split()
        if has_src and words:
            try:
                src_level, tlb, src_flags = decode_data_src(int(words[0], 16))
            except ValueError:
                bad += 1
                continue
            level = src_level or level
            flags |= src_flags
        if has_weight and words:
            latency = min(int(words[-1]), U32_MAX) if words[-1].isdigit() else 0
        time_ns = int(sec) * 1_000_000_000 + int(nsec.ljust(9, "0")[:9])
        rows.append((time_ns, address, int(tid), latency, source, level, tlb,
                     flags | F.SAMPLE_PERF, F.NODE_UNKNOWN, min(int(period), U32_MAX), 0))
        pids.append(int(pid))
    records = np.array(rows, dtype=F.SAMPLE) if rows else np.zeros(0, dtype=F.SAMPLE)
    return ParsedSamples(records=records, pids=np.array(pids, dtype=np.uint32),
                         events=events, no_address=no_address, bad_lines=bad)


def read_perf_data(data: Path, perf: str | None = None) -> tuple[ScriptHeader, ParsedSamples]:
    """Run perf script on a perf.data; a file perf cannot read is one-line TraceError."""
    perf = perf or find_perf()
    if not data.is_file():
        raise UsageError(f"no such perf.data file: {data}")
    head = subprocess.run([perf, "script", "-i", str(data), "--header-only"],
                          capture_output=True, text=True)
    if head.returncode != 0:
        raise TraceError(f"perf cannot read {data}: {_first_line(head.stderr)}")
    header = parse_header(head.stdout)
    fields = header.fields()
    with subprocess.Popen([perf, "script", "-i", str(data), "--ns", "-F", ",".join(fields)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        parsed = parse_script(proc.stdout, fields)
        errors = proc.stderr.read() if proc.stderr else ""
    if proc.returncode != 0:
        raise TraceError(f"perf script failed on {data}: {_first_line(errors)}")
    return header, parsed


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else "no message"


# --- storing them in a recording ---------------------------------------------------------

def perf_files(recording: Path) -> list[Path]:
    return sorted(recording.glob("perf-*.otr"))


def store_samples(recording: Path, parsed: ParsedSamples, prefix: str = "perf") -> dict[int, int]:
    """Write <prefix>-<pid>.otr (a file of imported samples: perf's, or DAMON's with prefix
    "damon") for every process of the recording that was sampled; returns {pid: samples
    written}. Samples of other processes are left out."""
    from objtier.trace import open_trace
    from objtier.trace.writer import TraceWriter

    processes = {p.pid: p for p in open_trace(recording).processes}
    written: dict[int, int] = {}
    for pid in np.unique(parsed.pids).tolist():
        process = processes.get(int(pid))
        if process is None:
            continue
        records = parsed.records[parsed.pids == pid]
        records = records[np.argsort(records["time_ns"], kind="stable")]
        with TraceWriter(recording / f"{prefix}-{pid}.otr", kind="perf", pid=int(pid),
                         ppid=process.ppid, start_mono_ns=process.start_mono_ns,
                         start_real_ns=process.start_real_ns,
                         page_bytes=process.page_bytes) as writer:
            writer.fixed(F.TAG_SAMPLE, records)
        written[int(pid)] = len(records)
    return written


def summary_line(parsed: ParsedSamples, written: dict[int, int]) -> str:
    total = sum(parsed.events.values())
    kept = sum(written.values())
    events = ", ".join(f"{n} {e}" for e, n in sorted(parsed.events.items()))
    other = total - parsed.no_address - kept
    parts = [f"perf: {kept} of {total} samples ({events or 'none'}) stored as "
             f"{len(written)} perf-<pid>.otr file(s)"]
    if other:
        parts.append(f"{other} from processes the recording does not hold")
    if parsed.no_address:
        parts.append(f"{parsed.no_address} without a data address")
    if parsed.bad_lines:
        parts.append(f"{parsed.bad_lines} lines of perf script output not understood")
    return "; ".join(parts)


# --- record --with-perf ------------------------------------------------------------------

@dataclass
class PerfSource:
    """One `record --with-perf`: choose(), then settle() once the runtime sampler is known,
    launch() as record_program's launch hook (perf attaches to the program before it runs),
    finish() after the program ended."""

    perf: str
    request: str                    # "auto", "mem" or a perf event name
    sampler: str                    # the runtime sampler to ask for
    mem_reason: str = ""
    event: str = ""                 # "mem" or the -e event, after settle()
    workdir: Path | None = None
    process: subprocess.Popen | None = None    # perf record -p
    errors: BinaryIO | None = None             # its stderr
    enabled: bool = False                      # perf acknowledged `enable`
    failure: str = ""                          # why perf could not be started

    @classmethod
    def choose(cls, request: str, sampler: str) -> "PerfSource":
        perf = find_perf()
        if request in ("auto", "mem"):
            mem, why = perf_mem_support(perf)
            if mem:
                # perf owns the PMU: the runtime only tracks allocations unless told otherwise
                return cls(perf, request, "none" if sampler == "auto" else sampler, why, "mem")
            if request == "mem":
                raise EnvironmentProblem(f"--with-perf mem: perf mem is unavailable here ({why})")
            return cls(perf, request, sampler, why)
        if not re.fullmatch(r"[A-Za-z0-9_.:/,=@-]+", request):
            raise UsageError(f"--with-perf: not a perf event name: '{request}'")
        return cls(perf, request, sampler, event=request)

    def settle(self, sampler: str, say) -> None:
        """Pick the default event for the runtime sampler chosen and say it in one line."""
        if not self.event:
            self.event = "major-faults" if sampler == "pageout" else "page-faults"
            what = ("the pageout sampler's re-faults" if sampler == "pageout"
                    else "page faults (first touches)")
            say(f"perf mem is unavailable ({self.mem_reason}); perf records {self.event} "
                f"with data addresses: {what}")
        elif self.event == "mem":
            say(f"perf mem record ({self.mem_reason}) beside the {sampler} sampler")
        else:
            say(f"perf records {self.event} with data addresses beside the {sampler} sampler")

    def record_args(self, data: Path, pid: int, control: tuple[Path, Path]) -> list[str]:
        common = ["-q", "-d", "-k", "CLOCK_MONOTONIC", "-o", str(data), "-p", str(pid),
                  "-D", "-1", "--control", f"fifo:{control[0]},{control[1]}"]
        if self.event == "mem":
            return [self.perf, "mem", "record", *common]
        period = ["-c", "1"] if self.event in FAULT_EVENTS else []
        return [self.perf, "record", *common, *period, "-e", self.event]

    def launch(self, command: list[str], env: dict[str, str]):
        """(command, env, hook) for record_program. The program is started as usual, but
        behind a gate (a shell reading a FIFO, then exec) and without LD_PRELOAD in the gate's
        environment (`env` gives it to the program alone); the hook attaches perf to the
        started pid, enables its events and opens the gate (attach())."""
        self.workdir = Path(tempfile.mkdtemp(prefix="objtier-perf-"))
        for name in ("gate", "ctl", "ack"):
            os.mkfifo(self.workdir / name, 0o600)
        env = dict(env)
        preload = env.pop("LD_PRELOAD", "")
        gated = [shutil.which("sh") or "/bin/sh", "-c", 'read _ < "$0"; exec "$@"',
                 str(self.workdir / "gate"), shutil.which("env") or "/usr/bin/env",
                 f"LD_PRELOAD={preload}", *command]
        return gated, env, self.attach

    def attach(self, pid: int) -> int:
        """perf record -p pid, events enabled, then the gate opened (always, so that the
        program runs even when perf does not); returns pid (the program's)."""
        assert self.workdir is not None
        work = self.workdir
        try:
            self.errors = open(work / "perf.err", "w+b")
            self.process = subprocess.Popen(
                self.record_args(work / "perf.data", pid, (work / "ctl", work / "ack")),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.errors,
                start_new_session=True)   # Ctrl-C reaches the program, not perf
            self.enabled = _enable(self.process, work / "ctl", work / "ack")
        except OSError as error:
            self.errors = None
            self.failure = str(error)
        finally:
            _open_gate(work / "gate", pid)
        return pid

    def finish(self, output: Path, say) -> None:
        """After the program ended: perf stops (it ends with its target; SIGINT after
        STOP_WAIT_S), perf.data -> perf-<pid>.otr in the recording, the work files removed."""
        if self.workdir is None:
            return
        try:
            if self.process is None:
                return
            if self.process.poll() is None:
                _stop(self.process)
            if not self.enabled:
                say(f"warning: perf did not record: {self._perf_error()}")
                return
            data = self.workdir / "perf.data"
            if not data.exists():
                say(f"warning: perf wrote no perf.data: {self._perf_error()}")
                return
            _, parsed = read_perf_data(data, self.perf)
            say(summary_line(parsed, store_samples(output, parsed)))
        except (TraceError, UsageError) as error:
            say(f"warning: perf's samples were not stored: {error}")
        finally:
            if self.errors is not None:
                self.errors.close()
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def _perf_error(self) -> str:
        if self.errors is None:
            return self.failure or "it did not start"
        self.errors.seek(0)
        return _first_line(self.errors.read().decode("utf-8", "replace"))


def _enable(process: subprocess.Popen, ctl: Path, ack: Path,
            wait_s: float = ENABLE_WAIT_S) -> bool:
    """Send perf `enable` on its control FIFO and wait for its `ack`: True once perf samples.
    False when perf exits first or does not answer within wait_s."""
    deadline = time.monotonic() + wait_s
    fd = -1
    while fd < 0:                      # perf opens the FIFO's read end once it is set up
        try:
            fd = os.open(ctl, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                return False
            time.sleep(0.005)
    answer = os.open(ack, os.O_RDONLY | os.O_NONBLOCK)
    try:
        os.write(fd, b"enable\n")
        got = b""
        while b"ack" not in got:
            if process.poll() is not None or time.monotonic() > deadline:
                return False
            ready, _, _ = select.select([answer], [], [], 0.05)
            if ready:
                got += os.read(answer, 64)
        return True
    finally:
        os.close(fd)
        os.close(answer)


def _open_gate(gate: Path, pid: int) -> None:
    """Let the gated program go: one line into the FIFO its shell reads (once the shell has
    opened it; nothing to do when the process is gone)."""
    while True:
        try:
            fd = os.open(gate, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError:               # ENXIO: the shell has not opened its end yet
            try:
                os.kill(pid, 0)
            except OSError:
                return
            time.sleep(0.002)
    try:
        os.write(fd, b"go\n")
    finally:
        os.close(fd)


def _stop(process: subprocess.Popen) -> None:
    """perf -p ends by itself when its target has exited; SIGINT, then SIGKILL, if not."""
    for signum in (None, signal.SIGINT, signal.SIGKILL):
        if signum is not None:
            process.send_signal(signum)
        try:
            process.wait(timeout=STOP_WAIT_S)
            return
        except subprocess.TimeoutExpired:
            continue
