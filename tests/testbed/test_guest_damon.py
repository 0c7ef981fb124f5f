"""In the guest (a kernel with DAMON vaddr and no kdamond running): `objtier record --sampler
damon` monitors the program with a real kdamond, ranks a hot, a warm and a cold array in that
order by DAMON's estimated accesses, leaves the program's output and exit status as they are,
and removes its kdamond afterwards (nr_kdamonds back to 0). The regions come from DAMON's
damon_aggregated tracepoint (record.damon_trace), whose tracefs instance is removed too."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from objtier.analysis.objects import object_table
from objtier.testbed.paths import repo_root
from objtier.trace import format as F
from objtier.trace import open_trace

from .guest_helpers import guest_read

pytestmark = pytest.mark.guest

PROG = Path(__file__).with_name("progs") / "damon_hotcold.c"
NR_KDAMONDS = "/sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds"
TRACEFS = "/sys/kernel/debug/tracing"   # under the guest's debugfs (guest_init.sh)


def test_damon_source_ranks_hot_warm_cold(testbed):
    run = testbed.paths.run / "damon"
    run.mkdir(parents=True, exist_ok=True)
    exe = run / "hotcold"
    subprocess.run(["gcc", "-O1", "-o", str(exe), str(PROG)], check=True)
    assert guest_read(testbed, NR_KDAMONDS) == "0"
    rc, plain, err = testbed.run([str(exe), "0.2"], timeout=120)
    assert rc == 0, err
    rec = run / "damon.otr"
    objtier = repo_root() / ".venv" / "bin" / "objtier"
    rc, out, err = testbed.run([str(objtier), "record", "-f", "--sampler", "damon", "-o",
                                str(rec), "--", str(exe), "4"], timeout=400)
    assert rc == 0, err
    assert out.startswith("passes ") and plain.startswith("passes "), (out, plain)
    assert "DAMON:" in err and "Traceback" not in err, err
    assert guest_read(testbed, NR_KDAMONDS) == "0"          # objtier's kdamond is gone
    # the guest mounts debugfs, so tracefs has damon_aggregated: every aggregation is read
    # from it, through an instance of objtier's own that is gone afterwards
    assert "aggregations (tracepoint)" in err, err
    rc, left, _ = testbed.run(["ls", f"{TRACEFS}/instances"])
    assert rc == 0 and "objtier-" not in left, left

    trace = open_trace(rec)
    samples = trace.samples
    assert samples.num_rows > 0
    assert set(samples.column("source").to_pylist()) == {F.SOURCE_DAMON}
    table = object_table(trace, labels=False).sort_by("seq")   # hot, warm, cold (alloc order)
    hot, warm, cold = table.column("accesses").to_pylist()
    assert hot > warm > cold, (hot, warm, cold)


def test_a_real_damo_record_imports_onto_the_recording(testbed):
    """damo itself (PyPI damo, from the venv) records the program with a kdamond of its own,
    through DAMON's tracepoint and the guest's perf, while objtier records its objects
    (--sampler none); import-damo maps damo's snapshots (perf's clock, taken as
    CLOCK_MONOTONIC) onto the objects, and hot ranks above cold. (damo 3.4.3's --snapshot
    mode dies writing its file on this kernel: a region without sz_filter_passed.)"""
    run = testbed.paths.run / "damo"
    run.mkdir(parents=True, exist_ok=True)
    exe = run / "hotcold"
    subprocess.run(["gcc", "-O1", "-o", str(exe), str(PROG)], check=True)
    assert guest_read(testbed, NR_KDAMONDS) == "0"
    venv = repo_root() / ".venv" / "bin"
    rec, data = run / "run.otr", run / "damon.data"
    # damo looks for tracefs at its own mount point; the guest mounts only debugfs
    tracing = "/sys/kernel/tracing"
    script = (f"rm -rf {rec} {data}; mounted=; mountpoint -q {tracing} || "
              f"{{ mount -t tracefs nodev {tracing} && mounted=1; }}; "
              f"{venv}/objtier record -f --sampler none -o {rec} -- {exe} 4 > {run}/out & "
              f"for i in $(seq 100); do pid=$(pidof hotcold) && break; sleep 0.05; done; "
              f"{venv}/damo record -o {data} $pid > {run}/damo.log 2>&1; "
              f"echo damo=$?; wait; echo objtier=$?; [ -z \"$mounted\" ] || umount {tracing}")
    rc, out, err = testbed.run(script, timeout=400)
    damo_log = (run / "damo.log").read_text() if (run / "damo.log").exists() else ""
    if "damo=0" not in out:
        # damo leaves the kdamond it set up in place when it cannot turn it on; the guest's
        # later tests (the DAMON arms) refuse a DAMON sysfs with kdamonds set up, so the
        # test removes what damo left, and only a kdamond that is off
        _remove_stopped_kdamonds(testbed)
    assert rc == 0 and "objtier=0" in out, (out, err)
    if "damo=0" not in out and "could not turn DAMON on" in damo_log:
        # damo 3.4.3 on the guest's 6.12 kernel: writing `on` to the kdamond's state fails
        # with EINVAL for most targets (2026-12-03: hotcold, cyclic and a shell's sleep; a
        # sleep started with it succeeded twice); damo's own failure, not the import's
        assert guest_read(testbed, NR_KDAMONDS) == "0"
        pytest.skip(f"damo could not start DAMON here: {damo_log.strip().splitlines()[-1]}")
    assert "damo=0" in out, (out, damo_log)
    assert (run / "out").read_text().startswith("passes ")
    assert guest_read(testbed, NR_KDAMONDS) == "0"          # damo stopped its kdamond
    rc, out, err = testbed.run([str(venv / "objtier"), "import-damo", str(data), "--objects",
                                str(rec)], timeout=120)
    assert rc == 0, err
    assert "CLOCK_MONOTONIC" in err, err
    trace = open_trace(rec)
    assert set(trace.samples.column("source").to_pylist()) == {F.SOURCE_DAMON}
    hot, warm, cold = (object_table(trace, labels=False).sort_by("seq")
                       .column("accesses").to_pylist())
    assert hot > cold, (hot, warm, cold)


def _remove_stopped_kdamonds(testbed) -> None:
    """nr_kdamonds back to 0 when every kdamond set up is off (writing 0 fails while one runs:
    EBUSY, which the caller's later assertion then shows)."""
    count = int(guest_read(testbed, NR_KDAMONDS))
    admin = NR_KDAMONDS.rsplit("/", 1)[0]
    states = [guest_read(testbed, f"{admin}/{i}/state") for i in range(count)]
    if count and all(state == "off" for state in states):
        rc, _, err = testbed.run(f"echo 0 > {NR_KDAMONDS}")
        assert rc == 0, err
