"""The throttling-sensitivity metric of Foyer & Goglin (MCHPC'21, §IV-B), as pure functions.

Input: for each level of a knob, ordered from least to most throttled, every run's figure of
merit (FoM); a failed run (non-zero exit, OOM kill, timeout, no FoM in its output) is kept as
None with its reason elsewhere.

    per level      mean of the successful runs' FoMs; median of ALL runs, a failed run counting
                   as the worst possible FoM (0 when higher is better, +inf when lower is better):
                   a level where most runs fail has a failing median
    baseline       the maximum of the per-level means (minimum when lower is better), over the
                   levels where at least half the runs succeeded
    performance    relative performance of a value v: v / baseline (higher is better) or
                   baseline / v (lower is better); 1.0 = the baseline
    T90/T75/T50    the first level, from least to most throttled, whose median's performance is
                   strictly below 0.90 / 0.75 / 0.50; None = "not reached"
    confidence     a percentile bootstrap interval of each level's median (numpy, fixed seed,
                   so the same data always give the same interval)
    unstable       a threshold whose decision the spread could flip: the threshold line lies
                   inside the bootstrap interval of the median at the threshold level or at a
                   less throttled level before it (for "not reached": at any level)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

THRESHOLDS = (90, 75, 50)       # percent of the baseline
BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95
BOOTSTRAP_SEED = 0


@dataclass
class LevelStats:
    """One level's runs and their statistics (FoM units, as the program prints them)."""

    level: float                  # the knob's value, as requested
    label: str                    # the level as shown ("70%", "8 threads")
    foms: list[float | None]      # every run, in run order; None = failed
    mean: float | None            # of the successful runs; None when none succeeded
    median: float | None          # of all runs, failures counted worst; None when none ran
    ci_low: float | None          # bootstrap interval of the median
    ci_high: float | None
    performance: float | None = None  # median relative to the baseline (1.0 = baseline)

    @property
    def ok_runs(self) -> int:
        return sum(v is not None for v in self.foms)


@dataclass
class Metric:
    """The metric over all levels of one sweep."""

    higher_is_better: bool
    levels: list[LevelStats]
    baseline: float | None
    baseline_level: float | None
    thresholds: dict[int, float | None]     # 90/75/50 -> level, or None (not reached)
    warnings: list[str] = field(default_factory=list)

    def threshold_label(self, percent: int) -> str:
        level = self.thresholds.get(percent)
        if level is None:
            return "not reached"
        return next(s.label for s in self.levels if s.level == level)


def worst(higher_is_better: bool) -> float:
    """The FoM a failed run counts as in a median."""
    return 0.0 if higher_is_better else math.inf


def performance(value: float | None, baseline: float | None, higher_is_better: bool
                ) -> float | None:
    """value relative to baseline, 1.0 = as good as the baseline, < 1 = worse."""
    if value is None or baseline is None or baseline == 0:
        return None
    if higher_is_better:
        return value / baseline
    return 0.0 if math.isinf(value) else (baseline / value if value > 0 else math.inf)


def bootstrap_median_ci(values: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES,
                        confidence: float = CONFIDENCE, seed: int = BOOTSTRAP_SEED
                        ) -> tuple[float, float]:
    """Percentile bootstrap interval of the median of values (inf allowed)."""
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        raise ValueError("no values")
    if data.size == 1:
        return float(data[0]), float(data[0])
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, data.size, size=(resamples, data.size))
    medians = np.median(data[picks], axis=1)
    alpha = (1.0 - confidence) / 2.0
    low = np.quantile(medians, alpha, method="lower")
    high = np.quantile(medians, 1.0 - alpha, method="higher")
    return float(low), float(high)


def level_stats(level: float, label: str, foms: Sequence[float | None],
                higher_is_better: bool) -> LevelStats:
    """Statistics of one level's runs (see the module docstring)."""
    ok = [float(v) for v in foms if v is not None]
    counted = [float(v) if v is not None else worst(higher_is_better) for v in foms]
    mean = float(np.mean(ok)) if ok else None
    if counted:
        median = float(np.median(counted))
        low, high = bootstrap_median_ci(counted)
    else:
        median = low = high = None
    return LevelStats(level, label, list(foms), mean, median, low, high)


def compute_metric(levels: Sequence[tuple[float, str, Sequence[float | None]]],
                   higher_is_better: bool = True) -> Metric:
    """The metric for (level, label, FoMs) tuples given from least to most throttled."""
    stats = [level_stats(level, label, foms, higher_is_better) for level, label, foms in levels]
    eligible = [s for s in stats if s.mean is not None and 2 * s.ok_runs >= len(s.foms)]
    warnings: list[str] = []
    if not eligible:
        return Metric(higher_is_better, stats, None, None, {p: None for p in THRESHOLDS},
                      ["no level has a majority of successful runs: no baseline"])
    pick = max if higher_is_better else min
    best = pick(eligible, key=lambda s: s.mean)
    baseline = best.mean
    for s in stats:
        s.performance = performance(s.median, baseline, higher_is_better)
    thresholds: dict[int, float | None] = {}
    for percent in THRESHOLDS:
        line = percent / 100.0
        crossed = next((s for s in stats if s.performance is not None and s.performance < line),
                       None)
        thresholds[percent] = crossed.level if crossed is not None else None
        warning = _instability(stats, crossed, percent, baseline, higher_is_better)
        if warning:
            warnings.append(warning)
    return Metric(higher_is_better, stats, baseline, best.level, thresholds, warnings)


def _instability(stats: list[LevelStats], crossed: LevelStats | None, percent: int,
                 baseline: float, higher_is_better: bool) -> str | None:
    """A warning when the threshold line lies inside a median's bootstrap interval at the
    threshold level or a level before it (all levels when the threshold is not reached)."""
    line = percent / 100.0
    end = stats.index(crossed) + 1 if crossed is not None else len(stats)
    for s in stats[:end]:
        if s.ci_low is None or s.ci_high is None:
            continue
        a = performance(s.ci_low, baseline, higher_is_better)
        b = performance(s.ci_high, baseline, higher_is_better)
        low, high = min(a, b), max(a, b)
        if low < line <= high:
            where = crossed.label if crossed is not None else "not reached"
            return (f"T{percent} = {where} is unstable: the {CONFIDENCE:.0%} interval of the "
                    f"median at {s.label} spans {low:.0%}..{high:.0%} of the baseline, across "
                    f"the {percent}% line; add runs (--repeat)")
    return None


def sensitivity_key(metric: Metric) -> tuple[int, int, int]:
    """Sort key, most sensitive first: the index of the level where T90, then T75, then T50 is
    reached (not reached = after the last level). Table I of the seed orders by these columns."""
    order = {s.level: i for i, s in enumerate(metric.levels)}
    n = len(metric.levels)
    return tuple(order[metric.thresholds[p]] if metric.thresholds[p] is not None else n
                 for p in THRESHOLDS)
