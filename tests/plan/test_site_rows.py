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


def test_the_kernel_runs_level_goes_on_the_mixed_row():
    """A measured kernel run far above the fitted prediction: the surplus goes on the mixed
    row (the one curve not watched as such); objects and sites kept apart keep theirs."""
    from objtier.model.lru import Prediction
    from objtier.plan.site_rows import _levels

    def pred(per):
        per = np.array(per, float)
        return Prediction(float(per.sum()), per, 1.0, 10.0, 10.0)

    # kernel layout: one object (100), the mixed row (900); measured 10,000
    level, k_objects, k_mixed = _levels(pred([100.0, 900.0]), 1, 10_000.0)
    assert (k_objects, k_mixed) == (1.0, 11.0)
    assert level(pred([100.0, 900.0]), 0).swapins == 10_000.0
    # plan layout: the object, one site apart (50), the rest mixed (20)
    assert level(pred([100.0, 50.0, 20.0]), 1).swapins == 100.0 + 50.0 + 220.0
    # within the band: no levelling; objects above the run: every row alike
    assert _levels(pred([100.0, 900.0]), 1, 1100.0) is None
    level, k_objects, k_mixed = _levels(pred([900.0, 100.0]), 1, 300.0)
    assert k_objects == k_mixed == 0.3
    # a leveled choice is left as it is by by_model.scaled
    choice = by_model.Choice(name="sites", placement=None, limit_bytes=0,
                             predictions={"sites": 370.0}, nothing=pred([10_100.0]),
                             chosen=pred([370.0]), capacity_bytes=0, other_bytes=0,
                             leveled=True)
    assert by_model.scaled(choice, 10_100.0) == (choice, 1.0)


def test_the_fitted_tail_leaves_the_apart_rows_as_watched():
    from objtier.plan.site_rows import _tail_but_apart

    objects = object_table({"object": [1], "context_key": ["a" * 16], "occurrence": [1],
                            "size": [PAGE], "accesses": [1.0], "label": ["tiny"]})
    view = Curves(np.array([1e6]), np.linspace(0, 0.5, GRID)[None, :], np.array([0.0]),
                  np.array([1.0]), 1e9)
    half = (10e6, np.linspace(0.0, 0.5, GRID), 0.0)     # half the pages seen again
    rows = rows_of([half, half, half], [8 * MIB] * 3, [8 * MIB] * 3)
    lay = layout(objects, view, rows, np.array([True, False, False]), 32 * MIB)
    fitted = _tail_but_apart(lay, 50.0)
    everywhere = by_model.with_tail(lay.views, 50.0)
    assert fitted.tail_slope[1] == lay.views.tail_slope[1] == 0.0        # the apart row
    assert fitted.tail_slope[0] == everywhere.tail_slope[0] > 0.0          # the object
    assert fitted.tail_slope[2] == everywhere.tail_slope[2] > 0.0          # the mixed row
