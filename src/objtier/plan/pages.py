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

`auto` (`compare`'s default) ranks a split object's pages only when its samples show pages
never touched beyond what sparse sampling explains (cold_page_excess >= COLD_EXCESS), and keeps
spill's prefix otherwise: where every page is re-used alike, ranking orders noise and scatters
the locked set over thousands of ranges, which cost time at equal swap-ins.

`auto` locks part of an object only where the kernel's reclaim is known to lose on it: an
object swept front to back (sequential share >= folios.THRESHOLD: LRU evicts each page of a
sweep larger than memory just before it is read again, and a locked part of it turns that part
into hits), or one whose ranked pages are hotter than the rest (cold pages beyond chance, from
at least MIN_RANK_SAMPLES samples per page). An object that is gathered (sequential share
below the threshold) and re-used alike is left wholly to the kernel instead: LRU keeps about as
much of it as the room allows, so a locked part is no hotter than the unlocked tail and only
takes room the tail and the other unlocked objects need. Measured (docs/history/
benchmarks-2026-11-27-details.md): BC's edge array (sequential share 0.02-0.40, no cold
pages) locked 11.5 MiB of 29 at 70 % local and took 1.5x the swap-ins of kernel reclaim alone;
left unlocked, as many as the kernel's; pointer chasing's ranked 5.5 MiB (1.3 samples per page)
changed no swap-in. Where the sequential share is unknown (too few samples, or a table without
the column) the prefix rule above stands.

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
from objtier.plan.folios import THRESHOLD as SWEPT
from objtier.plan.greedy import spill
from objtier.plan.placement import Placement, prepare
from objtier.plan.table import _columns

PAGE_COLUMNS = ("object", "page", "samples")
# `auto` ranks a split object's pages only when at least this share of them was never sampled
# beyond what chance explains (cold_page_excess). Measured in turn, same profiles (4) and
# limits (docs/benchmarks.md, "Which split objects to rank"): ranking gained 1.39-1.45x on
# Kronecker BFS and CC (excess 0.087, 0.072) and lost 8-16 % on uniform BFS and CC (excess
# under 0.001), where it only scatters the locked pages.
COLD_EXCESS = 0.05
# `auto` ranks a gathered object's pages only from this many samples per page on average: at
# about one, most counts are 0, 1 or 2 by chance and the "hottest" pages are the luckiest (and
# pages no window armed count as never touched). Pointer chasing (1.3 a page, excess 0.10)
# locked 5.5 MiB of ranked pages at no change in swap-ins; Kronecker BFS and CC rank from 4-5.
MIN_RANK_SAMPLES = 2.0
# `auto` locks a whole object only when it is at least this many times as dense (accesses per
# byte) as the densest object left to the kernel (weak_locks). Measured on the swap tier
# (docs/history/benchmarks-2026-11-27-details.md): BC's 2 MiB array at 1.5x the edge array's
# density, locked, took 16 % more swap-ins than the kernel alone at 70 %; pointer chasing's
# 1.6 MiB array at 1.5x, 9 % more at 50 %; the arrays BFS and CC lock are 6-22x as dense as
# their edge array. Estimates from a short recording vary 2x and more from one to the next.
CONTRAST = 2.0


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


def cold_page_excess(pages: np.ndarray, samples: np.ndarray, whole: int) -> float:
    """Share of an object's `whole` pages never sampled, beyond chance: the observed share of
    pages without a sample minus exp(-mean samples per page), the share a Poisson sampler
    leaves unsampled when every page is touched alike. Near 0 (or below) when every page is
    re-used alike; large when part of the object is never touched (the lists of vertices no
    search reaches, on a graph with skewed degrees). Pages outside [0, whole) are ignored."""
    if whole <= 0:
        return 0.0
    ok = (pages >= 0) & (pages < whole) & (samples > 0)
    sampled = len(np.unique(pages[ok]))
    mean = float(samples[ok].sum()) / whole
    return (whole - sampled) / whole - float(np.exp(-mean))


def weak_locks(objects: Any, tier: np.ndarray, fast_bytes: np.ndarray,
               reason: np.ndarray) -> None:
    """`auto`: leave unlocked (in place) each wholly fast object whose density (accesses per
    byte) is below CONTRAST x that of the densest object left wholly or partly to the kernel.
    The kernel's reclaim keeps such an object about as well by itself, and a lock takes its
    room from everything unlocked for the whole run."""
    size = objects.size.astype(np.float64)
    density = np.divide(objects.accesses, size, out=np.zeros(len(size)), where=size > 0)
    left = (fast_bytes < objects.size) & (objects.accesses > 0)
    if not left.any():
        return
    boundary = float(density[left].max())
    for r in np.flatnonzero((tier == "fast") & (density < CONTRAST * boundary)).tolist():
        tier[r], fast_bytes[r] = "slow", 0
        reason[r] = (f"{reason[r]}; left unlocked: {density[r] / boundary:.2f}x the density "
                     f"of the densest object left to the kernel (locked from {CONTRAST:g}x)")


def auto(table: Any, capacity_bytes: int, page_bytes: int = 4096, **params: Any) -> Placement:
    """`--algo auto`: pages, ranking only the split objects that have cold pages."""
    return pages(table, capacity_bytes, page_bytes, only_with_cold_pages=True, **params)


def pages(table: Any, capacity_bytes: int, page_bytes: int = 4096,
          page_samples: Any = None, include_cold: bool = False,
          backfill: bool = True, only_with_cold_pages: bool = False) -> Placement:
    """spill (without backfill when backfill is False), each split object's fast part being
    its most-touched pages (module docstring) — with only_with_cold_pages (`--algo auto`)
    only for split objects whose cold_page_excess is at least COLD_EXCESS; the others keep
    spill's prefix."""
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
    swept = objects.sequential
    for r in np.flatnonzero(base.tier == "split").tolist():
        k = int(min(base.fast_bytes[r] // page_bytes, whole[r]))
        mine = row == r
        if only_with_cold_pages:
            excess = cold_page_excess(page[mine], count[mine], int(whole[r]))
            gathered = swept is not None and not np.isnan(swept[r]) and swept[r] < SWEPT
            per_page = float(count[mine].sum()) / whole[r] if whole[r] > 0 else 0.0
            if gathered and (excess < COLD_EXCESS or per_page < MIN_RANK_SAMPLES):
                tier[r], fast_bytes[r] = "slow", 0
                reason[r] = (f"{reason[r]}; left unlocked: gathered (sequential share "
                             f"{swept[r]:.2f}) and its pages alike ({excess:.3f} unsampled "
                             f"beyond chance, {per_page:.1f} samples a page): the kernel keeps "
                             f"as much of it in the room a lock would take")
                continue
            if excess < COLD_EXCESS:
                reason[r] = (f"{reason[r]}; prefix kept: {excess:.3f} of its pages unsampled "
                             f"beyond chance (ranked from {COLD_EXCESS})")
                continue
        chosen, sampled = hottest_pages(page[mine], count[mine], int(whole[r]), k)
        if not len(chosen):
            continue
        ranges[r] = runs(chosen) * page_bytes
        fast_bytes[r] = len(chosen) * page_bytes
        tier[r] = "pages"
        reason[r] = (f"{reason[r]}; the {len(chosen)} fast pages are its most-touched ones "
                     f"({sampled} sampled, {len(chosen) - sampled} unsampled in address order)")
    if only_with_cold_pages:
        weak_locks(objects, tier, fast_bytes, reason)
    params = {**base.params, "backfill": backfill}
    if only_with_cold_pages:
        params["cold_excess"] = COLD_EXCESS
        params["contrast"] = CONTRAST
    return replace(base, algorithm="auto" if only_with_cold_pages else "pages", params=params,
                   tier=tier, reason=reason, fast_bytes=fast_bytes, ranges=tuple(ranges))
