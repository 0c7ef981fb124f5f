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
An object no window armed has no curve (armed = 0): planning.model_curves counts it as never
resident (the scan reaches every tracked object each pass, and arms only resident pages).
The delays are corrected for the sampler's own stalls first (sampler_corrected).
Several recordings of one program are pooled: an object of a later recording adds its windows
and samples to the first recording's object with the same context key, occurrence and size.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def _observations(trace, rows: np.ndarray, n: int,
                  spans: list[tuple[int, int]] | None = None) -> tuple[list, list]:
    """Per object row (of the first recording, via rows: this trace's allocation row -> first
    row, -1 = unmatched): (event delays [ns], censor times [ns] with their page counts), of
    the windows armed within spans (all when None)."""
    events: list[list[np.ndarray]] = [[] for _ in range(n)]
    censored: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(n)]
    windows = trace.windows
    if not windows.num_rows:
        return events, censored
    armed_in = in_spans(column(windows, "arm_ns", np.int64), spans)
    allocs = trace.allocations
    key_of = {(int(p), int(s)): r for r, (p, s) in enumerate(zip(
        column(allocs, "pid", np.uint32).tolist(), column(allocs, "seq", np.uint64).tolist()))}
    wpid = column(windows, "pid", np.uint32)
    wseq = column(windows, "alloc_seq", np.uint64)
    wrow = np.array([rows[key_of[(int(p), int(s))]] if (int(p), int(s)) in key_of else -1
                     for p, s in zip(wpid.tolist(), wseq.tolist())], dtype=np.int64)
    dwell = column(windows, "dwell_ns", np.float64)
    untouched = (column(windows, "pages", np.int64)
                 - column(windows, "touched", np.int64)).clip(min=0)
    for r in np.unique(wrow[(wrow >= 0) & armed_in]).tolist():
        mine = (wrow == r) & armed_in
        censored[r].append((dwell[mine], untouched[mine]))
    mapped = sample_objects(trace)
    hit = mapped >= 0
    if hit.any():
        srow = rows[mapped[hit]]
        delay = sampler_corrected(trace, hit)
        armed = (column(trace.samples, "time_ns", np.int64)[hit]
                 - column(trace.samples, "latency", np.int64)[hit] * US)
        ok = (srow >= 0) & in_spans(armed, spans)
        for r in np.unique(srow[ok]).tolist():
            events[r].append(delay[ok & (srow == r)])
    return events, censored


def sampler_corrected(trace, hit: np.ndarray) -> np.ndarray:
    """The touch delays [ns] of the samples selected by hit, less the time the program spent
    in the window's own earlier sampled faults: each sampled touch stalls the touching thread
    for one fault (a swap-in, or a signal for the fault sampler), so the k-th touch of a
    window comes k stalls later than the program alone would have made it (a window of 1024
    pages of a sweep stretches it by about 10 ms at 10 us a fault). The stall is the 10th
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
    first = np.concatenate([[True], ~same])
    start = np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))
    rank = np.empty(len(order), dtype=np.float64)
    rank[order] = np.arange(len(order)) - start            # earlier touches in its window
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
    survival = np.ones(GRID)
    s = 1.0
    for k in range(1, GRID):
        lo, hi = grid[k - 1], grid[k]
        d = float(np.searchsorted(ev, hi, "right") - np.searchsorted(ev, lo, "right"))
        risk_ev = len(ev) - np.searchsorted(ev, lo, "right")
        risk_ce = ce_w[-1] - ce_w[np.searchsorted(ce, lo, "right")]
        risk = float(risk_ev + risk_ce)
        if risk > 0 and d > 0:
            s *= max(0.0, 1.0 - d / risk)
        survival[k] = s
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


def reuse_curves(traces: list, spans: list[tuple[int, int]] | None = None) -> ReuseCurves:
    """The curves of the first recording's objects, pooled over all recordings (module
    docstring). Recordings without windows add nothing. With spans ([start, end) ns of the
    first recording, e.g. one plan's phases): the first recording's windows armed within
    them only, and the run's duration is the time they cover."""
    first = traces[0]
    if spans is not None:
        traces = traces[:1]
    table = object_table(first, labels=False)
    n = table.num_rows
    events: list[list[np.ndarray]] = [[] for _ in range(n)]
    censored: list[list] = [[] for _ in range(n)]
    durations = []
    for k, trace in enumerate(traces):
        rows = (np.arange(n, dtype=np.int64) if k == 0
                else matched_rows(table, object_table(trace, labels=False)))
        ev, ce = _observations(trace, rows, n, spans)
        for r in range(n):
            events[r].extend(ev[r])
            censored[r].extend(ce[r])
        lo, hi = int(trace.start_ns), trace_end_ns(trace)
        covered = (hi - lo if spans is None else
                   sum(max(0, min(e, hi) - max(b, lo)) for b, e in spans))
        durations.append(max(1, covered))
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
        horizon[r], share[r], slope[r] = kaplan_meier(delays, cns, cpg)
    duration = float(np.mean(durations))
    alloc = table.column("alloc_ns").to_numpy(zero_copy_only=False).astype(np.float64) \
        if "alloc_ns" in table.column_names else np.zeros(n)
    free = table.column("free_ns").to_numpy(zero_copy_only=False).astype(np.float64) \
        if "free_ns" in table.column_names else np.full(n, -1.0)
    end = float(trace_end_ns(first))
    start = float(first.start_ns)
    free = np.where(np.isnan(free) | (free < 0), end, free)
    lo = np.maximum(alloc, start)
    if spans is None:
        live = (free - lo) / max(1.0, end - start)
    else:                   # the share of the spans' time each object is live
        covered = np.zeros(n)
        for b, e in spans:
            covered += np.clip(np.minimum(free, min(e, end)) - np.maximum(lo, max(b, start)),
                               0.0, None)
        live = covered / max(1.0, sum(max(0.0, min(e, end) - max(b, start)) for b, e in spans))
    live = np.clip(live, 0.0, 1.0)
    return ReuseCurves(horizon, share, slope, armed, touched, duration, live)
