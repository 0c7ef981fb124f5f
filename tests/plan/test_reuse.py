"""reuse: spill in order of re-reference interval, on synthetic tables with known answers, and
on a real fault-sampler recording (retouch_us from the real object table)."""

from __future__ import annotations

import numpy as np

from objtier.plan import reuse, spill
from .plan_synthetic import PAGE, fast_pages, table


def swept_and_tables():
    # 0: a swept array, 10 pages, 200 accesses (20/page, re-touched every 5000 us);
    # 1, 2: two tables of 3 pages, 30 accesses each (10/page, re-touched every 100 / 300 us);
    # 3: an object with samples but no interval known, 2 pages, 40 accesses
    t = table([10, 3, 3, 2], [200, 30, 30, 40])
    t["retouch_us"] = np.array([5000.0, 100.0, 300.0, np.nan])
    return t


def test_reuse_locks_the_shortest_intervals_first_and_splits_the_sweep():
    p = reuse(swept_and_tables(), 10 * PAGE)
    # order: table 1 (100 us), table 2 (300 us), the sweep (5000 us) split with 4 pages left,
    # then the unknown one
    assert p.order.tolist() == [2, 0, 1, 3]
    assert fast_pages(p) == [4, 3, 3, 0]
    assert p.tier.tolist() == ["split", "fast", "fast", "slow"]
    assert p.priority.tolist() == [200.0, 1e4, 1e6 / 300, 0.0]  # re-references per second
    assert p.warnings == ()


def test_spill_on_the_same_table_locks_the_sweep_instead():
    p = spill(swept_and_tables(), 10 * PAGE)
    # by density the unknown object (20/page) and the sweep (20/page) come before the tables
    assert fast_pages(p)[1:3] == [0, 0]


def test_reuse_without_intervals_is_spill_by_density_and_says_so():
    t = table([6, 5, 4, 1], [60, 40, 20, 1])
    p, s = reuse(t, 10 * PAGE), spill(t, 10 * PAGE)
    assert p.fast_bytes.tolist() == s.fast_bytes.tolist()
    assert p.warnings and "no object has a re-reference interval" in p.warnings[0]
