"""Per-object touch-time curves from window samplers' recordings: the input of the kernel model
(objtier.model.lru).

A window sampler (pageout, fault, wp) arms a set of an object's pages at a moment unrelated to
the program's own access pattern and records, for each armed page touched within the window's
dwell, the delay from arming to the first touch (SAMPLE.latency, microseconds); the WINDOW
record says how many pages were armed, how many were touched and how long the window dwelt.
That delay is the page's *forward recurrence time*: the time from a random moment to the
page's next reference. Its distribution function over the object's pages, F(t), is what an
LRU model needs (Che's approximation for renewal reference streams, Fricker et al. 2012):

    a page is resident in an LRU of characteristic time T with probability F(T) (it was
    referenced within the last T: backward and forward recurrence times are alike), and it
    misses at rate f(T) = F'(T) per unit time (references whose previous one lies more than T
    back).

Estimation: Kaplan-Meier over the armed pages, each one either touched at its delay (an event)
or not touched by the end of its window's dwell (censored there), on a grid of GRID points from
0 to the horizon H, the longest delay at which at least MIN_AT_RISK pages were still watched,
then its least concave majorant (Grenander's estimator: f is non-increasing, below), which
removes the sampling noise that would otherwise make f jump from one grid cell to the next.
Beyond H, F continues with the slope it had over [H/2, H] up to 1: f is non-increasing in t
(f = rate x P(interval > t)), so that slope bounds the true one from above; a cyclic sweep
(F linear up to its period) is continued exactly, a page set that is never touched again has
slope 0 and stays cold. What this cannot see: pages touched only after their window closed
look never touched again (the censoring that under-predicts large objects' re-use;
plan.by_model.calibrate fits it to a measured kernel run).

Units: times in ns; F is a share of the object's pages (0..1); slope in pages-share per ns.
An object no window armed has no curve (armed = 0): pipeline.model_curves counts it as never
resident (the scan reaches every tracked object each pass, and arms only resident pages).
The delays are corrected for the sampler's own stalls first (sampler_corrected).
Several recordings of one program are pooled: an object of a later recording adds its windows
and samples to the first recording's object with the same context key, occurrence and size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from objtier.analysis.mapping import sample_objects
from objtier.analysis.objects import object_table
from objtier.analysis.page_samples import matched_rows
from objtier.trace.columns import column, trace_end_ns

GRID = 200           # points of each curve, 0..H (f is constant between two)
MIN_AT_RISK = 16     # pages still watched at the horizon
US = 1000            # ns per microsecond (SAMPLE.latency unit)
MAX_STALL_NS = 100_000  # the most a sampled fault is taken to stall the program


@dataclass(frozen=True)
class ReuseCurves:
    """One curve per object row of the first recording's object table."""

    horizon_ns: np.ndarray    # float64 (n,): H of each object; 0 = no curve
    share: np.ndarray         # float64 (n, GRID): F at horizon_ns * k / (GRID - 1)
    tail_slope: np.ndarray    # float64 (n,): dF/dt beyond H [1/ns]
    armed: np.ndarray         # int64 (n,): pages armed over all windows
    touched: np.ndarray       # int64 (n,): of them touched within their window
    duration_ns: float        # the recorded run's length (mean over recordings) [ns]
    live_share: np.ndarray    # float64 (n,): share of the run (or spans) each object was live

    def __len__(self) -> int:
        return len(self.armed)

    @property
    def known(self) -> np.ndarray:
        """Objects with a curve."""
        return self.horizon_ns > 0


def in_spans(times: np.ndarray, spans: list[tuple[int, int]] | None) -> np.ndarray:
    """Which times [ns] lie in one of the [start, end) spans (all when spans is None)."""
    if spans is None:
        return np.ones(len(times), dtype=bool)
    inside = np.zeros(len(times), dtype=bool)
    for start, end in spans:
        inside |= (times >= start) & (times < end)
    return inside


@dataclass(frozen=True)
class Observations:
    """A recording's window observations, flat, for the first recording's object rows:
    touches (events) and pages left untouched when their window closed (censored)."""

    ev_row: np.ndarray     # int64: object row of each touch
    ev_delay: np.ndarray   # float64: its delay after arming [ns] (sampler_corrected)
    ev_arm: np.ndarray     # int64: when its window was armed [ns]
    ce_row: np.ndarray     # int64: object row of each window
    ce_dwell: np.ndarray   # float64: the window's open time [ns] (censor time)
    ce_pages: np.ndarray   # int64: its pages never touched while it was open
    ce_arm: np.ndarray     # int64: when it was armed [ns]
    start_ns: int          # the recording's start and end [ns]
    end_ns: int


def _observations(trace, rows: np.ndarray) -> Observations:
    """The trace's windows and touches mapped onto the first recording's object rows (rows:
    this trace's allocation row -> first row, -1 = unmatched; unmatched ones are dropped)."""
    empty_i, empty_f = np.zeros(0, dtype=np.int64), np.zeros(0)
    start, end = int(trace.start_ns), trace_end_ns(trace)
    windows = trace.windows
    if not windows.num_rows:
        return Observations(empty_i, empty_f, empty_i, empty_i, empty_f, empty_i, empty_i,
                            start, end)
    allocs = trace.allocations
    key_of = {(int(p), int(s)): r for r, (p, s) in enumerate(zip(
        column(allocs, "pid", np.uint32).tolist(), column(allocs, "seq", np.uint64).tolist()))}
    wpid = column(windows, "pid", np.uint32)
    wseq = column(windows, "alloc_seq", np.uint64)
    wrow = np.array([rows[key_of[(int(p), int(s))]] if (int(p), int(s)) in key_of else -1
                     for p, s in zip(wpid.tolist(), wseq.tolist())], dtype=np.int64)
    untouched = (column(windows, "pages", np.int64)
                 - column(windows, "touched", np.int64)).clip(min=0)
    keep = wrow >= 0
    ce = (wrow[keep], column(windows, "dwell_ns", np.float64)[keep], untouched[keep],
          column(windows, "arm_ns", np.int64)[keep])
    mapped = sample_objects(trace)
    hit = mapped >= 0
    if not hit.any():
        return Observations(empty_i, empty_f, empty_i, *ce, start, end)
    srow = rows[mapped[hit]]
    delay = sampler_corrected(trace, hit)
    armed = (column(trace.samples, "time_ns", np.int64)[hit]
             - column(trace.samples, "latency", np.int64)[hit] * US)
    ok = srow >= 0
    return Observations(srow[ok], delay[ok], armed[ok], *ce, start, end)


def sampler_corrected(trace, hit: np.ndarray) -> np.ndarray:
    """The touch delays [ns] of the samples selected by hit, less the time the touching thread
    spent in sampled faults since the window was armed: each sampled touch stalls its thread
    for one fault (a swap-in, or a signal for the fault sampler), so a touch that comes after
    k of the thread's sampled faults since the arming (of any window: pageout windows stay
    open together) comes k stalls later than the program alone would have made it (1024
    pages of a sweep stretch it by about 10 ms at 10 us a fault). The stall is the 10th
    percentile of the gaps between consecutive touches of one window (a sweep through
    sampled pages touches them back to back), at most MAX_STALL_NS."""
    samples = trace.samples
    time = column(samples, "time_ns", np.int64)[hit]
    delay = column(samples, "latency", np.int64)[hit] * US
    arms = np.sort(column(trace.windows, "arm_ns", np.int64))
    if not len(arms) or not len(time):
        return delay.astype(np.float64)
    # the window a sample belongs to: the last armed at or before its arm time (us rounding)
    window = np.clip(np.searchsorted(arms, time - delay + US, side="right") - 1, 0, None)
    order = np.lexsort((time, window))
    same = np.diff(window[order]) == 0
    gaps = np.diff(time[order])[same]
    stall = float(min(MAX_STALL_NS, np.percentile(gaps, 10))) if len(gaps) >= 16 else 0.0
    tid = column(samples, "tid", np.uint32)[hit]
    armed_at = time - delay
    rank = np.zeros(len(time))
    for thread in np.unique(tid).tolist():
        mine = tid == thread
        times = np.sort(time[mine])
        rank[mine] = (np.searchsorted(times, time[mine], "left")
                      - np.searchsorted(times, armed_at[mine], "left")).clip(min=0)
    return np.maximum(0.0, delay - rank * stall)


def kaplan_meier(delays: np.ndarray, censor_ns: np.ndarray, censor_pages: np.ndarray
                 ) -> tuple[float, np.ndarray, float]:
    """(H, F on GRID points over [0, H], tail slope) from touch delays (events) and censor
    times with page counts; H = 0 when there is nothing to estimate from."""
    delays = np.asarray(delays, dtype=np.float64)
    censor_ns = np.asarray(censor_ns, dtype=np.float64)
    censor_pages = np.asarray(censor_pages, dtype=np.float64)
    total = len(delays) + float(censor_pages.sum())
    if total <= 0:
        return 0.0, np.zeros(GRID), 0.0
    times = np.concatenate([delays, censor_ns])
    weights = np.concatenate([np.ones(len(delays)), censor_pages])
    order = np.argsort(times, kind="stable")
    at_risk_after = total - np.cumsum(weights[order])          # watched beyond times[order]
    enough = np.flatnonzero(at_risk_after >= min(MIN_AT_RISK, total / 4))
    horizon = float(times[order][enough[-1]]) if len(enough) else float(times.max())
    if horizon <= 0:
        return 0.0, np.zeros(GRID), 0.0
    grid = np.linspace(0.0, horizon, GRID)
    # at risk at t: pages whose delay or censor time is >= t; events in (g[k-1], g[k]]
    ev = np.sort(delays)
    ce = np.sort(censor_ns)
    ce_w = np.concatenate([[0.0], np.cumsum(censor_pages[np.argsort(censor_ns, kind="stable")])])
    ev_upto = np.searchsorted(ev, grid, "right").astype(np.float64)   # events at or before g
    d = np.diff(ev_upto)                                     # events in (g[k-1], g[k]]
    risk = (len(ev) - ev_upto[:-1]) + (ce_w[-1] - ce_w[np.searchsorted(ce, grid[:-1], "right")])
    factor = np.where((risk > 0) & (d > 0),
                      np.clip(1.0 - d / np.where(risk > 0, risk, 1.0), 0.0, None), 1.0)
    survival = np.concatenate([[1.0], np.cumprod(factor)])
    share = concave_majorant(grid, 1.0 - survival)
    half = GRID // 2
    slope = max(0.0, (share[-1] - share[half]) / (grid[-1] - grid[half]))
    return horizon, share, slope


def concave_majorant(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The least concave majorant of the points (x, y) through (x[0], y[0]), at x: the
    Grenander estimate of a distribution function whose density is non-increasing (the
    forward recurrence time's is). x increasing."""
    hull = [0]
    for k in range(1, len(x)):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            # b lies on or below the chord a-k: drop it
            if (y[b] - y[a]) * (x[k] - x[a]) <= (y[k] - y[a]) * (x[b] - x[a]):
                hull.pop()
            else:
                break
        hull.append(k)
    return np.minimum(1.0, np.interp(x, x[hull], y[hull]))


def observations(traces: list) -> tuple[Any, list[Observations]]:
    """The first recording's object table and every recording's observations on its rows
    (a later recording's objects matched by context key, occurrence and size)."""
    table = object_table(traces[0], labels=False)
    n = table.num_rows
    found = []
    for k, trace in enumerate(traces):
        rows = (np.arange(n, dtype=np.int64) if k == 0
                else matched_rows(table, object_table(trace, labels=False)))
        found.append(_observations(trace, rows))
    return table, found


def reuse_curves(traces: list, spans: list[tuple[int, int]] | None = None,
                 observed: tuple[Any, list[Observations]] | None = None) -> ReuseCurves:
    """The curves of the first recording's objects, pooled over all recordings (module
    docstring). Recordings without windows add nothing. With spans ([start, end) ns of the
    first recording, e.g. one plan's phases): the first recording's windows armed within
    them only, and the run's duration is the time they cover. observed: observations(traces),
    when already read (used without spans only)."""
    table, found = (observed if observed is not None and spans is None
                    else observations(traces[:1] if spans is not None else traces))
    if spans is None:
        return curves_of(table, found, [(0.0, 1.0)] * len(found))
    return curves_of(table, found, [spans], absolute=True)


def sliced_curves(traces: list, slices: int, min_armed: int = 1,
                  observed: tuple[Any, list[Observations]] | None = None) -> list[ReuseCurves]:
    """The run as `slices` equal slices of each recording's time, each slice's curves from
    the windows armed in it (pooled over recordings by their share of each one's run), with
    the objects' live shares within the slice; an object armed on fewer than min_armed pages
    in a slice has no curve there. observed: observations(traces), when already read."""
    table, found = observed if observed is not None else observations(traces)
    return [curves_of(table, found, [(k / slices, (k + 1) / slices)] * len(found),
                      min_armed=min_armed)
            for k in range(slices)]


def curves_of(table, found: list[Observations], spans: list, absolute: bool = False,
              min_armed: int = 1) -> ReuseCurves:
    """The curves from the observations of windows armed within spans: per recording one
    (a, b) share of its run [0..1], or (absolute) a list of [start, end) ns of the first
    recording. Live shares and the duration are those of the first recording's span."""
    n = table.num_rows
    events: list[list[np.ndarray]] = [[] for _ in range(n)]
    censored: list[list] = [[] for _ in range(n)]
    durations = []
    for obs, span in zip(found, spans):
        lo, hi = obs.start_ns, obs.end_ns
        ns = (span if absolute else
              [(lo + int((hi - lo) * span[0]), lo + int((hi - lo) * span[1]))])
        durations.append(max(1, sum(max(0, min(e, hi) - max(b, lo)) for b, e in ns)))
        ev_in = in_spans(obs.ev_arm, ns)
        ce_in = in_spans(obs.ce_arm, ns)
        for r in np.unique(obs.ce_row[ce_in]).tolist():
            mine = ce_in & (obs.ce_row == r)
            censored[r].append((obs.ce_dwell[mine], obs.ce_pages[mine]))
        for r in np.unique(obs.ev_row[ev_in]).tolist():
            events[r].append(obs.ev_delay[ev_in & (obs.ev_row == r)])
    horizon = np.zeros(n)
    share = np.zeros((n, GRID))
    slope = np.zeros(n)
    armed = np.zeros(n, dtype=np.int64)
    touched = np.zeros(n, dtype=np.int64)
    for r in range(n):
        if not censored[r]:
            continue
        delays = np.concatenate(events[r]) if events[r] else np.zeros(0)
        cns = np.concatenate([c for c, _ in censored[r]])
        cpg = np.concatenate([p for _, p in censored[r]])
        armed[r] = int(len(delays) + cpg.sum())
        touched[r] = len(delays)
        if armed[r] >= min_armed:
            horizon[r], share[r], slope[r] = kaplan_meier(delays, cns, cpg)
    duration = float(np.mean(durations))
    first = found[0]
    first_spans = (spans[0] if absolute else
                   [(first.start_ns + int((first.end_ns - first.start_ns) * spans[0][0]),
                     first.start_ns + int((first.end_ns - first.start_ns) * spans[0][1]))])
    live = live_shares(table, first.start_ns, first.end_ns, first_spans)
    return ReuseCurves(horizon, share, slope, armed, touched, duration, live)


def live_shares(table, start_ns: int, end_ns: int, spans: list[tuple[int, int]]) -> np.ndarray:
    """The share of the spans' time [start, end) ns each object of the table is live."""
    n = table.num_rows
    alloc = table.column("alloc_ns").to_numpy(zero_copy_only=False).astype(np.float64) \
        if "alloc_ns" in table.column_names else np.zeros(n)
    free = table.column("free_ns").to_numpy(zero_copy_only=False).astype(np.float64) \
        if "free_ns" in table.column_names else np.full(n, -1.0)
    end, start = float(end_ns), float(start_ns)
    free = np.where(np.isnan(free) | (free < 0), end, free)
    lo = np.maximum(alloc, start)
    covered = np.zeros(n)
    for b, e in spans:
        covered += np.clip(np.minimum(free, min(e, end)) - np.maximum(lo, max(b, start)),
                           0.0, None)
    total = sum(max(0.0, min(e, end) - max(b, start)) for b, e in spans)
    return np.clip(covered / max(1.0, total), 0.0, 1.0)
