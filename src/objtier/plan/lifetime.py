"""Fast-tier occupancy over time: the capacity check of lifetime-aware planning.

When the object table has lifetimes (alloc_ns, free_ns), the fast budget bounds the fast pages
that are live at the same moment, not their sum: the runtime mlocks (or binds) an object's fast
part at its allocation and releases it at its free, so a freed object's fast pages serve later
objects. An object fits when, at every moment of its lifetime, the fast pages already placed
and live then plus its own stay within the budget.

Encoding
  - Object i is live on [alloc_ns[i], free_ns[i]); free_ns < 0 = live to the end of the run.
    At equal times frees come before allocations (as in budget.peak_live_bytes): an object
    freed at t and one allocated at t never overlap.
  - The timeline has one segment per interval between consecutive distinct event times:
    segment k = [times[k], times[k+1]) (the last one open-ended). Object i covers the segments
    [lo[i], hi[i]); an object freed when it is allocated (or before, in a damaged table) covers
    its allocation segment only, so it is still charged.
  - live[k] = fast pages placed so far that are live in segment k (int64).
Adding an object adds its pages over its range; it fits when max(live[lo:hi]) + pages <= cap.
"""

from __future__ import annotations

import numpy as np

from objtier.plan.table import ObjectTable


def has_lifetimes(objects: ObjectTable) -> bool:
    """True when the table carries alloc_ns and free_ns (lifetime-aware planning applies)."""
    return objects.alloc_ns is not None and objects.free_ns is not None


def segments(alloc_ns: np.ndarray, free_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(lo, hi, number of segments): each object's half-open range of timeline segments."""
    alloc = np.asarray(alloc_ns, dtype=np.int64)
    free = np.asarray(free_ns, dtype=np.int64)
    freed = free >= 0
    times = np.unique(np.concatenate([alloc, free[freed]]))
    lo = np.searchsorted(times, alloc, side="left")
    hi = np.where(freed, np.searchsorted(times, free, side="left"), len(times))
    hi = np.maximum(hi, lo + 1)
    return lo.astype(np.int64), hi.astype(np.int64), max(len(times), 1)


class Timeline:
    """Live fast pages per timeline segment, with the checks the algorithms need.

    peak is max(live) at all times; while peak + pages <= cap an object fits without looking
    at its range, which keeps the common case (a budget far from full) O(1).
    """

    def __init__(self, objects: ObjectTable, cap_pages: int):
        self.cap = int(cap_pages)
        self.lo, self.hi, count = segments(objects.alloc_ns, objects.free_ns)
        self.live = np.zeros(count, dtype=np.int64)
        self.peak = 0

    def level(self, row: int) -> int:
        """Most fast pages live at one moment of object `row`'s lifetime."""
        if self.peak == 0:
            return 0
        return int(self.live[self.lo[row]:self.hi[row]].max())

    def room(self, row: int) -> int:
        """Pages object `row` could still place fast over its whole lifetime."""
        return max(self.cap - self.level(row), 0)

    def fits(self, row: int, pages: int) -> bool:
        return self.peak + pages <= self.cap or self.level(row) + pages <= self.cap

    def add(self, row: int, pages: int) -> int:
        """Place `pages` of object `row`; returns the new level over its lifetime."""
        if pages <= 0:
            return self.level(row)
        span = self.live[self.lo[row]:self.hi[row]]
        span += pages
        level = int(span.max())
        self.peak = max(self.peak, level)
        return level

    def add_many(self, rows: np.ndarray, pages: np.ndarray) -> None:
        """Place several objects at once (difference array + cumulative sum)."""
        if len(rows) == 0:
            return
        diff = np.zeros(len(self.live) + 1, dtype=np.int64)
        np.add.at(diff, self.lo[rows], pages)
        np.add.at(diff, self.hi[rows], -np.asarray(pages, dtype=np.int64))
        self.live += np.cumsum(diff[:-1])
        self.peak = int(self.live.max())

    def levels(self, rows: np.ndarray) -> np.ndarray:
        """level() of each row (int64)."""
        return np.array([self.level(r) for r in np.asarray(rows).tolist()], dtype=np.int64)


def cliques(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, bool]:
    """Connected components of the intervals [lo, hi) (label per item, in sweep order) and
    whether every component is a clique: all its intervals share a segment (for intervals,
    pairwise overlap implies a common point). When they are, the interval constraint of a
    component is one plain knapsack constraint."""
    n = len(lo)
    label = np.zeros(n, dtype=np.int64)
    if n == 0:
        return label, True
    order = np.lexsort((hi, lo))
    reach = np.maximum.accumulate(hi[order])
    # a new component starts where an interval begins at or after everything before has ended
    start = np.concatenate([[True], lo[order][1:] >= reach[:-1]])
    comp = np.cumsum(start) - 1
    label[order] = comp
    first_end = np.full(comp[-1] + 1, np.iinfo(np.int64).max, dtype=np.int64)
    last_start = np.full(comp[-1] + 1, -1, dtype=np.int64)
    np.minimum.at(first_end, comp, hi[order])
    np.maximum.at(last_start, comp, lo[order])
    return label, bool(np.all(last_start < first_end))
