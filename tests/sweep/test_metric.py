"""The seed's metric on hand-made data whose answer is known by construction."""

from __future__ import annotations

import math

import pytest

from objtier.sweep.metric import (bootstrap_median_ci, compute_metric, performance,
                                  sensitivity_key)


def levels(*rows):
    """(level, [foms]) -> (level, label, foms), least throttled first."""
    return [(lvl, f"{lvl:g}%", foms) for lvl, foms in rows]


def test_baseline_is_the_max_of_per_level_means_not_the_first_level():
    # level 90 has the best mean (105), not level 100 (100)
    m = compute_metric(levels((100, [100, 100, 100]), (90, [104, 105, 106]),
                              (80, [95, 95, 95])))
    assert m.baseline == pytest.approx(105.0)
    assert m.baseline_level == 90
    assert [s.median for s in m.levels] == [100, 105, 95]


def test_thresholds_are_the_first_level_whose_median_is_below_the_line():
    # medians 100, 95, 85, 70, 40 of baseline 100 -> T90 at 70 (85 < 90), T75 at 60, T50 at 50
    m = compute_metric(levels((90, [100] * 5), (80, [95] * 5), (70, [85] * 5),
                              (60, [70] * 5), (50, [40] * 5)))
    assert m.thresholds == {90: 70, 75: 60, 50: 50}
    assert m.threshold_label(90) == "70%"


def test_the_median_decides_not_the_mean():
    # level 80: mean 81 (one outlier) but median 95: T90 is not level 80
    m = compute_metric(levels((100, [100, 100, 100, 100, 100]), (80, [95, 95, 95, 20, 100]),
                              (60, [80, 80, 80, 80, 80])))
    assert m.levels[1].mean == pytest.approx(81.0)
    assert m.levels[1].median == 95
    assert m.thresholds[90] == 60


def test_a_median_exactly_on_the_line_is_not_below_it():
    # 90 is 90 % of 100: not below; 75 exactly: not below; 50 exactly: not below
    m = compute_metric(levels((100, [100] * 3), (80, [90] * 3), (60, [75] * 3), (40, [50] * 3),
                              (20, [49.9] * 3)))
    assert m.thresholds == {90: 60, 75: 40, 50: 20}


def test_not_reached():
    m = compute_metric(levels((100, [100] * 4), (50, [98] * 4), (10, [91] * 4)))
    assert m.thresholds == {90: None, 75: None, 50: None}
    assert m.threshold_label(50) == "not reached"


def test_later_recovery_does_not_move_the_first_crossing():
    # the median dips below 90 % at level 80 and recovers at 70: T90 stays 80
    m = compute_metric(levels((100, [100] * 3), (80, [80] * 3), (70, [99] * 3)))
    assert m.thresholds[90] == 80


def test_lower_is_better_uses_the_min_mean_and_inverse_performance():
    # times: best mean 10 s; 11 s is 91 %, 12.5 s is 80 %, 25 s is 40 %
    m = compute_metric(levels((100, [10, 10, 10]), (75, [11, 11, 11]), (50, [12.5] * 3),
                              (25, [25, 25, 25])), higher_is_better=False)
    assert m.baseline == 10
    assert m.levels[1].performance == pytest.approx(10 / 11)
    assert m.thresholds == {90: 50, 75: 25, 50: 25}


def test_failed_runs_count_worst_in_the_median_and_not_in_the_mean():
    # level 20: 2 of 3 runs failed -> median fails (0); mean of the survivor is 100
    m = compute_metric(levels((100, [100, 100, 100]), (20, [None, 100, None])))
    assert m.levels[1].mean == 100
    assert m.levels[1].median == 0
    assert m.thresholds == {90: 20, 75: 20, 50: 20}
    assert m.baseline_level == 100  # a level with most runs failed is never the baseline
    # lower is better: a failure counts as infinite time
    t = compute_metric(levels((100, [5, 5, 5]), (20, [None, None, 5])), higher_is_better=False)
    assert math.isinf(t.levels[1].median) and t.thresholds[50] == 20


def test_no_successful_level_means_no_baseline():
    m = compute_metric(levels((100, [None, None]), (50, [None])))
    assert m.baseline is None and m.thresholds == {90: None, 75: None, 50: None}
    assert "no baseline" in m.warnings[0]


def test_tied_means_keep_the_first_level_as_baseline():
    m = compute_metric(levels((100, [100, 100]), (90, [100, 100]), (80, [60, 60])))
    assert m.baseline_level == 100 and m.thresholds[90] == 80


def test_bootstrap_interval_contains_the_median_and_is_reproducible():
    values = [10, 11, 9, 10.5, 9.5, 30, 1, 10, 10.2, 9.8]
    low, high = bootstrap_median_ci(values)
    assert low <= 10.0 <= high
    assert bootstrap_median_ci(values) == (low, high)
    assert bootstrap_median_ci([7.0]) == (7.0, 7.0)
    assert bootstrap_median_ci([4.0] * 6) == (4.0, 4.0)


def test_spread_across_the_line_warns_and_tight_data_does_not():
    tight = compute_metric(levels((100, [100] * 10), (50, [80] * 10)))
    assert tight.warnings == []
    # level 50's runs straddle the 90 % line: half at 80, half at 99
    noisy = compute_metric(levels((100, [100] * 10), (50, [80, 99] * 5)))
    assert any(w.startswith("T90") and "unstable" in w for w in noisy.warnings)


def test_sensitivity_key_orders_earlier_thresholds_first():
    steep = compute_metric(levels((100, [100] * 3), (50, [40] * 3), (10, [10] * 3)))
    flat = compute_metric(levels((100, [100] * 3), (50, [95] * 3), (10, [80] * 3)))
    assert sensitivity_key(steep) == (1, 1, 1)
    assert sensitivity_key(flat) == (2, 3, 3)
    assert sorted([flat, steep], key=sensitivity_key)[0] is steep


def test_performance_of_zero_and_infinite_values():
    assert performance(0.0, 10.0, True) == 0.0
    assert performance(math.inf, 10.0, False) == 0.0
    assert performance(None, 10.0, True) is None
