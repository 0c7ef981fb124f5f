"""Which objects' slow pages move as large folios on the swap tier.

A page swapped in from zram costs a fault, a memory-cgroup charge (which reclaims, i.e.
compresses, another page) and a decompression. When the kernel enables a large-folio size for
madvised memory (/sys/kernel/mm/transparent_hugepage/hugepages-<size>kB/enabled = madvise) and
an object's pages were faulted in as such folios (MADV_HUGEPAGE before first touch), each
swap-out and swap-in moves the whole folio: for an array swept front to back, one fault brings
in the next several pages that the sweep needs anyway. For gathered data it brings in pages that
are not needed and evicts pages that are: measured on uniform BFS, 16 KiB folios took 2.4x the
pages swapped in (docs/benchmarks.md, "Large folios for swept objects").

So the plan names the objects that are swept (their share of short forward steps,
analysis.sequential, at least THRESHOLD) and have a slow part in some phase (a wholly fast object never swaps); the
runtime advises their planned-slow runs MADV_HUGEPAGE at allocation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from objtier.plan.placement import Placement
from objtier.plan.table import ObjectTable

THRESHOLD = 0.9  # share of short forward steps from which an object counts as swept


def large_folio_objects(objects: ObjectTable, placements: dict[str, Placement]
                        ) -> list[dict[str, Any]]:
    """Plan records for the swept objects with a slow part: context_key, occurrence, size_min,
    size_max (the object's size), sequential share, label. Empty without a sequential column.
    Sorted by context key, then occurrence."""
    if objects.sequential is None or len(objects) == 0:
        return []
    slow_somewhere = np.zeros(len(objects), dtype=bool)
    for placement in placements.values():
        rows = objects.index_of(placement.object)
        found = rows >= 0
        part = placement.fast_bytes[found] < objects.size[rows[found]]
        slow_somewhere[rows[found][part]] = True
    with np.errstate(invalid="ignore"):
        swept = objects.sequential >= THRESHOLD
    chosen = np.flatnonzero(swept & slow_somewhere & objects.plannable)
    records = [{"context_key": str(objects.context_key[i]),
                "occurrence": int(objects.occurrence[i]),
                "size_min": int(objects.size[i]), "size_max": int(objects.size[i]),
                "sequential": round(float(objects.sequential[i]), 4),
                "label": str(objects.label[i])} for i in chosen.tolist()]
    records.sort(key=lambda r: (r["context_key"], r["occurrence"]))
    return records


# an object's predicted share of the plan's swap-ins from which large folios are named: they
# can at most spare the object's own swap-ins, and naming any keeps the runtime in the run
# (a plan that does nothing else runs the program alone, pipeline). DuckDB at 70 %, 3 repeats,
# 2026-12-02: one 3 MiB swept object of a 293 MiB footprint named, the runtime in the run,
# 0.86x the kernel with 1.9x its swap-ins.
MIN_SHARE = 0.10


def worth_naming(records: list[dict[str, Any]], objects: ObjectTable,
                 predicted: np.ndarray) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(kept, dropped): the large-folio records whose object the model predicts at least
    MIN_SHARE of the plan's swap-ins (predicted: per object of `objects`, estimated)."""
    total = float(np.sum(predicted))
    row = {(str(k), int(o)): i for i, (k, o) in
           enumerate(zip(objects.context_key.tolist(), objects.occurrence.tolist()))}
    kept, dropped = [], []
    for record in records:
        i = row.get((record["context_key"], int(record["occurrence"])))
        share = float(predicted[i]) / total if i is not None and total > 0 else 0.0
        (kept if share >= MIN_SHARE else dropped).append(record)
    return kept, dropped
