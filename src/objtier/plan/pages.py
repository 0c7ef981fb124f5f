"""`pages`: the fast tier holds the pages touched most often, wherever they lie in an object.

For the swap tier. What decides a swap-in is whether a page is needed again while it is out,
and objects are not uniform: in a graph search the adjacency lists of some vertices are read
in many steps, those of others in one. A prefix of the array (spill) locks both kinds alike.
`pages` ranks every whole page of every sampled object by its own samples — with the fault
sampler, the number of armed windows in which the page was touched (objtier.analysis.
page_samples) — most first, ties by the object's density (accesses per byte), then object id,
then page order; it takes pages in that order up to the budget. Pages never sampled come last:
when the sampled ones leave room, each object by falling density fills it with its unsampled
pages in address order (include_cold admits objects with no samples at all).

Every object is treated as live for the whole run (lifetimes are not checked): the budget
bounds the sum of the pages chosen. An object with chosen pages is "pages", with them as ranges
(objtier.plan.placement), or "fast" when they cover all its bytes (a size that is a page
multiple); fast_bytes is the bytes of its chosen pages. A page is index k of the object's whole pages (see page_samples);
an object of S bytes has at most floor(S / page) of them, the bound used here (the runtime
clips ranges to the pages the object really has).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from objtier.errors import UsageError
from objtier.plan.greedy import density
from objtier.plan.placement import UNKNOWN_CONTEXT, Placement, finish, prepare
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


def pages(table: Any, capacity_bytes: int, page_bytes: int = 4096,
          page_samples: Any = None, include_cold: bool = False) -> Placement:
    """The most-touched pages of all objects up to the budget (module docstring)."""
    objects = prepare(table, capacity_bytes, page_bytes)
    if page_samples is None:
        raise UsageError("--algo pages needs samples per page: plan from a recording, not an "
                         "object table")
    cols = _columns(page_samples, PAGE_COLUMNS, "page samples")
    n = len(objects)
    whole = (objects.size // page_bytes).astype(np.int64)   # choosable pages per object
    dens = density(objects.accesses, objects.size)
    candidate = ((objects.accesses > 0) | include_cold) & objects.plannable & (whole > 0)

    row = objects.index_of(np.asarray(cols["object"], dtype=np.int64))
    page = np.asarray(cols["page"], dtype=np.int64)
    score = np.asarray(cols["samples"], dtype=np.float64)
    ok = (row >= 0) & (score > 0) & (page >= 0)
    ok[ok] &= candidate[row[ok]] & (page[ok] < whole[row[ok]])
    row, page, score = row[ok], page[ok], score[ok]
    rank = np.lexsort((page, objects.object[row], -dens[row], -score))
    left = int(capacity_bytes // page_bytes)
    take = rank[:left]
    chosen_pages: list[list[np.ndarray]] = [[] for _ in range(n)]
    sampled_taken = np.bincount(row[take], minlength=n).astype(np.int64)
    for r, pg in zip(*_group(row[take], page[take])):
        chosen_pages[r].append(pg)
    left -= len(take)

    # Room left: unsampled pages, objects by falling density, in address order.
    filled = np.zeros(n, dtype=np.int64)
    walk = np.flatnonzero(candidate)
    walk = walk[np.lexsort((objects.object[walk], -dens[walk]))]
    for r in walk.tolist():
        if left <= 0:
            break
        have = np.concatenate(chosen_pages[r]) if chosen_pages[r] else np.zeros(0, np.int64)
        free = np.setdiff1d(np.arange(whole[r], dtype=np.int64), have, assume_unique=True)[:left]
        if len(free):
            chosen_pages[r].append(free)
            filled[r] = len(free)
            left -= len(free)

    count = np.zeros(n, dtype=np.int64)
    ranges: list[np.ndarray | None] = [None] * n
    for r in range(n):
        if chosen_pages[r]:
            rr = runs(np.concatenate(chosen_pages[r]))
            count[r] = int(rr[:, 1].sum())
            ranges[r] = rr * page_bytes
    fast_bytes = count * page_bytes  # charged pages; "fast" only when they cover the object
    order = np.full(n, -1, dtype=np.int64)
    order[walk] = np.arange(len(walk))
    fill = np.cumsum(np.where(order >= 0, count, 0)[walk]) if len(walk) else np.zeros(0)
    cumulative = np.zeros(n, dtype=np.int64)
    cumulative[walk] = fill * page_bytes
    reason = np.full(n, "no sampled accesses", dtype=object)
    reason[~objects.plannable] = UNKNOWN_CONTEXT
    for r in walk.tolist():
        reason[r] = (f"{count[r]} of {whole[r]} pages fast: {sampled_taken[r]} by touches, "
                     f"{filled[r]} unsampled filling room left")
    placement = finish("pages", {"include_cold": include_cold}, objects, capacity_bytes,
                       page_bytes, fast_bytes, dens, order, cumulative, reason,
                       chosen=count > 0)
    partial = (count > 0) & (fast_bytes < objects.size)
    tier = np.where(partial, "pages", placement.tier).astype(object)
    return replace(placement, tier=tier,
                   ranges=tuple(ranges[r] if partial[r] else None for r in range(n)),
                   lifetimes=False, peak_fast_bytes=None)


def _group(rows: np.ndarray, values: np.ndarray) -> tuple[list[int], list[np.ndarray]]:
    """values split by row: (distinct rows, values of each)."""
    if not len(rows):
        return [], []
    order = np.argsort(rows, kind="stable")
    rows, values = rows[order], values[order]
    cut = np.flatnonzero(np.diff(rows)) + 1
    return rows[np.concatenate([[0], cut])].tolist(), np.split(values, cut)
