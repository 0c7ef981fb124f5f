"""The throttling-sensitivity metric of Foyer & Goglin (MCHPC'21, §IV-B), as pure functions,
with thresholds declared only where the noise of the runs allows.

Input: for each level of a knob, ordered from least to most throttled, every run's figure of
merit (FoM); a failed run (non-zero exit, OOM kill, timeout, no FoM in its output) is kept as
None with its reason elsewhere.

    per level      mean of the successful runs' FoMs; median of ALL runs, a failed run counting
                   as the worst possible FoM (0 when higher is better, +inf when lower is better):
                   a level where most runs fail has a failing median
    baseline       the maximum of the per-level means (minimum when lower is better), over the
                   levels where at least half the runs succeeded
    ratio          relative performance of a value v: v / baseline (higher is better) or
                   baseline / v (lower is better); 1.0 = the baseline ("performance")
    intervals      percentile bootstrap intervals (numpy, fixed seed, so the same data always
                   give the same interval): of each level's median (FoM units), and of each
                   level's ratio, resampling that level's runs AND every eligible level's runs
                   for the baseline, so the baseline's own noise is in the ratio's interval
    side           per level and line (90/75/50 % of the baseline):
                     below   the ratio's interval lies strictly below the line and the level's
                             median interval lies wholly on the worse side of the baseline
                             level's (a drop that overlaps the baseline is no drop)
                     above   the ratio's interval lies at or above the line
                     noise   anything else, and any level (or baseline level) with fewer than
                             MIN_RUNS runs: one run shows no noise (except deterministic data,
                             e.g. a simulated knob)
    T90/T75/T50    the first level that is below the line after the last level that is above
                   it, from least to most throttled: from there on the curve stays below.
                   "not reached" when the last measured level is above the line. "not
                   resolved" when a noise level decides it: the first level after the last
                   one above is noise, or a later level is noise with its median ratio back
                   at or above the line (the curve may rise again). A curve that dips below a
                   line and comes back above it has no threshold at the dip.
    repeats        for a noise level, the runs per level that would resolve it, estimated by
                   the interval's width shrinking as 1/sqrt(runs): n * (width / distance)^2,
                   width = the interval's part between the median ratio and the line, distance
                   = from the median ratio to the line; None when unknown (one run, or the
                   median ratio on the line)
    non-monotonic  a median ratio that falls below a line and a later level's that is back at
                   or above it; "beyond the noise" when the first is below and the second above
                   by the sides above
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
MIN_RUNS = 2                    # runs a level and the baseline level need to be judged

ABOVE, BELOW, NOISE = "above", "below", "noise"
REACHED, NOT_REACHED, NOT_RESOLVED, NO_BASELINE = ("reached", "not reached", "not resolved",
                                                   "no baseline")


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
    ratio_low: float | None = None    # bootstrap interval of the performance
    ratio_high: float | None = None
    sides: dict[int, str] = field(default_factory=dict)   # percent -> above | below | noise
    repeats_needed: dict[int, int | None] = field(default_factory=dict)  # noise sides only
    judged: bool = True           # False: too few runs here or at the baseline level to judge

    @property
    def ok_runs(self) -> int:
        return sum(v is not None for v in self.foms)


@dataclass
class Threshold:
    """What the runs say about one threshold."""

    percent: int
    status: str                   # reached | not reached | not resolved | no baseline
    level: float | None = None    # reached: the level
    label: str = "not reached"    # as shown: the level's label, or the status
    noise: list[float] = field(default_factory=list)   # not resolved: the deciding levels
    repeats_needed: int | None = None   # not resolved: runs per level that would resolve it
    reason: str = ""              # not resolved: why, in words


@dataclass
class Metric:
    """The metric over all levels of one sweep."""

    higher_is_better: bool
    levels: list[LevelStats]
    baseline: float | None
    baseline_level: float | None
    thresholds: dict[int, float | None]     # 90/75/50 -> level, or None (not declared)
    warnings: list[str] = field(default_factory=list)
    details: dict[int, Threshold] = field(default_factory=dict)
    non_monotonic: list[dict] = field(default_factory=list)   # see the module docstring

    def threshold_label(self, percent: int) -> str:
        detail = self.details.get(percent)
        if detail is not None:
            return detail.label
        level = self.thresholds.get(percent)
        if level is None:
            return "not reached"
        return next(s.label for s in self.levels if s.level == level)

    def unresolved(self) -> list[Threshold]:
        return [d for d in self.details.values() if d.status == NOT_RESOLVED]


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
    return _interval(medians, confidence)


def _interval(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = (1.0 - confidence) / 2.0
    low = np.quantile(samples, alpha, method="lower")
    high = np.quantile(samples, 1.0 - alpha, method="higher")
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


def ratio_intervals(stats: Sequence[LevelStats], eligible: Sequence[int], higher_is_better: bool,
                    resamples: int = BOOTSTRAP_RESAMPLES, confidence: float = CONFIDENCE,
                    seed: int = BOOTSTRAP_SEED) -> list[tuple[float, float] | None]:
    """Per level, the percentile bootstrap interval of its ratio to the baseline (None for a
    level without runs). Each resample draws every level's runs with replacement; the
    resampled baseline is the max (min when lower is better) of the resampled means of the
    eligible levels (indices into stats), the resampled ratio that of the level's resampled
    median to it."""
    rng = np.random.default_rng(seed)
    fail = worst(higher_is_better)
    medians: dict[int, np.ndarray] = {}
    means: list[np.ndarray] = []
    for i, s in enumerate(stats):
        if not s.foms:
            continue
        counted = np.array([fail if v is None else float(v) for v in s.foms], dtype=np.float64)
        ok = np.array([v is not None for v in s.foms])
        picks = rng.integers(0, counted.size, size=(resamples, counted.size))
        drawn = counted[picks]
        medians[i] = np.median(drawn, axis=1)
        if i in eligible:
            taken = ok[picks]
            count = taken.sum(axis=1)
            total = np.where(taken, drawn, 0.0).sum(axis=1)
            means.append(np.where(count > 0, total / np.maximum(count, 1), np.nan))
    if not means:
        return [None] * len(stats)
    stack = np.vstack(means)
    base = (np.fmax if higher_is_better else np.fmin).reduce(stack, axis=0)   # NaN-skipping
    out: list[tuple[float, float] | None] = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(len(stats)):
            if i not in medians:
                out.append(None)
                continue
            m = medians[i]
            if higher_is_better:
                ratio = np.where(base > 0, m / base, np.nan)
            else:
                ratio = np.where(np.isinf(m), 0.0, np.where(m > 0, base / m, np.inf))
            ratio = ratio[~np.isnan(ratio)]
            out.append(_interval(ratio, confidence) if ratio.size else None)
    return out


def _runs_needed(n: int, width: float, distance: float) -> int | None:
    """Runs at which an interval of `width` (at n runs) shrinks inside `distance`, as
    1/sqrt(runs); None when it cannot (on the line) or n is too small to know."""
    if n < MIN_RUNS or distance <= 0 or not math.isfinite(width):
        return None
    return max(n + 1, math.ceil(n * (width / distance) ** 2))


def _separated(s: LevelStats, base: LevelStats, higher_is_better: bool) -> bool:
    """The level's median interval lies wholly on the worse side of the baseline level's."""
    if s is base or None in (s.ci_low, s.ci_high, base.ci_low, base.ci_high):
        return False
    return s.ci_high < base.ci_low if higher_is_better else s.ci_low > base.ci_high


def _judge(s: LevelStats, base: LevelStats, percent: int, judged: bool,
           higher_is_better: bool) -> tuple[str, int | None]:
    """(side, runs needed when noise) of one level against one line."""
    line = percent / 100.0
    r, lo, hi = s.performance, s.ratio_low, s.ratio_high
    if not judged or r is None or lo is None or hi is None:
        return NOISE, None
    separated = _separated(s, base, higher_is_better)
    if hi < line and separated:
        return BELOW, None
    if lo >= line:
        return ABOVE, None
    n = min(len(s.foms), len(base.foms))
    if hi < line:      # the ratio clears the line, but the medians overlap the baseline's
        gap = abs(base.median - s.median) if None not in (base.median, s.median) else 0.0
        width = ((s.ci_high - s.median) + (base.median - base.ci_low)) if higher_is_better \
            else ((s.median - s.ci_low) + (base.ci_high - base.median))
        return NOISE, _runs_needed(n, abs(width), gap)
    width = (hi - r) if r < line else (r - lo)
    return NOISE, _runs_needed(n, width, abs(r - line))


def compute_metric(levels: Sequence[tuple[float, str, Sequence[float | None]]],
                   higher_is_better: bool = True, deterministic: bool = False) -> Metric:
    """The metric for (level, label, FoMs) tuples given from least to most throttled.
    deterministic: the FoMs have no noise (a simulated knob): one value per level is judged."""
    stats = [level_stats(level, label, foms, higher_is_better) for level, label, foms in levels]
    eligible = [i for i, s in enumerate(stats)
                if s.mean is not None and 2 * s.ok_runs >= len(s.foms)]
    if not eligible:
        details = {p: Threshold(p, NO_BASELINE, label="no baseline") for p in THRESHOLDS}
        return Metric(higher_is_better, stats, None, None, {p: None for p in THRESHOLDS},
                      ["no level has a majority of successful runs: no baseline"], details)
    pick = max if higher_is_better else min
    best = stats[pick(eligible, key=lambda i: stats[i].mean)]
    baseline = best.mean
    for s, interval in zip(stats, ratio_intervals(stats, eligible, higher_is_better)):
        s.performance = performance(s.median, baseline, higher_is_better)
        if interval is not None:
            s.ratio_low, s.ratio_high = interval
    base_runs = len(best.foms)
    for s in stats:
        if not s.foms:
            continue
        judged = deterministic or (len(s.foms) >= MIN_RUNS and base_runs >= MIN_RUNS)
        s.judged = judged
        for percent in THRESHOLDS:
            side, needed = _judge(s, best, percent, judged, higher_is_better)
            s.sides[percent] = side
            if side == NOISE:
                s.repeats_needed[percent] = needed
    details = {p: _threshold(stats, p) for p in THRESHOLDS}
    warnings = [_unresolved_warning(stats, d) for d in details.values()
                if d.status == NOT_RESOLVED]
    dips = _non_monotonic(stats)
    warnings.extend(_dip_warning(stats, dip) for dip in dips)
    thresholds = {p: d.level for p, d in details.items()}
    return Metric(higher_is_better, stats, baseline, best.level, thresholds, warnings, details,
                  dips)


def _threshold(stats: list[LevelStats], percent: int) -> Threshold:
    """One threshold from the levels' sides (see the module docstring)."""
    line = percent / 100.0
    measured = [s for s in stats if percent in s.sides]
    above = [i for i, s in enumerate(measured) if s.sides[percent] == ABOVE]
    tail = measured[above[-1] + 1:] if above else measured
    if not tail:
        return Threshold(percent, NOT_REACHED, label="not reached")
    first = tail[0]
    if first.sides[percent] == BELOW:
        back = [s for s in tail[1:] if s.sides[percent] == NOISE
                and s.performance is not None and s.performance >= line]
        if not back:
            return Threshold(percent, REACHED, first.level, first.label)
        return _not_resolved(percent, back, f"{first.label} is below the {percent}% line, but "
                             f"the median ratio is back at or above it at "
                             f"{', '.join(s.label for s in back)} within the noise")
    noise = []
    for s in tail:
        if s.sides[percent] == BELOW:
            break
        noise.append(s)
    return _not_resolved(percent, noise, "")


def _not_resolved(percent: int, noise: list[LevelStats], reason: str) -> Threshold:
    needed = [s.repeats_needed.get(percent) for s in noise]
    total = None if not needed or None in needed else max(needed)
    if not reason:
        s = noise[0]
        if not s.judged or s.ratio_low is None:
            reason = (f"fewer than {MIN_RUNS} runs at {s.label} or at the baseline level show "
                      f"no noise")
        else:
            reason = (f"at {s.label} the {CONFIDENCE:.0%} interval of the ratio is "
                      f"{_pct(s.ratio_low)}..{_pct(s.ratio_high)} of the baseline, median "
                      f"{_pct(s.performance)}, across the {percent}% line")
            if s.ratio_high < percent / 100.0:
                reason = (f"at {s.label} the ratio is below the {percent}% line, but the "
                          f"{CONFIDENCE:.0%} interval of its median overlaps the baseline "
                          f"level's")
        if len(noise) > 1:
            reason += (f" (and at {', '.join(other.label for other in noise[1:])}, "
                       f"{len(noise) - 1} more level(s) in the way)")
    return Threshold(percent, NOT_RESOLVED, None, "not resolved (noise)",
                     [s.level for s in noise], total, reason)


def _pct(value: float | None) -> str:
    if value is None:
        return "?"
    return "inf" if math.isinf(value) else f"{100 * value:.0f}%"


def _unresolved_warning(stats: list[LevelStats], detail: Threshold) -> str:
    deciding = [s for s in stats if s.level in detail.noise]
    runs = max((len(s.foms) for s in deciding), default=0)
    if detail.repeats_needed is not None:
        more = (f"about {detail.repeats_needed} runs per level would resolve it (now {runs}): "
                f"--repeat {detail.repeats_needed}, or --repeat auto")
    elif any(not s.judged for s in deciding):
        more = f"use --repeat {MIN_RUNS + 1} or more, or --repeat auto"
    else:
        more = "its median ratio is on the line: more runs may not resolve it"
    return f"T{detail.percent} not resolved (noise): {detail.reason}; {more}"


def _non_monotonic(stats: list[LevelStats]) -> list[dict]:
    """Per (dip, rise) pair of levels: the lines the median ratio falls below at the dip and is
    back at or above at the rise, and whether the sides resolve both."""
    found: dict[tuple[float, float], dict] = {}
    measured = [s for s in stats if s.performance is not None and s.sides]
    for percent in THRESHOLDS:
        line = percent / 100.0
        dip = next((s for s in measured if s.performance < line), None)
        if dip is None:
            continue
        after = measured[measured.index(dip) + 1:]
        rise = next((s for s in after if s.performance >= line), None)
        if rise is None:
            continue
        entry = found.setdefault((dip.level, rise.level), {
            "dip": dip.level, "rise": rise.level, "percents": [], "beyond_noise": True})
        entry["percents"].append(percent)
        entry["beyond_noise"] &= (dip.sides.get(percent) == BELOW
                                  and rise.sides.get(percent) == ABOVE)
    return list(found.values())


def _dip_warning(stats: list[LevelStats], dip: dict) -> str:
    label = {s.level: s.label for s in stats}
    lines = " and ".join(f"{p}%" for p in dip["percents"])
    how = ("beyond the noise: a dip, not a threshold" if dip["beyond_noise"] else
           "within the noise: more runs tell a dip from noise")
    return (f"non-monotonic curve: the median falls below {lines} of the baseline at "
            f"{label[dip['dip']]} and is back above at {label[dip['rise']]} ({how})")


def sensitivity_key(metric: Metric) -> tuple[int, int, int]:
    """Sort key, most sensitive first: the index of the level where T90, then T75, then T50 is
    reached (not reached or not resolved = after the last level). Table I of the seed orders
    by these columns."""
    order = {s.level: i for i, s in enumerate(metric.levels)}
    n = len(metric.levels)
    return tuple(order[metric.thresholds[p]] if metric.thresholds[p] is not None else n
                 for p in THRESHOLDS)
