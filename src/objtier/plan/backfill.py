"""No backfill: the fast set for a slow tier whose unlocked memory the kernel's LRU manages.

On the swap tier "fast" means mlocked; memory the plan leaves unlocked is not wasted, reclaim
gives it to whichever pages are hottest at the time. Every greedy algorithm here keeps walking
after the first object that does not fit and fills the gap with objects further down its
ranking — colder per byte than the one it skipped. Locking such an object takes room from
hotter pages the kernel would otherwise keep. (On BFS over a uniform graph at 70 % local memory
the effect was not measurable: the run was 13 % slower than the kernel alone with and without
backfill, a cost of the runtime's pressure guard; docs/planning.md.) `without_backfill` makes
every object ranked below the first one that did not fit whole slow again; objects above it,
and that object's own fast prefix, stay. A `pages` placement (objtier.plan.pages) is returned
unchanged: `pages` applies this to spill itself (backfill=False) before choosing pages.
"""

from __future__ import annotations

import numpy as np

from objtier.plan.placement import Placement, finish
from objtier.plan.table import ObjectTable


def without_backfill(objects: ObjectTable, placement: Placement) -> Placement:
    """placement with the objects it ranked below its first not-wholly-fast candidate made
    slow (objects and placement in the same row order, as the algorithms return them)."""
    if placement.algorithm in ("pages", "auto"):  # already without backfill when asked
        return placement
    considered = placement.order >= 0
    short = considered & (placement.accesses > 0) & (placement.fast_bytes < placement.size)
    if not short.any():
        return placement
    first = int(np.flatnonzero(short)[np.argmin(placement.order[short])])
    colder = considered & (placement.order > placement.order[first]) & \
        (placement.fast_bytes > 0)
    if not colder.any():
        return placement
    fast = placement.fast_bytes.copy()
    fast[colder] = 0
    chosen = (placement.tier != "slow") & ~colder
    reason = placement.reason.copy()
    reason[colder] = (f"ranked below object {int(placement.object[first])}, which did not fit "
                      f"whole: left to the kernel's reclaim (no backfill)")
    order_rows = np.flatnonzero(considered)[np.argsort(placement.order[considered])]
    fill = np.zeros(len(placement), dtype=np.int64)
    fill[order_rows] = np.cumsum(placement.charged_bytes[order_rows] * ~colder[order_rows])
    fill[~considered] = int((placement.charged_bytes * ~colder).sum())
    return finish(placement.algorithm, {**placement.params, "backfill": False}, objects,
                  placement.capacity_bytes, placement.page_bytes, fast, placement.priority,
                  placement.order, fill, reason, placement.warnings, chosen=chosen)
