"""Samples per page of each object: the input of the `pages` planner.

Pages are the object's *whole* pages, the unit every enforcement acts on: page k of an object
at address A of S bytes is [P + k * page, P + (k + 1) * page) with P = A rounded up to a page,
for 0 <= k < floor((A + S) / page) - ceil(A / page). Samples in the partial first or last page
(shared with a neighbouring heap block) are not counted.

With the fault sampler a sample is the first touch of an armed page, at most one per page per
armed window: a page's count is the number of windows in which it was touched, a measure of
how often it is re-used over the run rather than of how many loads it takes.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from objtier.analysis.objects import column, page_shift, sample_objects

COLUMNS = ("object", "page", "samples")


def page_samples(trace) -> pa.Table:
    """One row per (object, whole page) with at least one sample: object = row of
    trace.allocations, page = index among the object's whole pages, samples = count (weights
    are not applied: each fault sample is one touched window)."""
    mapped = sample_objects(trace)
    hit = mapped >= 0
    if not hit.any():
        return pa.table({"object": pa.array([], pa.int64()), "page": pa.array([], pa.int64()),
                         "samples": pa.array([], pa.int64())})
    shift = np.uint64(page_shift(trace))
    page_bytes = np.uint64(1) << shift
    allocs = trace.allocations
    addr = column(allocs, "addr", np.uint64)
    size = column(allocs, "size", np.uint64)
    lo = (addr + page_bytes - np.uint64(1)) >> shift          # first whole page number
    hi = (addr + size) >> shift                               # one past the last whole page
    obj = mapped[hit]
    page = column(trace.samples, "addr", np.uint64)[hit] >> shift
    inner = (page >= lo[obj]) & (page < hi[obj])
    obj, rel = obj[inner], (page[inner] - lo[obj[inner]]).astype(np.int64)
    span = int(rel.max()) + 1 if len(rel) else 1
    keys, counts = np.unique(obj.astype(np.int64) * span + rel, return_counts=True)
    return pa.table({"object": pa.array(keys // span), "page": pa.array(keys % span),
                     "samples": pa.array(counts.astype(np.int64))})
