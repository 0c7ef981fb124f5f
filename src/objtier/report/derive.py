"""What a recording can support, for the report's per-page figures: the sampler as recorded,
how often the window samplers watched each page, touches per page normalised by that watching
(or the reason it is withheld), and reuse as a distribution of per-page values.

Pure functions of the trace and its objects table. Each result states whether its numbers
are counts (sampled or exact) or estimates, and carries the one line the page shows when the
recording cannot support the figure.

Window samplers (fault, pageout, wp) arm a page for one scan window and record its first
touch in that window only: a page can show at most one touch per watch, so its sampled
touches count how often the scanner came by as much as how often the program touched it.
The WINDOW records say how many pages each window armed; the scan pattern spreads those
evenly over an object's pages (sampler_scan.h), so an object's armed page-watches / its pages
is how often each of its pages was watched on average (W, watches per page).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from objtier.analysis import timeline
from objtier.analysis.pages import outside_cache_mask, page_keys
from objtier.trace.columns import column, distinct_counts
from objtier.trace.format import SAMPLE_SOURCES

WINDOW_SAMPLERS = ("fault", "pageout", "wp")   # arm pages in windows, see first touches only
MIN_WATCHES = 1.0      # mean watches per page below which touches per page are withheld
SHARE_BINS = 10        # bins of the touched-share histogram over (0, 1]
REUSE_BINS = 16        # log-spaced bins of the reuse histograms
COUNT_EDGES = [1, 2, 3, 4, 5, 9, 17, 33, 65]   # sampled touches per page: [1], [2], .., [65, inf)


def recorded_sampler(trace) -> str:
    """The sampler that made the recording, as recorded: the source most of its samples name
    (SAMPLE_SOURCES: "pageout", "perf-pebs", ...), else its SAMPLER_STATS, else the
    processes' OBJTIER_SAMPLER setting; "unknown" when the trace says nothing."""
    for table in (trace.samples, trace.sampler_stats):
        source = column(table, "source", np.int64) if table.num_rows else np.zeros(0, np.int64)
        if len(source):
            values, counts = np.unique(source, return_counts=True)
            return SAMPLE_SOURCES.get(int(values[np.argmax(counts)]), "unknown")
    configured = sorted({p.config.get("OBJTIER_SAMPLER", "") for p in trace.processes} - {""})
    return "/".join(configured) or "unknown"


def is_window_sampler(sampler: str) -> bool:
    return sampler in WINDOW_SAMPLERS


@dataclass(frozen=True)
class Watching:
    """How often a window sampler watched the tracked objects' pages."""

    armed: np.ndarray      # per object row: armed page-watches (sum of its windows' pages)
    pages: np.ndarray      # per object row: pages its bytes span (partial pages included)
    windows: int           # WINDOW records

    @property
    def per_object(self) -> np.ndarray:
        """Mean watches per page of each object (W)."""
        return self.armed / self.pages

    @property
    def mean(self) -> float:
        """Mean watches per page over every tracked object's pages."""
        total = float(self.pages.sum())
        return float(self.armed.sum()) / total if total else 0.0


def watching(trace, objects: pa.Table, shift: int) -> Watching | None:
    """Per-object watching from the WINDOW records; None when the recording has none."""
    rates = timeline.window_rates(trace, shift)
    if rates is None:
        return None
    n = objects.num_rows
    obj = rates["object"]
    known = obj >= 0
    armed = np.bincount(obj[known], weights=(rates["page1"] - rates["page0"])[known]
                        .astype(np.float64), minlength=n)[:n]
    addr = column(objects, "addr", np.uint64)
    last = addr + np.maximum(column(objects, "size", np.uint64), np.uint64(1)) - np.uint64(1)
    pages = ((last >> np.uint64(shift)) - (addr >> np.uint64(shift)) + np.uint64(1)) \
        .astype(np.float64)
    return Watching(armed, pages, len(obj))


@dataclass(frozen=True)
class Distribution:
    """A figure's data: a histogram (bins with labels, counts, shares) and the sorted values
    behind its CDF; or `reason` (one line) when the recording cannot support it."""

    reason: str | None = None
    table: pa.Table | None = None       # bin, lo, hi, pages, share (shares of `total`)
    values: np.ndarray | None = None    # sorted per-page values (the CDF's points)
    total: int = 0                      # pages (or page-watches) the shares are of
    axis: str = ""                      # what a value is, with its unit
    estimated: bool = False             # True: values are estimates, not counts
    caption: str = ""                   # how the values were obtained, for the page
    title: str = ""                     # what the figure shows (without its number)
    bin_axis: str = ""                  # the histogram's axis, when not `axis`
    of: str = "pages"                   # what `total` and the shares count


def _bins(labels, lo, hi, counts, total) -> pa.Table:
    counts = np.asarray(counts, np.int64)
    return pa.table({"bin": labels, "lo": np.asarray(lo, np.float64),
                     "hi": np.asarray(hi, np.float64), "pages": counts,
                     "share": counts / total if total else np.zeros(len(counts))})


def _rate_needed(trace, mean: float) -> str:
    """The --rate at which this run would have watched each page MIN_WATCHES times."""
    rates = {p.config.get("OBJTIER_RATE", "") for p in trace.processes} - {""}
    if len(rates) != 1 or mean <= 0:
        return ""
    rate = float(rates.pop())
    return f" (at least --rate {int(np.ceil(rate * MIN_WATCHES / mean))} for a run this long)"


def touches_per_page(trace, mapped: np.ndarray, objects: pa.Table, shift: int,
                     sampler: str, watch: Watching | None) -> Distribution:
    """Touches per page as far as the recording can tell (see the module docstring).

    Window samplers: per page of each object watched at least MIN_WATCHES times on average,
    the share of its watches in which it was touched, estimated as its sampled touches / its
    object's W (capped at 1; pages without a sample count as 0). Withheld when the pages were
    watched fewer than MIN_WATCHES times on average, or the recording has no windows.
    Other samplers: sampled touches per page (outside the caches when levels are known)."""
    samples = trace.samples
    if samples.num_rows == 0:
        return Distribution(reason="no samples: exact counts are per object and context, not "
                                   "per page (record with --trace-limit N for an address trace)")
    if is_window_sampler(sampler):
        if watch is None:
            return Distribution(reason=(
                f"the {sampler} sampler records a page's first touch in each window that "
                f"watches it, and this recording has no scan windows to tell how often each "
                f"page was watched; sampled touches per page would count the scanner's visits"))
        mean = watch.mean
        if mean < MIN_WATCHES:
            return Distribution(reason=(
                f"not enough watching to tell touches per page: each page was watched "
                f"{mean:.2g} times on average ({int(watch.armed.sum())} page-watches by the "
                f"{sampler} sampler over {int(watch.pages.sum())} pages of tracked objects), "
                f"and a page shows at most one touch per watch; record longer or with a "
                f"higher --rate{_rate_needed(trace, mean)}"))
        per_obj = watch.per_object
        use = per_obj >= MIN_WATCHES
        addr = column(objects, "addr", np.uint64)
        hit = mapped >= 0
        obj = mapped[hit]
        page = column(samples, "addr", np.uint64)[hit] >> np.uint64(shift)
        rel = (page - (addr[obj] >> np.uint64(shift))).astype(np.int64)
        keep = use[obj] & (rel >= 0) & (rel < watch.pages[obj])
        obj, rel = obj[keep], rel[keep]
        span = int(watch.pages.max()) + 1
        keys, counts = distinct_counts(obj.astype(np.int64) * span + rel)
        share = np.minimum(counts / per_obj[keys // span], 1.0)
        untouched = int(watch.pages[use].sum()) - len(keys)
        values = np.sort(np.concatenate([np.zeros(max(untouched, 0)), share]))
        edges = np.linspace(0.0, 1.0, SHARE_BINS + 1)
        inner = np.histogram(share, bins=edges)[0]
        labels = ["0 %"] + [f"{100 * a:.0f}-{100 * b:.0f} %" for a, b in zip(edges[:-1],
                                                                              edges[1:])]
        total = len(values)
        table = _bins(labels, [0.0, *edges[:-1]], [0.0, *edges[1:]],
                      [max(untouched, 0), *inner], total)
        skipped = int((~use & (watch.armed > 0)).sum())
        caption = (f"Estimated: a page's sampled touches / the mean watches per page of its "
                   f"object, over the {total} pages of {int(use.sum())} objects watched at "
                   f"least {MIN_WATCHES:g}× per page (all objects: {mean:.2g}× on "
                   f"average); capped at 100 %.")
        if skipped:
            caption += f" {skipped} objects watched less often are left out."
        return Distribution(table=table, values=values, total=total, estimated=True,
                            axis="share of its watches in which the page was touched (%)",
                            caption=caption)
    keys = page_keys(trace, outside_cache_mask(samples))
    _, counts = distinct_counts(keys)
    if not len(counts):
        return Distribution(reason="no samples outside the caches")
    edges = COUNT_EDGES + [np.inf]
    inner = np.histogram(counts, bins=edges)[0]
    labels = [str(a) if b == a + 1 else (f"{a}+" if np.isinf(b) else f"{a}-{int(b) - 1}")
              for a, b in zip(edges[:-1], edges[1:])]
    exact = sampler == "trace"
    caption = ("Exact: every access of the recorded address trace (its first N accesses)."
               if exact else
               f"Sampled ({sampler}): a page's count is its accesses times the sampling "
               f"rate, so a page seen once may be accessed many times.")
    return Distribution(table=_bins(labels, edges[:-1], edges[1:], inner, len(counts)),
                        values=np.sort(counts).astype(np.float64), total=len(counts),
                        axis=("accesses per page (count)" if exact
                              else "sampled touches per page (count)"), caption=caption)


def _log_bins(values: np.ndarray, unit: str, scale: float) -> tuple[list, np.ndarray,
                                                                     np.ndarray, np.ndarray]:
    """Log-spaced histogram of positive `values` [s], labels in `unit` (value / scale)."""
    positive = values[values > 0]
    lo = float(positive.min()) if len(positive) else 1e-6
    hi = float(values.max()) if len(values) else 1.0
    edges = np.geomspace(lo, max(hi, lo * 1.0001), REUSE_BINS + 1)
    edges[0] = 0.0
    counts = np.histogram(values, bins=edges)[0]
    labels = [f"≤ {b / scale:.3g} {unit}" for b in edges[1:]]
    return labels, edges[:-1], edges[1:], counts


def reuse(trace, mapped: np.ndarray, obj: int | None, sampler: str, shift: int,
          intervals: np.ndarray) -> Distribution:
    """The reuse figure's data for object `obj` (the hottest).

    Window samplers: the time from a window's arming to each armed page's first touch [s]
    (sample latency), over all the object's armed page-watches; the CDF tops out at the
    share touched within the window, the rest were not touched while watched. A measured
    distribution; for touches that arrive at random (Poisson) its mean is the mean interval
    between touches, for periodic ones half of it. Two sampled touches of a window-watched
    page are the scanner's revisit apart, so the seed's reuse interval is not used.
    Other samplers: `intervals` [s], between the two touches of each page of obj touched
    exactly twice (seed Fig. 5)."""
    if obj is None or trace.samples.num_rows == 0:
        return Distribution(reason="no samples: exact counts are per object and context, not "
                                   "per page (record with --trace-limit N for an address trace)"
                            if trace.samples.num_rows == 0 else "no object has samples")
    if is_window_sampler(sampler):
        rates = timeline.window_rates(trace, shift)
        if rates is None:
            return Distribution(reason=(
                f"the {sampler} sampler sees a page only while a window watches it, so two "
                f"sampled touches are the scanner's revisit apart, and this recording has no "
                f"scan windows to measure the time to a first touch from"))
        armed = int((rates["page1"] - rates["page0"])[rates["object"] == obj].sum())
        lat = column(trace.samples, "latency", np.float64)[mapped == obj] / 1e6   # us -> s
        if armed == 0 or not len(lat):
            return Distribution(reason=f"no window of the {sampler} sampler saw object {obj} "
                                       f"touched")
        labels, lo, hi, counts = _log_bins(lat, "ms", 1e-3)
        armed = max(armed, len(lat))
        caption = (f"Measured by the {sampler} sampler: time from arming to the first touch "
                   f"of each armed page of object {obj}, {len(lat)} touched of {armed} "
                   f"page-watches ({100 * len(lat) / armed:.1f} %); the others were not "
                   f"touched while watched. For touches at random times this time averages "
                   f"the interval between touches; for periodic touches, half of it.")
        return Distribution(table=_bins(labels, lo, hi, counts, armed), values=np.sort(lat),
                            total=armed, axis="time from arming to first touch (s)",
                            bin_axis="time from arming to first touch (ms, bin's upper edge)",
                            of="page-watches",
                            caption=caption, title=f"time from arming to first touch, pages "
                                                   f"of object {obj}")
    if not len(intervals):
        return Distribution(reason=f"object {obj} has no page touched exactly twice")
    labels, lo, hi, counts = _log_bins(intervals, "ms", 1e-3)
    what = "accesses" if sampler == "trace" else f"sampled touches ({sampler})"
    caption = (f"Interval between the two {what} of each of the {len(intervals)} pages of "
               f"object {obj} touched exactly twice.")
    return Distribution(table=_bins(labels, lo, hi, counts, len(intervals)),
                        values=np.sort(intervals), total=len(intervals),
                        axis="interval between the two touches (s)", caption=caption,
                        bin_axis="interval between the two touches (ms, bin's upper edge)",
                        title=f"reuse interval of the pages of object {obj} touched twice")
