"""Time series: live bytes over time (seed Fig. 7), counters (Fig. 9), per-bin sample counts.

Times are returned as seconds relative to trace.start_ns.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from objtier.trace.columns import column


def live_bytes(objects: pa.Table, start_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """Step function of the bytes of live objects: (time [s], bytes after each event)."""
    size = column(objects, "size", np.float64)
    t_alloc = column(objects, "alloc_ns", np.float64)
    freed = objects.column("free_ns").is_valid().to_numpy(zero_copy_only=False)
    t_free = np.nan_to_num(objects.column("free_ns").to_numpy(zero_copy_only=False).astype(np.float64))
    times = np.concatenate([t_alloc, t_free[freed]])
    deltas = np.concatenate([size, -size[freed]])
    order = np.argsort(times, kind="stable")
    return (times[order] - start_ns) / 1e9, np.cumsum(deltas[order])


def counter_series(counters: pa.Table, start_ns: int) -> dict[str, tuple[np.ndarray, np.ndarray, str]]:
    """name -> (time [s], value, unit) for every counter, time-sorted."""
    out = {}
    if not counters.num_rows:
        return out
    names = counters.column("name").to_numpy(zero_copy_only=False)
    units = counters.column("unit").to_numpy(zero_copy_only=False)
    t = column(counters, "time_ns", np.float64)
    v = column(counters, "value", np.float64)
    for name in np.unique(names).tolist():
        sel = np.flatnonzero(names == name)
        order = sel[np.argsort(t[sel], kind="stable")]
        out[name] = ((t[order] - start_ns) / 1e9, v[order], str(units[sel[0]]))
    return out


def is_cumulative(name: str) -> bool:
    """vmstat counters are cumulative since boot: plot their per-interval deltas."""
    return name.startswith("vmstat.")


def binned_counts(times_s: np.ndarray, edges: np.ndarray) -> np.ndarray:
    return np.histogram(times_s, bins=edges)[0]


def window_rates(trace, shift: int) -> dict[str, np.ndarray] | None:
    """The fault sampler's scan windows as what the program did: per window, its object row
    (of trace.allocations; -1 unknown), time span [t0, t1] in s since start, page span
    [page0, page1) within the object (pages of 1 << shift bytes), and the touch rate it saw
    (first touches per watched page-second: touched / (touched_ns + untouched * dwell_ns)).
    None when the recording has no windows. Unlike the samples' scatter, which follows the
    scanner's sweep, a window says both where the program touched and where it did not."""
    windows = trace.windows
    if windows.num_rows == 0:
        return None
    allocs = trace.allocations
    key = (column(allocs, "pid", np.uint64) << np.uint64(40)) | column(allocs, "seq", np.uint64)
    order = np.argsort(key, kind="stable")
    w_key = (column(windows, "pid", np.uint64) << np.uint64(40)) | column(windows, "alloc_seq",
                                                                            np.uint64)
    at = np.clip(np.searchsorted(key[order], w_key), 0, max(len(order) - 1, 0))
    found = (key[order][at] == w_key) if len(order) else np.zeros(len(w_key), bool)
    obj = np.where(found, order[at] if len(order) else -1, -1).astype(np.int64)
    base = column(allocs, "addr", np.uint64)
    start = column(windows, "start", np.uint64)
    # windows of no object (a watched site's arena, analysis.site_watch) keep page 0
    base_of = base[np.maximum(obj, 0)] if len(base) else np.zeros(len(obj), np.uint64)
    rel = np.where(obj >= 0, (start - base_of) >> np.uint64(shift), 0)
    pages = column(windows, "pages", np.float64)
    touched = column(windows, "touched", np.float64)
    dwell = column(windows, "dwell_ns", np.float64)
    exposure_s = (column(windows, "touched_ns", np.float64) + (pages - touched) * dwell) / 1e9
    t0 = (column(windows, "arm_ns", np.float64) - trace.start_ns) / 1e9
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(exposure_s > 0, touched / exposure_s, 0.0)
    return {"object": obj, "t0": t0, "t1": t0 + dwell / 1e9, "page0": rel.astype(np.int64),
            "page1": rel.astype(np.int64) + pages.astype(np.int64), "rate": rate}


def window_grid(rates: dict[str, np.ndarray], rows: np.ndarray, edges: np.ndarray,
                row_of_window: np.ndarray) -> np.ndarray:
    """Mean touch rate per (row, time bin) over the windows overlapping it, each weighted by
    its overlap [page-s]; NaN where no window watched. row_of_window: row per window (-1 =
    not drawn); rows: number of rows (array of row ids)."""
    n_rows, n_bins = len(rows), len(edges) - 1
    num = np.zeros((n_rows, n_bins))
    den = np.zeros((n_rows, n_bins))
    pages = (rates["page1"] - rates["page0"]).astype(np.float64)
    for w in np.flatnonzero(row_of_window >= 0):
        lo = np.clip(np.searchsorted(edges, rates["t0"][w], side="right") - 1, 0, n_bins - 1)
        hi = np.clip(np.searchsorted(edges, rates["t1"][w], side="left"), lo + 1, n_bins)
        overlap = (np.minimum(edges[lo + 1:hi + 1], rates["t1"][w])
                   - np.maximum(edges[lo:hi], rates["t0"][w])).clip(min=1e-9) * pages[w]
        num[row_of_window[w], lo:hi] += overlap * rates["rate"][w]
        den[row_of_window[w], lo:hi] += overlap
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.nan)
