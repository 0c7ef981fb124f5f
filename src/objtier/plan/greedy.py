"""Greedy fills by access density (IISWC seed §7): `rank` (whole objects) and `spill`; and
`reuse`, spill in order of re-reference interval, for the swap tier.

Both sort objects by priority = accesses / size (accesses per byte), highest first, ties by
object id, and walk that list once:
  rank   an object goes fast when all its pages fit in what is left; otherwise it stays slow
         and the walk goes on, so smaller objects further down can still fill the gaps.
  spill  the same, except the first object that does not fit is split at the boundary: its
         first floor(left / page) pages go fast, the rest slow. The fast tier is then full.
Objects with no sampled accesses stay slow unless include_cold is set.

With lifetimes (objtier.plan.lifetime) "what is left" is the room over the object's lifetime:
the budget minus the most fast pages live at one moment while it is live. rank takes an object
when its pages fit in that room; spill gives every object min(its pages, that room), so an
object that does not fit is split at the room left over its lifetime, and objects whose
lifetimes are disjoint from the split one still get fast pages (several objects may be split).
When all objects are live at once this is exactly the lifetime-blind walk: after the first
split the room is 0 everywhere.

reuse walks like spill but in order of the objects' re-reference interval (retouch_us: the
fault sampler's mean time from arming a page to its next touch), shortest first; objects with
no interval known follow, by density. Where memory is short and the rest is swapped, what
decides is how soon a page is needed again, not how often: a page of an array swept end to
end is touched as often as one of a small table read all the time, but waits a whole sweep
between touches, and locking the table leaves the sweep to miss where it would miss anyway.
Its priority column is re-references per second (1e6 / retouch_us; 0 when unknown).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from objtier.plan.lifetime import Timeline, has_lifetimes
from objtier.plan.placement import Placement, finish, pages, prepare
from objtier.plan.table import ObjectTable


def density(accesses: np.ndarray, size: np.ndarray) -> np.ndarray:
    """accesses per byte; a zero-size object counts as one byte."""
    return np.asarray(accesses, dtype=np.float64) / np.maximum(np.asarray(size), 1)


def scan_order(priority: np.ndarray, object_ids: np.ndarray, candidate: np.ndarray) -> np.ndarray:
    """Row indices of the candidates, highest priority first, ties by ascending object id."""
    rows = np.flatnonzero(candidate)
    return rows[np.lexsort((object_ids[rows], -priority[rows]))]


def greedy_fill(objects: ObjectTable, capacity_bytes: int, page_bytes: int,
                priority: np.ndarray, split_first: bool, include_cold: bool
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One greedy walk. Returns (fast_bytes, chosen, order, cumulative fill in bytes, reason)."""
    n = len(objects)
    weight = pages(objects.size, page_bytes)           # pages per object
    left = int(capacity_bytes // page_bytes)           # free fast pages
    fast = np.zeros(n, dtype=np.int64)
    chosen = np.zeros(n, dtype=bool)
    order = np.full(n, -1, dtype=np.int64)
    fill = np.zeros(n, dtype=np.int64)                 # pages, converted at the end
    reason = np.full(n, "no sampled accesses", dtype=object)
    candidate = ((objects.accesses > 0) | include_cold) & objects.plannable
    reason[~objects.plannable] = objects.unplannable_reasons()[~objects.plannable]
    rows = scan_order(priority, objects.object, candidate)
    order[rows] = np.arange(len(rows))

    # Vectorized prefix: every object before the first one that overflows fits.
    cum = np.cumsum(weight[rows])
    head = int(np.searchsorted(cum, left, side="right"))
    taken = rows[:head]
    fast[taken] = objects.size[taken]
    chosen[taken] = True
    fill[taken] = cum[:head]
    reason[taken] = "fits"
    used = int(cum[head - 1]) if head else 0
    if has_lifetimes(objects):
        # the prefix fits whatever the lifetimes (live pages <= summed pages <= budget)
        # (finish() recomputes cumulative fill over lifetimes)
        timeline = Timeline(objects, left)
        timeline.add_many(taken, weight[taken])
        lifetime_walk(objects, rows[head:], weight, timeline, page_bytes, split_first,
                      fast, chosen, reason)
        return fast, chosen, order, fill, reason
    left -= used

    split_done = not split_first
    for row in rows[head:].tolist():
        w = int(weight[row])
        if w <= left:
            left -= w
            used += w
            fast[row] = objects.size[row]
            chosen[row] = True
            reason[row] = "fits in a gap left by a skipped larger object"
        elif not split_done:
            split_done = True
            if left > 0:
                fast[row] = left * page_bytes
                chosen[row] = True
                reason[row] = f"split at the boundary: {left} of {w} pages fast"
                used += left
                left = 0
            else:
                reason[row] = "does not fit: fast tier full"
        else:
            reason[row] = (f"does not fit: needs {w} pages, {left} left" if left
                           else "does not fit: fast tier full")
        fill[row] = used
    fill[~candidate] = used
    return fast, chosen, order, fill * page_bytes, reason


def lifetime_walk(objects: ObjectTable, rows: np.ndarray, weight: np.ndarray,
                  timeline: Timeline, page_bytes: int, split: bool, fast: np.ndarray,
                  chosen: np.ndarray, reason: np.ndarray) -> None:
    """The walk after the prefix when capacity is checked over lifetimes (in place)."""
    skipped = False
    for row in rows.tolist():
        w = int(weight[row])
        if timeline.fits(row, w):
            fast[row] = objects.size[row]
            chosen[row] = True
            reason[row] = ("fits in a gap left by a skipped larger object" if skipped
                           else "fits over its lifetime")
            timeline.add(row, w)
            continue
        skipped = True
        room = timeline.room(row)
        if split and room > 0:
            fast[row] = room * page_bytes
            chosen[row] = True
            reason[row] = f"split at the room left over its lifetime: {room} of {w} pages fast"
            timeline.add(row, room)
        else:
            reason[row] = (f"does not fit: needs {w} pages, {room} left over its lifetime"
                           if room else "does not fit: fast tier full over its lifetime")


def rank(table: Any, capacity_bytes: int, page_bytes: int = 4096,
         include_cold: bool = False) -> Placement:
    """Whole objects by accesses/size while they fit; smaller ones fill the gaps."""
    objects = prepare(table, capacity_bytes, page_bytes)
    priority = density(objects.accesses, objects.size)
    fast, chosen, order, fill, reason = greedy_fill(objects, capacity_bytes, page_bytes, priority,
                                            split_first=False, include_cold=include_cold)
    return finish("rank", {"include_cold": include_cold}, objects, capacity_bytes, page_bytes,
                  fast, priority, order, fill, reason, chosen=chosen)


def spill(table: Any, capacity_bytes: int, page_bytes: int = 4096,
          include_cold: bool = False) -> Placement:
    """rank, but the first object that does not fit is split: fast prefix, slow rest."""
    objects = prepare(table, capacity_bytes, page_bytes)
    priority = density(objects.accesses, objects.size)
    fast, chosen, order, fill, reason = greedy_fill(objects, capacity_bytes, page_bytes, priority,
                                            split_first=True, include_cold=include_cold)
    return finish("spill", {"include_cold": include_cold}, objects, capacity_bytes, page_bytes,
                  fast, priority, order, fill, reason, chosen=chosen)


def retouch_us(objects: ObjectTable) -> np.ndarray:
    """Each object's re-reference interval [us], NaN where unknown (or no such column)."""
    if objects.retouch_us is None:
        return np.full(len(objects), np.nan)
    return objects.retouch_us


def reuse_order_priority(objects: ObjectTable) -> np.ndarray:
    """Walk priority of reuse: larger first = shorter re-reference interval; objects without
    one below every object with one, ordered by density among themselves."""
    n = len(objects)
    retouch = retouch_us(objects)
    known = np.isfinite(retouch) & (retouch > 0)
    dens = density(objects.accesses, objects.size)
    # ascending sort key: known ones by interval, then unknown ones by falling density
    order = np.lexsort((objects.object, np.where(known, retouch, -dens), ~known))
    priority = np.empty(n, dtype=np.float64)
    priority[order] = np.arange(n, 0, -1, dtype=np.float64)
    return priority


def reuse(table: Any, capacity_bytes: int, page_bytes: int = 4096,
          include_cold: bool = False) -> Placement:
    """spill in order of re-reference interval (shortest first), then by density."""
    objects = prepare(table, capacity_bytes, page_bytes)
    fast, chosen, order, fill, reason = greedy_fill(objects, capacity_bytes, page_bytes,
                                                    reuse_order_priority(objects),
                                                    split_first=True, include_cold=include_cold)
    retouch = retouch_us(objects)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(np.isfinite(retouch) & (retouch > 0), 1e6 / retouch, 0.0)
    warnings = () if np.any(rate > 0) else (
        "reuse: no object has a re-reference interval (record with the fault sampler); "
        "this is spill by density",)
    return finish("reuse", {"include_cold": include_cold}, objects, capacity_bytes, page_bytes,
                  fast, rate, order, fill, reason, warnings=warnings, chosen=chosen)
