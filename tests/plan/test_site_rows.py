"""The site rows of the kernel model (plan.site_rows): a page of mixed blocks is touched when
any of its blocks is, so a hot site mixed with a cold one makes every mixed page hot, and
keeping the hot site apart lets LRU keep it in less room than the mixed pages need."""

from __future__ import annotations

import numpy as np

from objtier.analysis.reuse_curves import GRID
from objtier.model.lru import Curves
from objtier.plan import by_model
from objtier.plan.site_rows import SiteRows, layout, mixed_curve, site_entries
from objtier.plan.table import object_table

MIB = 1 << 20
PAGE = 4096


def sweep(period_ns: float) -> tuple[float, np.ndarray, float]:
    """A cyclic sweep's curve: F = t / period up to the period."""
    return period_ns, np.linspace(0.0, 1.0, GRID), 0.0


def rows_of(curves, sizes, peaks) -> SiteRows:
    n = len(curves)
    return SiteRows(
        sites=[{"context_key": f"{i + 1:016x}", "frame0_key": f"{i + 11:016x}",
                "label": f"site{i}", "arena_bytes": s} for i, s in enumerate(sizes)],
        size=np.array(sizes, np.int64), peak=np.array(peaks, np.int64),
        horizon_ns=np.array([c[0] for c in curves]), share=np.array([c[1] for c in curves]),
        tail_slope=np.array([c[2] for c in curves]), first_ns=np.zeros(n),
        armed=np.full(n, 1000), calls=np.full(n, 1000.0))


HOT = sweep(10e6)                                       # every page every 10 ms
COLD = (10e9, np.linspace(0.0, 0.001, GRID), 0.0)       # almost never again


def test_a_mixed_page_is_as_hot_as_its_hottest_blocks_make_it():
    rows = rows_of([HOT, COLD], [8 * MIB, 24 * MIB], [8 * MIB, 24 * MIB])
    h, f, _ = mixed_curve(rows, np.array([True, True]))
    t = np.linspace(0.0, h, GRID)
    hot = np.clip(t / 10e6, 0.0, 1.0)
    # a quarter of each page is hot: 1 - (1 - F_hot)^0.25, above a quarter of F_hot, at most F_hot
    assert np.all(f >= 0.25 * hot - 1e-9) and np.all(f <= hot + 1e-9)
    at_period = np.searchsorted(t, 10e6)
    assert f[at_period] > 0.99      # every mixed page is touched within the hot period


def test_keeping_the_hot_site_apart_predicts_fewer_swapins():
    objects = object_table({"object": [1], "context_key": ["a" * 16], "occurrence": [1],
                            "size": [PAGE], "accesses": [1.0], "label": ["tiny"]})
    view = Curves(np.array([1e6]), np.linspace(0, 1, GRID)[None, :], np.array([0.0]),
                  np.array([1.0]), 1e9)
    rows = rows_of([HOT, COLD], [8 * MIB, 24 * MIB], [8 * MIB, 24 * MIB])
    local, other = 20 * MIB, 32 * MIB         # the sites' 32 MiB are all of "other"

    def predicted(apart):
        lay = layout(objects, view, rows, np.array(apart), other)
        assert lay.other_bytes == 0
        cap = float(local // PAGE)
        return by_model.predicted(lay.views, lay.table, PAGE, cap,
                                  np.zeros(len(lay.table))).swapins

    mixed, hot_apart = predicted([False, False]), predicted([True, False])
    assert hot_apart < 0.2 * mixed, (hot_apart, mixed)


def test_site_entries_lock_whole_chunks_and_keep_the_rest_apart():
    rows = rows_of([HOT, COLD], [8 * MIB, 24 * MIB], [8 * MIB, 24 * MIB])
    entries = site_entries(rows, np.array([True, True]),
                           np.array([(3 * MIB + 5 * PAGE) / PAGE, 0.0]), PAGE)
    assert [(e["tier"], e.get("lock_bytes")) for e in entries] == [("fast", 3 * MIB),
                                                                  ("apart", None)]
