"""How much of an object's access is a sweep: the share of short forward steps among its samples.

With the fault sampler a sample is the first touch of an armed page, and a window arms a run of
consecutive pages: a thread that sweeps the object touches them in address order, one page after
the other, while random access touches them in any order. So, per object, over the samples of
each thread in time order, the share of successive samples whose page lies 1 to MAX_STEP_PAGES
pages after the previous one says how much of the object's access is a sweep: 0.9 or more for
an array read front to back (the rest are window and thread boundaries) or with short skips
(connected components on a Kronecker graph: 0.83 one page apart, 0.92 within four), well under
0.5 for gathers (BFS on a uniform graph: 0.37). MAX_STEP_PAGES is one 16 KiB folio of 4 KiB pages:
a step that short stays within the folio a swap-in brings, or reaches the next.

Only the samples of the object's dominant phase count (the phase with the most samples of it;
the whole run without phase markers): a graph is read from its file in one sequential pass and
then gathered from at random, and the load's pass must not make the gathers look like a sweep.

Used to decide which objects' slow pages move as large folios on the swap tier (one swap-in
brings several pages in, plan.folios). Samplers whose samples are sparse (perf/PEBS: a sample
per N accesses) rarely see two successive pages, so their shares are low and no object qualifies:
the measure errs on the side of base pages.
"""

from __future__ import annotations

import numpy as np

from objtier.analysis.phase_markers import sample_phases
from objtier.trace.columns import column, page_shift

MIN_STEPS = 32      # successive-sample pairs below which an object's share is unknown (NaN)
MAX_STEP_PAGES = 4  # a forward step of 1..MAX_STEP_PAGES pages counts as sweeping


def forward_step_share(obj: np.ndarray, tid: np.ndarray, time_ns: np.ndarray, page: np.ndarray,
                    group: np.ndarray, n_objects: int) -> np.ndarray:
    """Per object row 0..n_objects-1: among successive samples of the same (object, thread) in
    time order, restricted to each object's dominant group (group: a small integer per sample,
    e.g. its phase; the group with the most samples of the object), the share whose page lies
    1..MAX_STEP_PAGES pages after the previous sample's. NaN where fewer than MIN_STEPS such
    pairs exist.
    Inputs are per mapped sample (obj >= 0); page in pages, time_ns in ns."""
    share = np.full(n_objects, np.nan)
    if len(obj) < 2:
        return share
    obj = np.asarray(obj, dtype=np.int64)
    group = np.asarray(group, dtype=np.int64)
    groups = int(group.max()) + 1
    counts = np.bincount(obj * groups + group, minlength=n_objects * groups)
    dominant = counts.reshape(n_objects, groups).argmax(axis=1)
    keep = group == dominant[obj]
    obj, tid, time_ns, page = obj[keep], np.asarray(tid)[keep], np.asarray(time_ns)[keep], \
        np.asarray(page, dtype=np.int64)[keep]
    order = np.lexsort((time_ns, tid, obj))
    obj, tid, page = obj[order], tid[order], page[order]
    same = (obj[1:] == obj[:-1]) & (tid[1:] == tid[:-1])
    delta = np.diff(page)
    step = same & (delta >= 1) & (delta <= MAX_STEP_PAGES)
    pairs = np.bincount(obj[1:][same], minlength=n_objects)
    steps = np.bincount(obj[1:][step], minlength=n_objects)
    known = pairs >= MIN_STEPS
    share[known] = steps[known] / pairs[known]
    return share


def sequential_shares(trace, mapped: np.ndarray) -> np.ndarray:
    """forward_step_share for every allocation row of a trace (mapped = sample_objects(trace)),
    grouped by phase when the trace has phase markers."""
    n = trace.allocations.num_rows
    hit = mapped >= 0
    if not hit.any():
        return np.full(n, np.nan)
    samples = trace.samples
    if trace.phases.num_rows:
        _, group = np.unique(sample_phases(trace)[hit], return_inverse=True)
    else:
        group = np.zeros(int(hit.sum()), dtype=np.int64)
    page = column(samples, "addr", np.uint64)[hit] >> np.uint64(page_shift(trace))
    return forward_step_share(mapped[hit], column(samples, "tid", np.int64)[hit],
                           column(samples, "time_ns", np.int64)[hit], page.astype(np.int64),
                           group, n)
