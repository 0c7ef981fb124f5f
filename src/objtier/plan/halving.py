"""DAPHICX Algorithm 1: greedy knapsack with halving splits.

priority(piece) = accesses^alpha / size^beta (Equation 1; size in bytes, at least 1).
Walk pieces by priority, highest first:
  - the piece fits in the pages left           -> fast;
  - it does not fit, the fast tier is less than fill_threshold (90%) full and the piece has
    more than one page                          -> split it in half (ceil/floor pages), put
                                                   both halves back, re-sort, go on;
  - otherwise                                   -> slow.
The seed restarts the walk after each split; every piece ahead of the split one has been taken
(a piece that does not fit while under the threshold is split, never skipped), so a priority
queue gives the same result without re-sorting.

A piece's accesses are the object's accesses in proportion to its pages (the object table has
no finer distribution). The seed gives no values for alpha and beta; the defaults 1, 1 make the
priority accesses per byte, the IISWC ranking. With alpha = beta a half keeps its parent's
priority; with beta > alpha halves rise, with alpha > beta they sink.
The fast pieces of one object are reported as one fast prefix of the same length (under the
even-spread assumption above the two are equivalent).

With lifetimes (objtier.plan.lifetime) "the pages left" and "the fast tier is 90% full" are
taken over the piece's object's lifetime: a piece fits when the most fast pages live at one
moment of that lifetime plus its own stay within the budget, and it is split while that most
is below fill_threshold of the budget. All objects live at once gives the lifetime-blind walk.
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from objtier.errors import UsageError
from objtier.plan.greedy import scan_order
from objtier.plan.lifetime import Timeline, has_lifetimes
from objtier.plan.placement import Placement, finish, pages, prepare

DEFAULT_ALPHA = 1.0
DEFAULT_BETA = 1.0
DEFAULT_FILL_THRESHOLD = 0.9  # the seed's 90%


def priority(accesses: np.ndarray | float, size: np.ndarray | float,
             alpha: float = DEFAULT_ALPHA, beta: float = DEFAULT_BETA) -> np.ndarray:
    """Equation 1: accesses^alpha / size^beta, size in bytes clamped to >= 1."""
    accesses = np.asarray(accesses, dtype=np.float64)
    size = np.maximum(np.asarray(size, dtype=np.float64), 1.0)
    return np.power(accesses, alpha) / np.power(size, beta)


def halving(table: Any, capacity_bytes: int, page_bytes: int = 4096,
            alpha: float = DEFAULT_ALPHA, beta: float = DEFAULT_BETA,
            fill_threshold: float = DEFAULT_FILL_THRESHOLD,
            include_cold: bool = False) -> Placement:
    """DAPHICX Algorithm 1 over page-granular objects."""
    objects = prepare(table, capacity_bytes, page_bytes)
    if not (np.isfinite(alpha) and np.isfinite(beta)) or alpha < 0 or beta < 0:
        raise UsageError(f"halving: alpha and beta must be >= 0, got {alpha}, {beta}")
    if not 0.0 <= fill_threshold <= 1.0:
        raise UsageError(f"halving: fill threshold must be in [0, 1], got {fill_threshold}")
    n = len(objects)
    size = objects.size
    acc = objects.accesses
    weight = pages(size, page_bytes)
    prio = priority(acc, size, alpha, beta)
    cap = int(capacity_bytes // page_bytes)
    split_below = fill_threshold * cap  # splits allowed while used pages < this

    candidate = ((acc > 0) | include_cold) & objects.plannable
    rows = scan_order(prio, objects.object, candidate)
    # heap entries: (-priority, object id, first page, pages, row)
    heap = [(-prio[r], int(objects.object[r]), 0, int(weight[r]), r) for r in rows.tolist()]
    heapq.heapify(heap)

    fast_pages = np.zeros(n, dtype=np.int64)
    chosen = np.zeros(n, dtype=bool)
    splits = np.zeros(n, dtype=np.int64)
    order = np.full(n, -1, dtype=np.int64)
    fill = np.zeros(n, dtype=np.int64)
    skip_reason = np.full(n, "", dtype=object)
    used = 0
    step = 0
    timeline = Timeline(objects, cap) if has_lifetimes(objects) else None
    while heap:
        neg, oid, first, count, row = heapq.heappop(heap)
        if order[row] < 0:
            order[row] = step
            step += 1
        if timeline is not None:
            # capacity over the object's lifetime; fill is recomputed by finish()
            if timeline.fits(row, count):
                timeline.add(row, count)
                fast_pages[row] += count
                chosen[row] = True
                continue
            used = timeline.level(row)
        if count <= cap - used:
            used += count
            fast_pages[row] += count
            chosen[row] = True
        elif used < split_below and count > 1:
            splits[row] += 1
            half = (count + 1) // 2
            for start, length in ((first, half), (first + half, count - half)):
                piece_bytes = min((start + length) * page_bytes, int(size[row])) - start * page_bytes
                piece_acc = acc[row] * length / weight[row]
                heapq.heappush(heap, (-float(priority(piece_acc, piece_bytes, alpha, beta)),
                                      oid, start, length, row))
        elif used >= split_below:
            over = " over its lifetime" if timeline is not None else ""
            skip_reason[row] = (f"does not fit ({count} pages, {cap - used} left{over}) and the "
                                f"fast tier is >= {fill_threshold:.0%} full{over}")
        else:
            skip_reason[row] = "does not fit (one page, none left)"
        fill[row] = used
    fill[~candidate] = used

    fast_bytes = np.minimum(fast_pages * page_bytes, size)
    reason = np.full(n, "no sampled accesses", dtype=object)
    reason[~objects.plannable] = objects.unplannable_reasons()[~objects.plannable]
    whole = chosen & (fast_bytes >= size)
    reason[whole & (splits == 0)] = "fits"
    for row in np.flatnonzero(candidate & ~(whole & (splits == 0))).tolist():
        w = int(weight[row])
        if splits[row] and chosen[row]:
            reason[row] = (f"halved {splits[row]} time(s): {fast_pages[row]} of {w} pages fast")
        elif splits[row]:
            reason[row] = f"halved {splits[row]} time(s), no piece fit"
        else:
            reason[row] = skip_reason[row] or "does not fit"
    params = {"alpha": float(alpha), "beta": float(beta), "fill_threshold": float(fill_threshold),
              "include_cold": include_cold}
    return finish("halving", params, objects, capacity_bytes, page_bytes, fast_bytes, prio,
                  order, fill * page_bytes, reason, chosen=chosen)
