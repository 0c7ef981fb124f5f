"""`pages`: spill's choice of objects, but the object it splits keeps its most-touched pages
fast instead of its first ones.

For the swap tier. spill decides per object, by density (accesses per byte), and fills the
budget by splitting the first object that does not fit: a fast prefix, a slow rest. Which pages
of that object are fast decides the swap-ins, and objects are not uniform: in a graph search
the adjacency lists of some vertices are read in many steps, those of others in one, and where
they lie in `neighbors` has nothing to do with address order. `pages` takes spill's placement
(with or without backfill) and gives each split object the same number of fast pages, chosen by
their own samples (objtier.analysis.page_samples) — with the fault sampler, the number of armed
windows in which the page was touched, a measure of re-use — most first, ties in address order;
when fewer pages were sampled than it may keep, its unsampled pages follow in address order.

Only the split object's pages are ranked. Ranking every page of every object was tried first:
with a few armed windows per page the counts of a small, always-used array and of a swept one
are alike, so it locked a little of everything, left no object wholly to the kernel (which
spill's fitted margin makes room for) and made BC time out (docs/benchmarks.md).

A split object gets tier "pages" and its fast pages as ranges (objtier.plan.placement); a page
is index k of the object's whole pages (see page_samples); an object of S bytes has at most
floor(S / page) of them, the bound used here (the runtime clips ranges to the pages the object
really has).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from objtier.errors import UsageError
from objtier.plan.backfill import without_backfill
from objtier.plan.greedy import spill
from objtier.plan.placement import Placement, prepare
from objtier.plan.table import _columns

PAGE_COLUMNS = ("object", "page", "samples")


def runs(page_index: np.ndarray) -> np.ndarray:
    """Sorted distinct page indices as (first, count) runs of consecutive pages, int64 (k, 2)."""
    p = np.unique(np.asarray(page_index, dtype=np.int64))
    if not len(p):
        return np.zeros((0, 2), dtype=np.int64)
    starts = np.flatnonzero(np.concatenate([[True], np.diff(p) != 1]))
    ends = np.append(starts[1:], len(p))
    return np.stack([p[starts], ends - starts], axis=1).astype(np.int64)


def hottest_pages(pages: np.ndarray, samples: np.ndarray, whole: int, k: int
                  ) -> tuple[np.ndarray, int]:
    """k page indices of an object with `whole` whole pages: sampled pages by falling count
    (ties in address order), then unsampled ones in address order. Returns (pages, how many
    of them were sampled)."""
    ok = (pages >= 0) & (pages < whole) & (samples > 0)
    pages, samples = pages[ok], samples[ok]
    take = pages[np.lexsort((pages, -samples))][:k]
    rest = k - len(take)
    if rest > 0:
        free = np.setdiff1d(np.arange(whole, dtype=np.int64), take, assume_unique=True)
        take = np.concatenate([take, free[:rest]])
    return take, int(min(len(pages), k))


def pages(table: Any, capacity_bytes: int, page_bytes: int = 4096,
          page_samples: Any = None, include_cold: bool = False,
          backfill: bool = True) -> Placement:
    """spill (without backfill when backfill is False), each split object's fast part being
    its most-touched pages (module docstring)."""
    objects = prepare(table, capacity_bytes, page_bytes)
    if page_samples is None:
        raise UsageError("--algo pages needs samples per page: plan from a recording, not an "
                         "object table")
    cols = _columns(page_samples, PAGE_COLUMNS, "page samples")
    base = spill(objects, capacity_bytes, page_bytes, include_cold=include_cold)
    if not backfill:
        base = without_backfill(objects, base)
    row = objects.index_of(np.asarray(cols["object"], dtype=np.int64))
    page = np.asarray(cols["page"], dtype=np.int64)
    count = np.asarray(cols["samples"], dtype=np.float64)
    whole = (objects.size // page_bytes).astype(np.int64)
    tier = base.tier.copy()
    reason = base.reason.copy()
    fast_bytes = base.fast_bytes.copy()
    ranges: list[np.ndarray | None] = [None] * len(objects)
    for r in np.flatnonzero(base.tier == "split").tolist():
        k = int(min(base.fast_bytes[r] // page_bytes, whole[r]))
        mine = row == r
        chosen, sampled = hottest_pages(page[mine], count[mine], int(whole[r]), k)
        if not len(chosen):
            continue
        ranges[r] = runs(chosen) * page_bytes
        fast_bytes[r] = len(chosen) * page_bytes
        tier[r] = "pages"
        reason[r] = (f"{reason[r]}; the {len(chosen)} fast pages are its most-touched ones "
                     f"({sampled} sampled, {len(chosen) - sampled} unsampled in address order)")
    params = {**base.params, "backfill": backfill}
    return replace(base, algorithm="pages", params=params, tier=tier, reason=reason,
                   fast_bytes=fast_bytes, ranges=tuple(ranges))
