"""perf as a source (`objtier record --with-perf`, objtier.record.perf_source): the program runs
under the real perf (Debian's linux-perf), its samples are read back with `perf script` and
stored as perf-<pid>.otr, and the real reader maps them onto the objects.

The software-event tests run perf for real. PEBS fields (data_src, weight) cannot be recorded
on a machine without a hardware PMU: PEBS_LINES below is written by hand in perf script's
field layout (perf 6.1, `perf script --ns -F pid,tid,time,event,addr,period,data_src,weight`,
the layout a real perf.data of software events prints in the first tests here), with data_src
values built from the bit fields of linux/perf_event.h; it is labelled as such wherever used.
"""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys

import numpy as np
import pytest

from objtier.record import perf_source as P
from objtier.trace import format as F
from objtier.trace import open_trace

pytestmark = pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")

# Two arrays from two sites, every page of each written once (first touches): 32 and 8 MiB.
PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) static char *big(size_t n) { return malloc(n); }
__attribute__((noinline)) static char *small(size_t n) { return malloc(n); }
int main(void) {
    size_t n = 32u << 20, m = 8u << 20;
    char *a = big(n), *b = small(m);
    memset(a, 1, n);
    memset(b, 2, m);
    long s = 0;
    for (size_t i = 0; i < n; i += 4096) s += a[i];
    for (size_t i = 0; i < m; i += 4096) s += b[i];
    printf("sum %ld\n", s);
    free(b);
    return 5;
}
"""


def record(*args, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "objtier", "record", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def perf_permits_faults() -> bool:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run(["perf", "record", "-q", "-o", f"{tmp}/perf.data", "-e",
                              "page-faults", "--", "true"], capture_output=True, text=True)
    return run.returncode == 0


@pytest.fixture
def two_arrays(compile_c):
    if not perf_permits_faults():
        pytest.skip("perf record -e page-faults is not permitted here")
    return compile_c(PROGRAM, "two_arrays")


def objects_by_size(trace):
    from objtier.analysis.objects import object_table

    table = object_table(trace, labels=False)
    sizes = table.column("size").to_pylist()
    return {size: row for row, size in enumerate(sizes)}, table


def test_page_faults_land_on_the_objects_that_took_them(two_arrays, tmp_path):
    out = tmp_path / "run.otr"
    run = record("-o", out, "--sampler", "none", "--with-perf", "page-faults", "--",
                 two_arrays)
    assert run.returncode == 5, run.stderr            # the program's exit status
    assert run.stdout.strip() == f"sum {(32 << 8) + 2 * (8 << 8)}"   # and its output
    assert "perf records page-faults" in run.stderr

    trace = open_trace(out)
    pid = trace.processes[0].pid
    perf_file = out / f"perf-{pid}.otr"
    assert stat.S_IMODE(perf_file.stat().st_mode) == 0o600
    assert [int(f.header["kind"]) for f in trace.files if f.path == perf_file] == [F.FILE_PERF]
    assert trace.runtime_samples.num_rows == 0           # --sampler none: the runtime's none
    samples = trace.samples
    assert samples.num_rows == trace.perf_samples.num_rows > 0
    flags = samples.column("flags").to_numpy()
    assert np.all(flags & F.SAMPLE_PERF)
    assert set(samples.column("source").to_pylist()) == {4}          # perf-swfault
    assert set(samples.column("pid").to_pylist()) == {pid}

    rows, table = objects_by_size(trace)
    counts = table.column("samples").to_numpy()
    big, small = counts[rows[32 << 20]], counts[rows[8 << 20]]
    # one fault per first-touched 4 KiB page (THP is not used for these mallocs unless
    # the machine forces it: then both shrink alike)
    assert big > 0 and small > 0
    assert 3.0 <= big / small <= 5.0, (big, small)
    thp = open("/sys/kernel/mm/transparent_hugepage/enabled").read()
    if "[always]" not in thp:
        assert big >= 0.95 * (32 << 8) and small >= 0.95 * (8 << 8), (big, small)


def test_samples_are_ordered_and_on_the_clock_of_the_objects(two_arrays, tmp_path):
    from objtier.analysis.mapping import sample_objects

    out = tmp_path / "run.otr"
    assert record("-q", "-o", out, "--sampler", "none", "--with-perf", "minor-faults", "--",
                  two_arrays).returncode == 5
    trace = open_trace(out)
    times = trace.samples.column("time_ns").to_numpy()
    assert np.all(np.diff(times.astype(np.int64)) >= 0)
    mapped = sample_objects(trace)
    assert (mapped >= 0).mean() > 0.9            # the arrays take nearly every fault
    # perf's clock is CLOCK_MONOTONIC, the runtime's: the samples inside an array's address
    # range after its allocation map to it; the few before it (the loader's and runtime's
    # earlier mappings at those addresses) map to nothing
    addr = trace.samples.column("addr").to_numpy()
    allocs = trace.allocations
    for row, (base, size, born) in enumerate(zip(*(allocs.column(c).to_pylist()
                                                   for c in ("addr", "size", "time_ns")))):
        inside = (addr >= base) & (addr < base + size)
        after = inside & (times >= born)
        assert after.sum() >= 0.99 * inside.sum() > 0
        assert np.all(mapped[after] == row) and np.all(mapped[inside & ~after] < 0)


@pytest.mark.root
def test_major_faults_beside_pageout_are_the_runtimes_own_faults(two_arrays, hotcold,
                                                                  tmp_path):
    """The default on a machine without perf mem: perf records major faults, which under the
    pageout sampler are the re-faults of the pages it pushed to swap."""
    mem, _ = P.perf_mem_support(shutil.which("perf"))
    if mem:
        pytest.skip("perf mem works here: --with-perf uses it instead of major faults")
    out = tmp_path / "run.otr"
    run = record("-o", out, "--with-perf", "--", hotcold, "16", "32", "6")
    assert run.returncode == 0, run.stderr
    notes = [line for line in run.stderr.splitlines() if "perf mem is unavailable" in line]
    assert len(notes) == 1 and "major-faults" in notes[0]
    trace = open_trace(out)
    ours, theirs = trace.perf_samples, trace.runtime_samples
    assert theirs.num_rows > 50 and ours.num_rows > 50
    assert np.all(ours.column("flags").to_numpy() & F.SAMPLE_MAJOR)
    assert set(ours.column("level").to_pylist()) == {9}               # swap
    # every page the runtime saw re-fault, perf saw re-fault too (same pid, same page)
    shift = np.uint64(12)
    pages_runtime = set((theirs.column("addr").to_numpy() >> shift).tolist())
    pages_perf = set((ours.column("addr").to_numpy() >> shift).tolist())
    assert len(pages_runtime & pages_perf) >= 0.9 * len(pages_runtime)


def test_perf_mem_unavailable_is_one_line(two_arrays, tmp_path):
    mem, why = P.perf_mem_support(shutil.which("perf"))
    if mem:
        pytest.skip(f"perf mem works here ({why})")
    run = record("-o", tmp_path / "run.otr", "--with-perf", "mem", "--", two_arrays)
    assert run.returncode == 4
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "perf mem is unavailable" in lines[0], run.stderr
    assert not (tmp_path / "run.otr").exists()


def test_a_bad_event_name_is_refused(two_arrays, tmp_path):
    run = record("-o", tmp_path / "run.otr", "--sampler", "none", "--with-perf", "a b;c", "--",
                 two_arrays)
    assert run.returncode == 2 and "not a perf event name" in run.stderr


# --- perf script's layout ----------------------------------------------------------------

def test_a_real_perf_data_with_data_src_and_weight_fields(two_arrays, tmp_path):
    """perf itself writes the fixture: -d -W on a software event records DATA_SRC and
    WEIGHT_STRUCT (perf script prints them; the kernel fills 'not available' for software
    events), so the parser runs on the full field list perf mem recordings use."""
    data = tmp_path / "perf.data"
    subprocess.run(["perf", "record", "-q", "-d", "-W", "-k", "CLOCK_MONOTONIC", "-c", "1",
                    "-e", "page-faults", "-o", str(data), "--", str(two_arrays)],
                   check=False, capture_output=True)
    header, parsed = P.read_perf_data(data)
    assert header.monotonic
    assert header.fields() == (*P.BASE_FIELDS, "data_src", "weight")
    assert {"ADDR", "DATA_SRC", "WEIGHT_STRUCT"} <= header.events["page-faults"]
    assert parsed.bad_lines == 0 and len(parsed.records) > (40 << 8) * 0.9
    records = parsed.records
    assert np.all(records["level"] == 0) and np.all(records["tlb"] == 0)   # N/A
    assert np.all(records["weight"] == 1) and np.all(records["latency"] == 0)
    assert np.all(records["flags"] == F.SAMPLE_PERF)


def data_src(op=0, lvl=0, snoop=1, lock=1, dtlb=0, lvl_num=0, remote=0) -> int:
    """A perf_mem_data_src value from its linux/perf_event.h bit fields."""
    return (op | lvl << 5 | snoop << 19 | lock << 24 | dtlb << 26 | lvl_num << 33
            | remote << 37)


LOAD, STORE = 0x2, 0x4
HIT, MISS, L1, L3, LOC_RAM = 0x2, 0x4, 0x8, 0x40, 0x80
TLB_HIT, TLB_MISS, TLB_L1 = 0x2, 0x4, 0x8
CASES = [  # (data_src, level, tlb, flags): hand-written, perf 6.1's perf script layout
    (data_src(LOAD, HIT | L1, dtlb=TLB_HIT | TLB_L1, lvl_num=0x1), 1, 1, F.SAMPLE_RW_KNOWN),
    (data_src(LOAD, HIT | L3, dtlb=TLB_HIT, lvl_num=0x3), 4, 1, F.SAMPLE_RW_KNOWN),
    (data_src(LOAD, HIT | LOC_RAM, dtlb=TLB_MISS, lvl_num=0xD), 5, 2, F.SAMPLE_RW_KNOWN),
    (data_src(LOAD, HIT, lvl_num=0xD, remote=1), 6, 0, F.SAMPLE_RW_KNOWN),
    (data_src(LOAD, HIT, lvl_num=0x9), 8, 0, F.SAMPLE_RW_KNOWN),                   # CXL
    (data_src(STORE, HIT | L1, dtlb=TLB_HIT), 1, 1, F.SAMPLE_WRITE | F.SAMPLE_RW_KNOWN),
    (0x68100142, 1, 1, F.SAMPLE_RW_KNOWN),   # perf-mem(1)'s example: legacy L1 hit, no lvl_num
]


def pebs_lines(pid: int, base_ns: int, addresses: list[int]) -> list[str]:
    """Hand-written, labelled: perf script lines of mem-loads samples in perf 6.1's layout
    ("PID/TID SEC.NSEC: PERIOD EVENT: ADDR DATA_SRC |decoded| WEIGHT"), one per CASES entry
    and address; the decoded text is perf's kind (spaces inside) and is not read."""
    out = []
    for i, address in enumerate(addresses):
        value, _, _, _ = CASES[i % len(CASES)]
        t = base_ns + 1000 * i
        out.append(f"{pid:>7}/{pid:<7} {t // 10**9}.{t % 10**9:09d}:      10007 "
                   f"cpu/mem-loads,ldlat=30/P:     {address:16x} {value:16x} |OP LOAD|LVL L1 "
                   f"hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A                 {37 + i}")
    return out


def test_pebs_fields_decode_as_the_runtimes_perf_sampler(tmp_path):
    for value, level, tlb, flags in CASES:
        assert P.decode_data_src(value) == (level, tlb, flags), hex(value)
    fields = (*P.BASE_FIELDS, "data_src", "weight")
    parsed = P.parse_script(pebs_lines(77, 5 * 10**9, [0x7F0000001040 + 64 * i
                                                      for i in range(len(CASES))]), fields)
    records = parsed.records
    assert parsed.bad_lines == 0 and len(records) == len(CASES)
    assert records["level"].tolist() == [c[1] for c in CASES]
    assert records["tlb"].tolist() == [c[2] for c in CASES]
    assert (records["flags"] ^ F.SAMPLE_PERF).tolist() == [c[3] for c in CASES]
    assert records["latency"].tolist() == [37 + i for i in range(len(CASES))]   # cycles
    assert set(records["weight"].tolist()) == {10007}                           # the period
    assert set(records["source"].tolist()) == {2}                               # PEBS
    assert records["time_ns"][0] == 5 * 10**9 and parsed.pids.tolist() == [77] * len(CASES)


def test_pebs_samples_reach_the_objects_table_of_a_real_recording(two_arrays, tmp_path):
    """A real recording's objects, with hand-written (labelled) PEBS lines at addresses inside
    them: the stored samples are read back by the real reader and counted per object and
    memory level."""
    out = tmp_path / "run.otr"
    assert record("-q", "-o", out, "--sampler", "none", "--", two_arrays).returncode == 5
    trace = open_trace(out)
    allocs = trace.allocations
    pid = trace.processes[0].pid
    addr = dict(zip(allocs.column("size").to_pylist(), allocs.column("addr").to_pylist()))
    alloc_ns = max(allocs.column("time_ns").to_pylist())
    big = [addr[32 << 20] + 4096 * i for i in range(len(CASES) * 3)]
    small = [addr[8 << 20] + 4096 * i for i in range(len(CASES))]
    lines = pebs_lines(pid, alloc_ns + 1000, big + small)
    parsed = P.parse_script(lines, (*P.BASE_FIELDS, "data_src", "weight"))
    assert P.store_samples(out, parsed) == {pid: len(big) + len(small)}

    rows, table = objects_by_size(open_trace(out))
    b, s = rows[32 << 20], rows[8 << 20]
    assert table.column("samples").to_pylist()[b] == len(big)
    assert table.column("samples").to_pylist()[s] == len(small)
    assert table.column("accesses").to_pylist()[b] == 10007 * len(big)   # weights = periods
    # per CASES cycle: L1, L3, L1 (store) in cache (+ the legacy L1), DRAM, remote DRAM, CXL
    cache = table.column("cache_samples").to_pylist()
    assert cache[b] == 3 * 4 and cache[s] == 4
    assert table.column("mean_latency").to_pylist()[s] == pytest.approx(
        np.mean([37 + len(big) + i for i in range(len(small))]))


def test_samples_of_other_processes_are_left_out(two_arrays, tmp_path):
    out = tmp_path / "run.otr"
    assert record("-q", "-o", out, "--sampler", "none", "--", two_arrays).returncode == 5
    pid = open_trace(out).processes[0].pid
    lines = pebs_lines(pid + 1, 10**9, [0x1000, 0x2000])
    parsed = P.parse_script(lines, (*P.BASE_FIELDS, "data_src", "weight"))
    assert P.store_samples(out, parsed) == {}
    assert not list(out.glob("perf-*.otr"))
    assert "2 from processes the recording does not hold" in P.summary_line(parsed, {})


def test_a_recording_without_perf_files_reads_as_before():
    from pathlib import Path

    fixture = Path(__file__).resolve().parent.parent / "fixtures" / "traces" / "basic.otr"
    trace = open_trace(fixture)
    assert trace.perf_samples.num_rows == 0
    assert trace.samples.num_rows == trace.runtime_samples.num_rows


# Waits for SIGINT or SIGTERM (up to 20 s) after saying it is ready; exits 7 with the signal.
WAITER = r"""
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
static volatile sig_atomic_t got;
static void on(int s) { got = s; }
int main(void) {
    signal(SIGINT, on);
    signal(SIGTERM, on);
    puts("ready");
    fflush(stdout);
    for (int i = 0; i < 400 && !got; i++) usleep(50000);
    printf("got %d\n", (int)got);
    return got ? 7 : 0;
}
"""


def test_ctrl_c_reaches_the_program_not_perf(compile_c, tmp_path):
    """perf is attached from its own session: SIGINT to record reaches the program (as
    without perf), whose handler and exit status are its own."""
    if not perf_permits_faults():
        pytest.skip("perf record -e page-faults is not permitted here")
    waiter = compile_c(WAITER, "waiter")
    proc = subprocess.Popen([sys.executable, "-m", "objtier", "record", "-q", "-o",
                             str(tmp_path / "run.otr"), "--sampler", "none", "--with-perf",
                             "page-faults", "--", str(waiter)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"     # the program runs: perf is attached
    proc.send_signal(2)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 7, err
    assert out.strip() == "got 2"                          # SIGINT, not perf's SIGTERM
    assert list((tmp_path / "run.otr").glob("perf-*.otr"))


def test_an_event_perf_refuses_leaves_the_run_as_it_was(two_arrays, tmp_path):
    out = tmp_path / "run.otr"
    run = record("-o", out, "--sampler", "none", "--with-perf", "no-such-event", "--",
                 two_arrays)
    assert run.returncode == 5 and run.stdout.startswith("sum ")
    warnings = [line for line in run.stderr.splitlines() if "perf did not record" in line]
    assert len(warnings) == 1, run.stderr
    trace = open_trace(out)
    assert not list(out.glob("perf-*.otr")) and trace.allocations.num_rows == 2
