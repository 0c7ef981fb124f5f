"""Per-page metrics: touches per page (seed Fig. 4) and reuse intervals of pages touched
exactly twice in the hottest object (seed Fig. 5).

A page is (pid, address >> page shift). Only samples served outside the caches count when the
sampler reports levels (seed §5.2); with level-less samplers (fault, trace) every sample counts.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from objtier.trace.columns import CACHE_LEVELS, column, distinct_counts, level_mask, page_shift


def outside_cache_mask(samples: pa.Table) -> np.ndarray:
    level = column(samples, "level", np.uint8)
    return ~level_mask(level, CACHE_LEVELS)


def page_keys(trace, mask: np.ndarray) -> np.ndarray:
    """One int64 key per sample selected by `mask`: its page, (pid << 36) | address >> shift."""
    samples = trace.samples
    pid = column(samples, "pid", np.uint32)[mask].astype(np.int64)
    page = (column(samples, "addr", np.uint64)[mask] >> np.uint64(page_shift(trace))).astype(np.int64)
    # 48-bit addresses: page numbers < 2**36; pids < 2**22 keep the key below 2**58.
    return (pid << 36) | page


def touch_distribution(trace) -> pa.Table:
    """Pages by number of sampled touches: rows touches "1", "2", "3+" with pages and share."""
    keys = page_keys(trace, outside_cache_mask(trace.samples))
    _, counts = distinct_counts(keys)
    bins = np.array([(counts == 1).sum(), (counts == 2).sum(), (counts >= 3).sum()], np.int64)
    total = int(bins.sum())
    return pa.table({"touches": ["1", "2", "3+"], "pages": bins,
                     "share": bins / total if total else np.zeros(3)})


def reuse_intervals(trace, mapped: np.ndarray, obj: int) -> np.ndarray:
    """Seconds between the two touches of each page of `obj` touched exactly twice."""
    mask = (mapped == obj) & outside_cache_mask(trace.samples)
    keys = page_keys(trace, mask)
    t = column(trace.samples, "time_ns", np.uint64)[mask]
    if not len(keys):
        return np.zeros(0)
    order = np.lexsort((t, keys))
    keys, t = keys[order], t[order]
    # keys are sorted: each page's touches are consecutive, in time order
    starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
    counts = np.diff(np.append(starts, len(keys)))
    two = starts[counts == 2]
    return (t[two + 1] - t[two]).astype(np.float64) / 1e9


def reuse_statistics(intervals: np.ndarray) -> pa.Table:
    """min, p25, p50, p75, max, mean, std (population) of reuse intervals [s]."""
    names = ["min", "p25", "p50", "p75", "max", "mean", "std"]
    if not len(intervals):
        return pa.table({"statistic": names, "seconds": pa.array([None] * 7, pa.float64())})
    values = [intervals.min(), *np.percentile(intervals, [25, 50, 75]), intervals.max(),
              intervals.mean(), intervals.std()]
    return pa.table({"statistic": names, "seconds": np.array(values, dtype=np.float64)})
