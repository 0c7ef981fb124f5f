"""Exact 0/1 knapsack: the reference optimum for whole-object placement.

Maximizes the sum of accesses of the objects placed fast subject to their pages fitting in
the fast tier (weights = ceil(size / page_bytes) pages, values = accesses). Dynamic programming
over capacities 0..C pages: O(n * C) time and n * C bits of decision table (one byte each
here). When n * C exceeds max_cells the instance is too large: the result is the greedy `rank`
placement, with a warning saying so.

Objects with no sampled accesses add nothing and are never placed fast. Objects larger than
the fast tier are dropped before the DP; when everything else fits, no DP is needed.
Explanation rows list objects in accesses-per-byte order, so cumulative fill is comparable
with the greedy algorithms.

With lifetimes (objtier.plan.lifetime) the constraint is per moment: the fast pages live at
once stay within the budget. Objects whose lifetimes never overlap, even through others, fall
into independent groups (connected components of the interval graph). A group whose objects
are all live at one common moment has exactly the plain knapsack constraint and is solved by
the DP with the whole budget. A group where lifetimes overlap only partially is a knapsack
with one constraint per moment, which this DP does not solve: its objects get the
lifetime-aware greedy rank decisions, and the plan carries a warning saying how many objects
that concerns. Groups are independent, so this mix is exact wherever it says so.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from objtier.errors import UsageError
from objtier.plan.greedy import density, rank, scan_order
from objtier.plan.lifetime import cliques, has_lifetimes, segments
from objtier.plan.placement import Placement, finish, pages, prepare

DEFAULT_MAX_CELLS = 50_000_000  # decision-table cells (bytes of memory)


def knapsack(weight: np.ndarray, value: np.ndarray, capacity: int) -> np.ndarray:
    """Boolean mask of the items of an optimal 0/1 knapsack. weight: int64 >= 1, value >= 0.

    A later item replaces earlier ones only when strictly better, so on ties the earlier
    items win and the answer is deterministic.
    """
    m = len(weight)
    dp = np.zeros(capacity + 1, dtype=np.float64)  # dp[c]: best value within c pages
    keep = np.zeros((m, capacity + 1), dtype=bool)
    for i in range(m):
        w = int(weight[i])
        if w > capacity:
            continue
        candidate = dp[: capacity + 1 - w] + value[i]
        better = candidate > dp[w:]
        keep[i, w:] = better
        dp[w:] = np.where(better, candidate, dp[w:])
    take = np.zeros(m, dtype=bool)
    c = capacity
    for i in range(m - 1, -1, -1):
        if keep[i, c]:
            take[i] = True
            c -= int(weight[i])
    return take


def _rank_fallback(objects, capacity_bytes: int, page_bytes: int, params: dict[str, Any],
                   warning: str) -> Placement:
    """The greedy rank placement, reported as exact's fallback with `warning`."""
    greedy = rank(objects, capacity_bytes, page_bytes)
    return finish("exact", {**params, "fallback": "rank"}, objects, capacity_bytes, page_bytes,
                  greedy.fast_bytes, greedy.priority, greedy.order, greedy.cumulative_fill,
                  greedy.reason, warnings=(warning,), chosen=greedy.selected())


def exact(table: Any, capacity_bytes: int, page_bytes: int = 4096,
          max_cells: int = DEFAULT_MAX_CELLS) -> Placement:
    """Optimal whole-object placement; greedy rank (with a warning) when too large."""
    objects = prepare(table, capacity_bytes, page_bytes)
    if max_cells < 1:
        raise UsageError(f"exact: max_cells must be >= 1, got {max_cells}")
    n = len(objects)
    cap = int(capacity_bytes // page_bytes)
    weight = pages(objects.size, page_bytes)
    prio = density(objects.accesses, objects.size)
    candidate = (objects.accesses > 0) & objects.plannable
    too_large = candidate & (weight > cap)
    free = candidate & (weight == 0)               # zero-size objects: always taken
    # DP items in accesses-per-byte order, so ties favour the denser object
    items = scan_order(prio, objects.object, candidate & ~too_large & ~free)
    dp_cap = int(min(cap, weight[items].sum()))
    cells = len(items) * (dp_cap + 1)
    params = {"max_cells": int(max_cells)}

    greedy_rows = np.zeros(0, dtype=np.int64)
    warnings: tuple[str, ...] = ()
    if has_lifetimes(objects) and len(items):
        lo, hi, _ = segments(objects.alloc_ns, objects.free_ns)
        group, _ = cliques(lo[items], hi[items])
        take_items = np.zeros(len(items), dtype=bool)
        groups = []
        for g in np.unique(group).tolist():
            members = np.flatnonzero(group == g)          # in accesses-per-byte order
            shared = lo[items[members]].max() < hi[items[members]].min()
            g_cap = int(min(cap, weight[items[members]].sum()))
            groups.append((members, shared, g_cap))
        cells = sum(len(m) * (c + 1) for m, shared, c in groups
                    if shared and c < weight[items[m]].sum())
        if cells > max_cells:
            return _rank_fallback(objects, capacity_bytes, page_bytes, params,
                                  f"exact: instance too large ({cells} cells over groups of "
                                  f"objects live at once > {max_cells}); used greedy rank over "
                                  f"lifetimes instead")
        partial = [m for m, shared, c in groups if not shared]
        if partial:
            greedy = rank(objects, capacity_bytes, page_bytes)
            members = np.concatenate(partial)
            greedy_rows = items[members]
            take_items[members] = greedy.selected()[greedy_rows]
            warnings = (f"exact: lifetimes of {len(greedy_rows)} object(s) in {len(partial)} "
                        f"group(s) overlap only partially, which the knapsack does not solve; "
                        f"used greedy rank over lifetimes for them (the other groups are "
                        f"optimal)",)
        for members, shared, g_cap in groups:
            if not shared:
                continue
            if g_cap == int(weight[items[members]].sum()):
                take_items[members] = True
            else:
                take_items[members] = knapsack(weight[items[members]],
                                               objects.accesses[items[members]], g_cap)
    elif dp_cap == int(weight[items].sum()):
        take_items = np.ones(len(items), dtype=bool)   # everything that can fit does
    elif cells > max_cells:
        return _rank_fallback(objects, capacity_bytes, page_bytes, params,
                              f"exact: instance too large ({len(items)} objects x "
                              f"{dp_cap + 1} pages = {cells} cells > {max_cells}); used greedy "
                              f"rank instead")
    else:
        take_items = knapsack(weight[items], objects.accesses[items], dp_cap)

    chosen = np.zeros(n, dtype=bool)
    chosen[items[take_items]] = True
    chosen[free] = True
    fast = np.where(chosen, objects.size, 0)
    rows = scan_order(prio, objects.object, candidate)
    order = np.full(n, -1, dtype=np.int64)
    order[rows] = np.arange(len(rows))
    fill = np.zeros(n, dtype=np.int64)
    fill[rows] = np.cumsum(np.where(chosen[rows], weight[rows], 0)) * page_bytes
    fill[~candidate] = int(weight[chosen].sum()) * page_bytes
    reason = np.full(n, "no sampled accesses", dtype=object)
    reason[candidate] = "left out of the optimal set"
    reason[chosen] = "in the optimal set"
    reason[greedy_rows] = np.where(chosen[greedy_rows],
                                   "placed by greedy rank (lifetimes overlap partially)",
                                   "left slow by greedy rank (lifetimes overlap partially)")
    reason[too_large] = f"larger than the fast tier ({cap} pages)"
    reason[~objects.plannable] = objects.unplannable_reasons()[~objects.plannable]
    if len(greedy_rows):
        params = {**params, "partial_overlap": "rank"}
    return finish("exact", params, objects, capacity_bytes, page_bytes, fast, prio, order, fill,
                  reason, warnings=warnings, chosen=chosen)
