"""The DAMON source (`record --sampler damon`): region snapshots turned into samples, and the
one-line refusal where DAMON cannot be used (no vaddr operations, or a kdamond that is not
objtier's). The guest test (tests/testbed/test_guest_damon.py) runs it against a real DAMON."""

from __future__ import annotations

import subprocess

import numpy as np

from objtier.record.damon_source import (ADMIN, PAGE_BYTES, DamonMonitor, Snapshot, _running,
                                         samples_of, unavailable)
from objtier.trace import format as F

from tests.cli.helpers import OBJTIER


def snapshot(time_ns, regions):
    table = np.array(regions, dtype=np.uint64).reshape(-1, 4)
    return Snapshot(time_ns=time_ns, start=table[:, 0], end=table[:, 1],
                    nr_accesses=table[:, 2].astype(np.uint32), age=table[:, 3].astype(np.uint32))


def test_regions_become_weighted_samples_inside_them():
    base = 0x7F0000000000
    snaps = [snapshot(2_000, [(base, base + (200 << 10), 5, 1),            # 200 KiB, hot
                              (base + (200 << 10), base + (1 << 20), 0, 9)]),  # never accessed
             snapshot(1_000, [(base, base + (8 << 10), 20, 0)])]          # 8 KiB, every check
    records = samples_of(snaps, tid=42, chunk_bytes=64 << 10)
    assert records.dtype == F.SAMPLE
    assert records["time_ns"].tolist() == [1_000] + [2_000] * 4        # sorted by time
    assert (records["source"] == F.SOURCE_DAMON).all() and (records["tid"] == 42).all()
    later = records[records["time_ns"] == 2_000]
    # 200 KiB in 64 KiB chunks: 3 full and one of 8 KiB, each sample inside its chunk
    assert (later["addr"] >= base).all() and (later["addr"] < base + (200 << 10)).all()
    assert later["weight"].tolist() == [5 * 16, 5 * 16, 5 * 16, 5 * (8 << 10) // PAGE_BYTES]
    assert records[0]["weight"] == 20 * 2
    assert len(np.unique(later["addr"])) == 4


def test_no_accessed_region_gives_no_sample():
    assert len(samples_of([snapshot(1, [(0x1000, 0x9000, 0, 3)])], tid=1)) == 0
    assert len(samples_of([], tid=1)) == 0


def test_a_listing_reads_every_tried_region_as_the_sysfs_tree_lays_it_out(tmp_path):
    """read_regions against a tree laid out as DAMON's sysfs (kdamonds/0/contexts/0/schemes/0/
    tried_regions/N/{start,end,nr_accesses,age}, numbers with a newline, total_bytes beside)."""
    kdamond = tmp_path / "kdamonds" / "0"
    tried = kdamond / "contexts" / "0" / "schemes" / "0" / "tried_regions"
    regions = {0: (0x7F0000000000, 0x7F0000100000, 7, 2),
               1: (0x7F0000100000, 0x7F0000180000, 0, 40),
               12: (0x7FFF00000000, 0x7FFF00021000, 20, 0)}
    for n, values in regions.items():
        (tried / str(n)).mkdir(parents=True)
        for name, value in zip(("start", "end", "nr_accesses", "age"), values):
            (tried / str(n) / name).write_text(f"{value}\n")
    (tried / "total_bytes").write_text("1708032\n")
    (kdamond / "state").write_text("on\n")
    snap = DamonMonitor(admin=tmp_path).read_regions()
    assert (kdamond / "state").read_text() == "update_schemes_tried_regions\n"
    got = sorted(zip(snap.start.tolist(), snap.end.tolist(), snap.nr_accesses.tolist(),
                     snap.age.tolist()))
    assert got == sorted(regions.values())


def test_record_refuses_in_one_line_or_records_where_damon_is_free(tmp_path):
    """On a kernel without DAMON vaddr, or with a kdamond that is not objtier's, record
    refuses before the program runs and leaves DAMON as it was; where it is free, it records."""
    nr = ADMIN / "kdamonds" / "nr_kdamonds"
    before = nr.read_text() if nr.exists() else None
    why = unavailable()
    out = tmp_path / "d.otr"
    marker = tmp_path / "ran"
    done = subprocess.run([str(OBJTIER), "record", "--sampler", "damon", "-o", str(out), "--",
                           "sh", "-c", f"touch {marker}; sleep 1"], capture_output=True, text=True,
                          timeout=120)
    after = nr.read_text() if nr.exists() else None
    assert after == before                            # DAMON's sysfs left as found
    assert "Traceback" not in done.stderr
    if why is not None:
        assert done.returncode != 0
        assert why in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert not marker.exists() and not out.exists()  # refused before the program ran
    else:
        assert done.returncode == 0, done.stderr
        assert marker.exists() and "DAMON:" in done.stderr


def test_a_program_that_already_ended_is_not_running():
    """attach tells a program that ended before DAMON could watch it (a zombie not yet reaped,
    or gone) from a refusal of a live one."""
    import os

    child = subprocess.Popen(["true"])
    try:
        while True:   # exited, not reaped: a zombie
            state = [line for line in open(f"/proc/{child.pid}/status") if line.startswith("State:")]
            if "Z" in state[0]:
                break
        assert not _running(child.pid)
    finally:
        child.wait()
    assert not _running(child.pid)            # reaped: gone
    assert _running(os.getpid())
