"""Placement: the result of a planning algorithm, one row per object, plus its explanation.

Units and encodings
  - Sizes and fast_bytes are bytes. fast_bytes is the split offset: bytes [0, fast_bytes) of
    the object are planned fast, [fast_bytes, size) slow. It is 0 (slow), size (fast), or a
    multiple of page_bytes strictly between (split), counted from the object's first byte.
  - Fast-tier capacity is counted in pages: an object placed fast charges
    ceil(fast_bytes / page_bytes) pages, because every enforcement (mbind, mlock, madvise)
    acts on whole pages. page_bytes = 1 gives byte granularity.
  - tier is "fast", "slow", "split" or "pages". A "pages" object (objtier.plan.pages) has
    ranges: (offset, length) byte pairs counted from the object's first whole page (its
    first byte rounded up to a page), page multiples, sorted and disjoint; those pages are
    fast, every other page slow, and fast_bytes is their sum (so the charge is unchanged).
  - Lifetimes (objtier.plan.lifetime): when the object table has alloc_ns/free_ns, the
    capacity bounds the fast pages live at the same moment (peak_fast_bytes), not their sum
    (used_bytes, which may then exceed the capacity), and cumulative_fill is, in the final
    placement, the most fast bytes live at one moment of the object's lifetime.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from objtier.errors import UsageError
from objtier.plan.lifetime import Timeline, has_lifetimes
from objtier.plan.table import ObjectTable, object_table

TIERS = ("fast", "slow", "split", "pages")


def pages(size: np.ndarray | int, page_bytes: int) -> np.ndarray:
    """Pages needed for `size` bytes (ceil); 0 bytes need 0 pages."""
    return (np.asarray(size, dtype=np.int64) + (page_bytes - 1)) // page_bytes


@dataclass(frozen=True)
class Placement:
    """Per-object decision of one algorithm. Arrays are in object-table row order."""

    algorithm: str
    params: dict[str, Any]
    capacity_bytes: int
    page_bytes: int
    object: np.ndarray           # int64 object ids
    size: np.ndarray             # int64 bytes
    accesses: np.ndarray         # float64
    tier: np.ndarray             # object (str): "fast" | "slow" | "split"
    fast_bytes: np.ndarray       # int64 split offset (see module docstring)
    priority: np.ndarray         # float64, the algorithm's ranking key (higher = earlier)
    order: np.ndarray            # int64 position in the algorithm's scan, -1 = not considered
    cumulative_fill: np.ndarray  # int64 fast bytes charged after this object's decision
    reason: np.ndarray           # object (str): why the object went where it went
    warnings: tuple[str, ...] = field(default=())
    lifetimes: bool = False      # the capacity was checked over time (table had lifetimes)
    peak_fast_bytes: int | None = None  # most fast bytes live at once; None = used_bytes
    ranges: tuple | None = None  # per row: int64 array (k, 2) of a "pages" object, else None

    def __len__(self) -> int:
        return len(self.object)

    @property
    def charged_bytes(self) -> np.ndarray:
        """Fast-tier bytes each object uses: its fast part rounded up to whole pages."""
        return pages(self.fast_bytes, self.page_bytes) * self.page_bytes

    @property
    def used_bytes(self) -> int:
        return int(self.charged_bytes.sum())

    @property
    def peak_bytes(self) -> int:
        """Most fast bytes live at one moment: the quantity the capacity bounds. Without
        lifetimes every object counts as live at once, so it equals used_bytes."""
        return self.used_bytes if self.peak_fast_bytes is None else int(self.peak_fast_bytes)

    @property
    def fast_accesses(self) -> float:
        """Accesses served by the fast tier, assuming accesses spread evenly over each object."""
        share = np.divide(self.fast_bytes, self.size, out=(self.fast_bytes > 0).astype(float),
                          where=self.size > 0)
        return float((self.accesses * share).sum())

    def selected(self) -> np.ndarray:
        """Boolean mask of objects with at least part planned fast."""
        return self.tier != "slow"

    def explain(self) -> pa.Table:
        """Explanation rows in decision order (objects never considered last)."""
        key = np.where(self.order < 0, np.iinfo(np.int64).max, self.order)
        idx = np.lexsort((self.object, key))
        return pa.table({
            "order": self.order[idx], "object": self.object[idx],
            "priority": self.priority[idx], "size": self.size[idx],
            "accesses": self.accesses[idx], "tier": self.tier[idx].astype(str),
            "fast_bytes": self.fast_bytes[idx], "cumulative_fill": self.cumulative_fill[idx],
            "reason": self.reason[idx].astype(str),
        })


def prepare(table: Any, capacity_bytes: int, page_bytes: int) -> ObjectTable:
    """Validate the common inputs of every algorithm."""
    objects = table if isinstance(table, ObjectTable) else object_table(table)
    if int(capacity_bytes) < 0:
        raise UsageError(f"fast-tier capacity must be >= 0 bytes, got {capacity_bytes}")
    if int(page_bytes) < 1:
        raise UsageError(f"page size must be >= 1 byte, got {page_bytes}")
    return objects


def finish(algorithm: str, params: dict[str, Any], objects: ObjectTable, capacity_bytes: int,
           page_bytes: int, fast_bytes: np.ndarray, priority: np.ndarray, order: np.ndarray,
           fill: np.ndarray, reason: np.ndarray, warnings: tuple[str, ...] = (),
           chosen: np.ndarray | None = None) -> Placement:
    """Build a Placement; derives tier from fast_bytes and checks the capacity invariant.

    chosen marks objects the algorithm selected (default: fast_bytes > 0); it only matters
    for zero-size objects, which are "fast" when chosen although they have no fast bytes.
    When the table has lifetimes the invariant is on the peak of live fast bytes.
    """
    fast_bytes = np.asarray(fast_bytes, dtype=np.int64)
    size = objects.size
    chosen = fast_bytes > 0 if chosen is None else np.asarray(chosen, dtype=bool)
    tier = np.where(~chosen, "slow", np.where(fast_bytes >= size, "fast", "split")).astype(object)
    lifetimes = has_lifetimes(objects)
    peak = None
    if lifetimes:
        timeline = Timeline(objects, 0)
        timeline.add_many(np.arange(len(objects)), pages(fast_bytes, page_bytes))
        peak = timeline.peak * int(page_bytes)
        fill = timeline.levels(np.arange(len(objects))) * int(page_bytes)
    placement = Placement(
        algorithm=algorithm, params=dict(params), capacity_bytes=int(capacity_bytes),
        page_bytes=int(page_bytes), object=objects.object, size=size,
        accesses=objects.accesses, tier=tier, fast_bytes=fast_bytes,
        priority=np.asarray(priority, dtype=np.float64), order=np.asarray(order, dtype=np.int64),
        cumulative_fill=np.asarray(fill, dtype=np.int64), reason=np.asarray(reason, dtype=object),
        warnings=tuple(warnings), lifetimes=lifetimes, peak_fast_bytes=peak,
    )
    assert placement.peak_bytes <= (capacity_bytes // page_bytes) * page_bytes, \
        "placement exceeds the fast-tier capacity"
    return placement
