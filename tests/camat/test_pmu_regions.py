"""--source pmu --regions: counters read at the phase markers by the real runtime.

This machine has no hardware PMU, so the runtime path is run with *software* counting events
(page faults, context switches: the same perf_event_open groups, reads and records), and with
the raw Intel events up to the point where perf_event_open refuses them. The per-region C-AMAT
arithmetic runs on a recorded-counter fixture written with the real trace writer and read back
with the real reader."""

from __future__ import annotations

import ctypes
import json
import os
import struct
import subprocess
from pathlib import Path

import pytest

from objtier import native
from objtier.camat import pmu, pmu_regions
from objtier.errors import EnvironmentProblem
from objtier.trace import open_trace

PAGES = 3000
# Phase "touch" faults in PAGES fresh pages; phase "compute" only does arithmetic; a second
# thread enters "touch" as well (so per-thread groups are summed), then the main thread ends
# its phase. Prints a checksum and exits 7 (the status must survive).
PROGRAM = r"""
#define _GNU_SOURCE
#include <objtier/phase.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#define PAGES %d
static long touch(void)
{
    char *p = mmap(NULL, (size_t)PAGES * 4096, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    long s = 0;
    for (long i = 0; i < PAGES; i++) { p[i * 4096] = (char)i; s += p[i * 4096]; }
    munmap(p, (size_t)PAGES * 4096);
    return s;
}
static void *worker(void *arg)
{
    objtier_phase("touch");
    *(long *)arg = touch();
    objtier_phase_end();
    return NULL;
}
int main(void)
{
    objtier_phase("compute");
    volatile double x = 1;
    for (int i = 0; i < 2000000; i++) x = x * 1.0000001 + 1e-9;
    objtier_phase("touch");
    long s = touch();
    long t = 0;
    pthread_t th;
    pthread_create(&th, NULL, worker, &t);
    pthread_join(th, NULL);
    objtier_phase("compute");
    for (int i = 0; i < 2000000; i++) x = x * 1.0000001 + 1e-9;
    objtier_phase_end();
    printf("sum %%ld %%ld\n", s, t);
    return 7;
}
""" % PAGES

PERF_TYPE_SOFTWARE = 1
SW_PAGE_FAULTS, SW_CONTEXT_SWITCHES, SW_TASK_CLOCK = 2, 3, 1


def _software_counters_work() -> bool:
    """perf_event_open of a software event on this process (the runtime's call)."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = struct.pack("<IIQQQQQ", PERF_TYPE_SOFTWARE, 128, SW_PAGE_FAULTS, 0, 0, 0, 1 << 5)
    attr += bytes(128 - len(attr))
    buf = ctypes.create_string_buffer(attr, len(attr))
    fd = libc.syscall(298, buf, 0, -1, -1, 8)
    if fd < 0:
        return False
    os.close(fd)
    return True


needs_sw_perf = pytest.mark.skipif(os.uname().machine != "x86_64" or not _software_counters_work(),
                                   reason="perf_event_open of software events is not permitted")


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("pmu_regions")
    src = d / "phases.c"
    src.write_text(PROGRAM)
    exe = d / "phases"
    subprocess.run(["gcc", "-O1", "-I", str(native.include_dir()), "-o", str(exe), str(src),
                    "-lpthread"], check=True)
    return exe


def _run(exe: Path, out: Path, spec: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBJTIER_")}
    env.update(LD_PRELOAD=str(native.runtime_library()), OBJTIER_OUTPUT=str(out),
               OBJTIER_SAMPLER="none")
    if spec is not None:
        env["OBJTIER_REGION_PMU"] = spec
    return subprocess.run([str(exe)], env=env, capture_output=True, text=True, timeout=120)


def test_region_spec_lists_the_family_events_in_group_order():
    events = pmu.events_for("intel-skylake")
    spec = pmu_regions.region_spec(events)
    parts = spec.split(",")
    assert parts[0] == f"loads=4:{0xD0 | 0x81 << 8:#x}"
    assert [p.split("=")[0] for p in parts] == list(events)


@needs_sw_perf
def test_software_counters_per_region_on_the_real_runtime(program, tmp_path):
    plain = subprocess.run([str(program)], capture_output=True, text=True, timeout=120)
    spec = (f"faults={PERF_TYPE_SOFTWARE}:{SW_PAGE_FAULTS},"
            f"switches={PERF_TYPE_SOFTWARE}:{SW_CONTEXT_SWITCHES},"
            f"clock={PERF_TYPE_SOFTWARE}:{SW_TASK_CLOCK}")
    run = _run(program, tmp_path / "t", spec)
    assert (run.returncode, run.stdout) == (plain.returncode, plain.stdout) == (7, run.stdout)
    events = {t: pmu.Event(t, c, PERF_TYPE_SOFTWARE) for t, c in
              (("faults", SW_PAGE_FAULTS), ("switches", SW_CONTEXT_SWITCHES),
               ("clock", SW_TASK_CLOCK))}
    counts = pmu_regions.region_counts(open_trace(tmp_path / "t"), events)
    # after the main thread's objtier_phase_end: outside phases, read at exit
    assert set(counts) == {"touch", "compute", pmu_regions.OUTSIDE}, counts
    # both threads' faults in "touch": two rounds of PAGES fresh pages
    assert 2 * PAGES <= counts["touch"]["faults"] < 2 * PAGES + 500
    assert counts["compute"]["faults"] < 200
    # the compute phase ran ~4 M dependent multiply-adds: it has task-clock, more than touch's
    assert counts["compute"]["clock"] > 0 and counts["touch"]["clock"] > 0


# After its first marker, the program closes the runtime's perf fds and puts a pipe of its own at
# the leader's number; later markers must not read from (or close) that pipe.
STEAL = r"""
#define _GNU_SOURCE
#include <dirent.h>
#include <objtier/phase.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
    objtier_phase("first");
    int fds[16], n = 0;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while ((e = readdir(d)) && n < 16) {
        char path[64], link[64] = {0};
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        if (readlink(path, link, sizeof link - 1) > 0 && strstr(link, "perf_event"))
            fds[n++] = atoi(e->d_name);
    }
    closedir(d);
    for (int i = 0; i < n; i++)
        close(fds[i]);
    int p[2];
    if (n == 0 || pipe(p) != 0 || dup2(p[0], fds[0]) < 0)
        return 2;
    if (write(p[1], "program data", 12) != 12)
        return 3;
    objtier_phase("second");
    objtier_phase_end();
    char buf[32] = {0};
    ssize_t got = read(fds[0], buf, sizeof buf - 1);
    printf("perf fds %d, read back %zd: %s\n", n, got, buf);
    return 0;
}
"""


@needs_sw_perf
def test_a_program_that_reuses_the_counter_fd_keeps_its_data(tmp_path):
    src = tmp_path / "steal.c"
    src.write_text(STEAL)
    exe = tmp_path / "steal"
    subprocess.run(["gcc", "-O1", "-I", str(native.include_dir()), "-o", str(exe), str(src)],
                   check=True)
    run = _run(exe, tmp_path / "t", f"faults={PERF_TYPE_SOFTWARE}:{SW_PAGE_FAULTS}")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "read back 12: program data" in run.stdout


def test_raw_events_refused_by_perf_event_open_leave_the_program_alone(program, tmp_path):
    """The hardware events this machine lacks: the runtime records the refusal, the program's
    output and status are its own, and the analysis names the event in one line."""
    plain = subprocess.run([str(program)], capture_output=True, text=True, timeout=120)
    events = pmu.events_for("intel-skylake")
    run = _run(program, tmp_path / "t", pmu_regions.region_spec(events))
    assert (run.returncode, run.stdout) == (plain.returncode, plain.stdout)
    trace = open_trace(tmp_path / "t")
    if not any(n.startswith("camat.pmu.refused.")
               for n in trace.counters.column("name").to_pylist()):
        pytest.skip("this machine accepts raw Intel events: it has a PMU")
    with pytest.raises(EnvironmentProblem) as err:
        pmu_regions.region_counts(trace, events)
    assert "MEM_INST_RETIRED.ALL_LOADS" in str(err.value) and "\n" not in str(err.value)


def test_bad_spec_is_ignored_with_a_warning_and_the_program_unchanged(program, tmp_path):
    run = _run(program, tmp_path / "t", "loads=4")
    assert run.returncode == 7
    assert "OBJTIER_REGION_PMU" in run.stderr
    assert not [n for n in open_trace(tmp_path / "t").counters.column("name").to_pylist()
                if n.startswith("camat.pmu.")]


FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "pmu_regions_skylake.json")
                     .read_text())


def _write_fixture_trace(where: Path) -> None:
    """The fixture's per-boundary readings as the runtime writes them: NAME records for the
    phases, COUNTER_DEF + cumulative COUNTERS per (term, phase)."""
    from objtier.trace.writer import TraceWriter

    terms = list(pmu.events_for(FIXTURE["family"]))
    where.mkdir()
    ids: dict[tuple[int, str], int] = {}
    totals: dict[tuple[int, str], int] = {}
    with TraceWriter(where / "proc-4242.otr", pid=4242) as w:
        for phase_id, name in FIXTURE["phases"].items():
            w.name(int(phase_id), name)
        for step, (phase, deltas) in enumerate(FIXTURE["boundaries"]):
            for term, delta in zip(terms, deltas):
                key = (phase, term)
                if key not in ids:
                    ids[key] = len(ids) + 1
                    w.counter_def(ids[key], f"camat.pmu.{term}.phase.{phase}", "events")
                totals[key] = totals.get(key, 0) + delta
                w.counter(1000 + step, ids[key], totals[key])


def test_recorded_counter_fixture_gives_the_seed_terms_per_region(tmp_path):
    _write_fixture_trace(tmp_path / "run.otr")
    events = pmu.events_for(FIXTURE["family"])
    counts = pmu_regions.region_counts(open_trace(tmp_path / "run.otr"), events)
    rows = {r["region"]: r for r in pmu_regions.region_rows(counts, list(events))}
    assert set(rows) == set(FIXTURE["expected"])
    for region, want in FIXTURE["expected"].items():
        got = rows[region]
        assert got["accesses"] == want["accesses"]
        assert got["camat"] == pytest.approx(want["camat_l1"])
        assert got["C_M"] == pytest.approx(want["C_M_l1"])
        assert got["kappa"] == pytest.approx(want["kappa_l1"])
        assert got["apc"] * got["camat"] == pytest.approx(1.0)


def test_region_rows_go_through_the_report_outputs(tmp_path):
    """The per-region PMU rows in camat.json, the CSV/Parquet tables, the HTML page and the
    terminal table (as `objtier camat --source pmu --regions -o DIR` writes them)."""
    import io

    from rich.console import Console

    from objtier.camat.output import print_tables, write_outputs

    _write_fixture_trace(tmp_path / "run.otr")
    events = pmu.events_for(FIXTURE["family"])
    rows = pmu_regions.region_rows(
        pmu_regions.region_counts(open_trace(tmp_path / "run.otr"), events), list(events))
    whole = {term: sum(r["raw_counts"][term] for r in rows) for term in events}
    doc = {"tool": "objtier camat", **pmu.pmu_report(whole, FIXTURE["family"], events)}
    doc["regions"] = rows
    paths = write_outputs(doc, tmp_path / "out")
    written = json.loads((tmp_path / "out" / "camat.json").read_text())
    assert [r["region"] for r in written["regions"]] == [r["region"] for r in rows]
    assert (tmp_path / "out" / "camat-regions.csv").read_text().count("\n") == 2 * len(rows) + 1
    assert all(oct(p.stat().st_mode & 0o777) == "0o600" for p in paths)
    buf = io.StringIO()
    print_tables(doc, Console(file=buf, width=200), regions=True)
    assert "update_centers_len" in buf.getvalue()
