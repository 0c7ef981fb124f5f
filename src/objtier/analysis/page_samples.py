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

from objtier.analysis.mapping import sample_objects
from objtier.analysis.objects import object_table
from objtier.analysis.phase_markers import sample_phases
from objtier.trace.columns import column, page_shift

COLUMNS = ("object", "page", "samples")


def page_samples(trace, phases: list[str] | None = None) -> pa.Table:
    """One row per (object, whole page) with at least one sample: object = row of
    trace.allocations, page = index among the object's whole pages, samples = count (weights
    are not applied: each fault sample is one touched window). With phases, only the samples
    taken in those phases ("*": outside every phase; analysis.phases.sample_phases)."""
    mapped = sample_objects(trace)
    hit = mapped >= 0
    if phases is not None:
        hit &= np.isin(sample_phases(trace), list(phases))
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
    return _per_page(obj.astype(np.int64), rel, np.ones(len(rel), dtype=np.int64))


def _per_page(obj: np.ndarray, page: np.ndarray, count: np.ndarray) -> pa.Table:
    """The page-samples table of (object, page, count) rows, counts of equal pairs summed,
    sorted by object, then page."""
    span = int(page.max()) + 1 if len(page) else 1
    keys, inverse = np.unique(obj * span + page, return_inverse=True)
    total = np.bincount(inverse, weights=count, minlength=len(keys)).astype(np.int64)
    return pa.table({"object": pa.array(keys // span, pa.int64()),
                     "page": pa.array(keys % span, pa.int64()), "samples": pa.array(total)})


def matched_rows(first: pa.Table, other: pa.Table) -> np.ndarray:
    """For each object row of `other` (an object table of another recording of the program),
    the row of `first` with the same context key, occurrence and size; -1 where there is none
    or the context is unknown (key 0)."""
    def identities(table: pa.Table) -> list[tuple]:
        return list(zip(table.column("context_key").to_pylist(),
                        table.column("occurrence").to_pylist(), table.column("size").to_pylist()))

    index = {ident: row for row, ident in enumerate(identities(first)) if ident[0]}
    return np.array([index.get(ident, -1) for ident in identities(other)], dtype=np.int64)


def merged_page_samples(traces: list, phases: list[str] | None = None) -> pa.Table:
    """Samples per page of several recordings of one program, on the objects of the first: an
    object of a later recording adds to the first's object with the same context key,
    occurrence and size (objects it cannot be matched to, or of unknown context, are left
    out). More recordings give each page more armed windows, hence counts that separate pages
    re-used often from pages re-used seldom. phases: as for page_samples."""
    first = page_samples(traces[0], phases)
    if len(traces) == 1:
        return first
    first_objects = object_table(traces[0], labels=False)
    objects = [first.column("object").to_numpy()]
    pages = [first.column("page").to_numpy()]
    counts = [first.column("samples").to_numpy()]
    for trace in traces[1:]:
        rows = matched_rows(first_objects, object_table(trace, labels=False))
        more = page_samples(trace, phases)
        obj = rows[more.column("object").to_numpy()] if more.num_rows else np.zeros(0, np.int64)
        keep = obj >= 0
        objects.append(obj[keep])
        pages.append(more.column("page").to_numpy()[keep])
        counts.append(more.column("samples").to_numpy()[keep])
    obj, page, count = (np.concatenate(x).astype(np.int64) for x in (objects, pages, counts))
    return _per_page(obj, page, count)


def dominant_phase_samples(per_phase: dict[str, pa.Table], accesses: dict[str, np.ndarray]
                           ) -> pa.Table:
    """One page-samples table for planning every phase: each object's rows from the phase whose
    accesses of it are the highest (per_phase: phase -> its page-samples table; accesses: phase
    -> accesses per object row, as the planner's phase vectors; ties go to the phase first in
    the dict). Ranking a split object's pages by this in every phase makes which pages are fast
    follow one order through the run, the phases deciding only how many, so that a phase change
    moves only the difference instead of trading one locked set for another; and the order is
    that of the phase that matters most to the object, not diluted by phases that touch it a
    little (a load that reads every page once)."""
    names = list(per_phase)
    dominant = np.argmax(np.stack([np.asarray(accesses[name], dtype=np.float64)
                                   for name in names]), axis=0)
    pieces = []
    for index, name in enumerate(names):
        table = per_phase[name]
        keep = dominant[table.column("object").to_numpy()] == index
        pieces.append(table.filter(pa.array(keep)))
    return _per_page(*(np.concatenate([t.column(c).to_numpy() for t in pieces]).astype(np.int64)
                       for c in COLUMNS))


def phase_page_order(traces: list, merge) -> pa.Table:
    """dominant_phase_samples of several recordings for a phase merge (plan.PhaseMerge): each
    surviving phase's page samples over the phases it covers, and its accesses per object."""
    names = merge.survivors()
    return dominant_phase_samples({name: merged_page_samples(traces, merge.members(name))
                                   for name in names},
                                  {name: merge.vectors[name] for name in names})
