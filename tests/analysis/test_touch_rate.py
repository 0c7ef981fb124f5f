"""Touch rates from WINDOW records (format 1.1), on a written trace with known numbers."""

from __future__ import annotations

import math

import pytest

from objtier.analysis.objects import object_table
from objtier.trace import TraceWriter, open_trace

MS = 1_000_000
PAGE = 4096


def _trace(path, windows):
    """Objects: seq 1 (hot, 64 pages), 2 (swept, 1024 pages), 3 (never watched, 16 pages);
    all alive from t=0 to the end at t = 2 s."""
    with TraceWriter(path / "proc-7.otr", pid=7, ppid=1, start_mono_ns=0) as w:
        w.process(7, 1, 0, "/bin/prog", ["prog"])
        w.alloc(0, 1, 0x100000, 64 * PAGE)
        w.alloc(0, 2, 0x200000, 1024 * PAGE)
        w.alloc(0, 3, 0x800000, 16 * PAGE)
        for window in windows:
            w.window(**window)
        w.sample(10 * MS, 0x100000, latency=100)
        w.close(end_time_ns=2000 * MS)
    return object_table(open_trace(path), labels=False).to_pylist()


def test_censored_exponential_estimate(tmp_path):
    rows = _trace(tmp_path, [
        # hot: all 16 pages touched, 2 ms of waiting in all -> 16 / 2 ms = 8000 per page-second
        dict(arm_ns=100 * MS, alloc_seq=1, start=0x100000, pages=16, dwell_ns=1 * MS,
             touched=16, touched_ns=2 * MS),
        # swept, two windows: 4 of 32 pages touched after 40 ms in all, 28 watched 50 ms each,
        # and 0 of 16 touched in 50 ms -> 4 / (0.04 + 1.4 + 0.8) page-s
        dict(arm_ns=200 * MS, alloc_seq=2, start=0x200000, pages=32, dwell_ns=50 * MS,
             touched=4, touched_ns=40 * MS),
        dict(arm_ns=300 * MS, alloc_seq=2, start=0x300000, pages=16, dwell_ns=50 * MS),
    ])
    hot, swept, unseen = rows
    assert hot["watched_s"] == pytest.approx(0.002)
    assert hot["touch_rate"] == pytest.approx(8000.0)
    assert hot["est_touches"] == pytest.approx(8000.0 * 64 * 2.0)
    assert hot["accesses"] == pytest.approx(hot["est_touches"])
    assert swept["watched_s"] == pytest.approx(2.24)
    assert swept["touch_rate"] == pytest.approx(4 / 2.24)
    assert swept["accesses"] == pytest.approx(4 / 2.24 * 1024 * 2.0)
    # never watched: no estimate, and no accesses once the trace has windows at all
    assert unseen["watched_s"] == 0 and unseen["touch_rate"] is None
    assert unseen["est_touches"] is None and unseen["accesses"] == 0
    assert hot["samples"] == 1          # sample counts are kept as they are


def test_without_windows_accesses_stay_sample_weights(tmp_path):
    rows = _trace(tmp_path, [])
    assert [r["accesses"] for r in rows] == [1.0, 0.0, 0.0]
    assert all(r["touch_rate"] is None and r["watched_s"] == 0 for r in rows)
    assert not any(math.isnan(r["accesses"]) for r in rows)
