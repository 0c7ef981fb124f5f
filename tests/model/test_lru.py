"""The kernel model on curves whose LRU behaviour is known in closed form, and the touch-time
curves estimated from the delays a window sampler records."""

from __future__ import annotations

import numpy as np
import pytest

from objtier.analysis.reuse_curves import GRID, concave_majorant, kaplan_meier
from objtier.model import Curves, predict
from objtier.model.check import check, lines

MS = 1e6


def sweep(period_ns: float) -> tuple[float, np.ndarray, float]:
    """A cyclic sweep: F(t) = t / P up to P."""
    grid = np.linspace(0, period_ns, GRID)
    return period_ns, grid / period_ns, 0.0


def uniform(mean_ns: float, horizon_ns: float) -> tuple[float, np.ndarray, float]:
    """Pages referenced at random alike: F(t) = 1 - exp(-t / m)."""
    grid = np.linspace(0, horizon_ns, GRID)
    share = 1 - np.exp(-grid / mean_ns)
    return horizon_ns, share, float(np.exp(-horizon_ns / mean_ns) / mean_ns)


def curves(*objects, duration_ns: float = 1000 * MS) -> Curves:
    return Curves(np.array([o[0] for o in objects]), np.stack([o[1] for o in objects]),
                  np.array([o[2] for o in objects]), np.ones(len(objects)), duration_ns)


def test_a_sweep_larger_than_memory_misses_every_page_every_period():
    c = curves(sweep(10 * MS))                   # 100 sweeps in the run
    got = predict(c, np.array([1000.0]), 600.0)
    assert got.swapins == pytest.approx(1000 * 100, rel=0.01)
    assert got.characteristic_ns < 10 * MS


def test_locking_part_of_a_sweep_removes_as_many_misses_a_period():
    c = curves(sweep(10 * MS))
    kernel = predict(c, np.array([1000.0]), 600.0).swapins
    locked = predict(c, np.array([1000.0 - 500]), 600.0 - 500).swapins
    assert kernel - locked == pytest.approx(500 * 100, rel=0.02)


def test_locking_part_of_a_uniformly_used_object_gains_nothing():
    c = curves(uniform(5 * MS, 200 * MS))
    kernel = predict(c, np.array([1000.0]), 600.0).swapins
    locked = predict(c, np.array([500.0]), 100.0).swapins
    assert kernel == pytest.approx(80_000, rel=0.05)     # rate x (pages - room) x run
    assert locked == pytest.approx(kernel, rel=0.1)      # the grid's resolution at small T


def test_everything_that_fits_never_misses():
    c = curves(sweep(10 * MS), uniform(5 * MS, 200 * MS))
    got = predict(c, np.array([300.0, 200.0]), 600.0)
    assert got.fits and got.swapins == 0


def test_an_object_without_a_curve_takes_room_but_never_misses():
    c = Curves(np.array([10 * MS, 0.0]), np.stack([sweep(10 * MS)[1], np.zeros(GRID)]),
               np.zeros(2), np.ones(2), 1000 * MS)
    alone = predict(c, np.array([1000.0, 0.0]), 1100.0)
    crowded = predict(c, np.array([1000.0, 400.0]), 1100.0)
    assert alone.fits and not crowded.fits
    assert crowded.per_object[1] == 0


def test_kaplan_meier_recovers_a_sweep_from_censored_windows():
    rng = np.random.default_rng(1)
    period = 40 * MS
    delays = rng.uniform(0, period, 4000)
    dwell = 20 * MS                            # windows end before the period: censored
    seen = delays[delays <= dwell]
    horizon, share, slope = kaplan_meier(seen, np.full(1, dwell), np.array([len(delays)
                                                                             - len(seen)]))
    assert horizon == pytest.approx(dwell, rel=0.05)
    assert share[-1] == pytest.approx(dwell / period, abs=0.03)
    assert slope == pytest.approx(1 / period, rel=0.15)       # continued as a sweep


def test_the_concave_majorant_lies_on_or_above_its_points_and_is_concave():
    x = np.linspace(0, 1, 20)
    y = np.clip(x + np.random.default_rng(2).normal(0, 0.05, 20), 0, 1)
    y[0] = 0
    m = concave_majorant(x, y)
    assert np.all(m >= np.minimum(y, 1.0) - 1e-12)
    assert np.all(np.diff(m, 2) <= 1e-9)


def test_the_check_says_when_the_model_is_off():
    model = {"chosen": "spill", "predicted_swapins": {"kernel": 100_000, "plan": 20_000}}
    got = check(model, {"baseline": {"swapins": 100_500, "wall_s": 3.0},
                        "objtier": {"swapins": 60_000, "wall_s": 1.5}}, 1.0)
    assert got["off"] == ["objtier"]
    assert got["seconds_per_swapin"] == pytest.approx(2.0 / 100_500)
    assert got["arms"]["objtier"]["predicted_wall_s"] == pytest.approx(1.0 + 20_000 * 2 / 100_500)
    text = lines(got)
    assert "off by more than 25 %" in text[1] and "off" not in text[0]


def test_calibration_fits_the_unseen_tail_to_a_measured_kernel_run():
    from objtier.plan import object_table
    from objtier.plan.by_model import calibrate, predicted

    # a sweep the windows saw only 30 % of within their dwell, and nothing beyond it
    h = 20 * MS
    share = np.linspace(0, 0.3, GRID)
    c = Curves(np.array([h]), share[None, :], np.zeros(1), np.ones(1), 1000 * MS)
    objects = object_table({"object": [0], "context_key": ["00000000000000aa"],
                            "occurrence": [0], "size": [1000 * 4096], "accesses": [1.0],
                            "label": ["a"]})
    none = np.zeros(1)
    before = predicted(c, objects, 4096, 600.0, none).swapins
    alpha, fitted = calibrate(c, objects, 4096, 600.0, 50_000)
    after = predicted(fitted, objects, 4096, 600.0, none).swapins
    assert before < 50_000 and alpha > 0
    assert after == pytest.approx(50_000, rel=0.02)
    # a model that already predicts at least the measurement is left alone
    assert calibrate(c, objects, 4096, 600.0, before)[0] == 0.0


def test_the_models_lock_set_never_exceeds_its_cap_with_partial_last_pages():
    from objtier.plan import object_table, spill
    from objtier.plan.by_model import choose

    # three swept objects of 4000 pages and 100 bytes: a whole one is charged 4001 pages
    n = 3
    size = 4000 * 4096 + 100
    c = curves(sweep(10 * MS), sweep(10 * MS), sweep(10 * MS))
    objects = object_table({"object": list(range(n)),
                            "context_key": [f"{k + 1:016x}" for k in range(n)],
                            "occurrence": [0] * n, "size": [size] * n,
                            "accesses": [1.0] * n, "label": ["a", "b", "c"]})
    local = 4000 * 4096 + (8 << 20)            # a cap of 4000 pages: a whole object is 4001
    rules = ("spill", 3000 * 4096, spill(objects, 3000 * 4096, 4096))
    got = choose(objects, c, 4096, local, 0, rules)
    assert got.placement.used_bytes <= got.limit_bytes
    assert got.chosen.swapins < got.nothing.swapins      # part of the sweeps is locked
