"""Static placements for the simulator's `static` core policy:

  object  whole objects by access density (objtier.plan.rank), or an objtier plan (--plan)
  spill   the same, splitting the first object that does not fit (objtier.plan.spill)
  oracle  the best static placement for this trace: pages ranked by their own access count,
          the top ones up to the fast capacity (treats all objects as live at once, so it is the
          optimum when their lifetimes overlap, and an approximation otherwise)

Each returns arrays for Simulator.set_placement: fast_bytes per object (prefix), or a page bitmap
with a per-object base index.
"""

from __future__ import annotations

import numpy as np

from objtier.errors import UsageError
from objtier.sim.events import EventSource


def object_accesses(trace, source: EventSource, default_weight: int = 1
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(object index per sample (-1 = none), accesses per object) with sample weights applied."""
    obj = source.sample_obj  # mapped once by events.from_tables
    if obj is None:
        from objtier.analysis.mapping import map_samples

        obj = map_samples(trace.allocations, trace.frees, trace.samples)
    weight = trace.samples.column("weight").to_numpy(zero_copy_only=False).astype(np.float64)
    weight[weight == 0] = max(default_weight, 1)
    hit = obj >= 0
    acc = np.bincount(obj[hit], weights=weight[hit], minlength=source.objects)
    return obj, acc


def context_keys(trace, source: EventSource) -> np.ndarray:
    """Stable context key (16 hex digits) per object; '0'*16 when unknown."""
    ctx = trace.contexts
    a_ctx = trace.allocations.column("context").to_numpy(zero_copy_only=False).astype(np.uint64)
    out = np.full(source.objects, "0" * 16, dtype=object)
    if ctx.num_rows == 0 or source.objects == 0:
        return out
    c_id = (ctx.column("pid").to_numpy(zero_copy_only=False).astype(np.uint64) << np.uint64(32)) \
        | ctx.column("context").to_numpy(zero_copy_only=False).astype(np.uint64)
    keys = np.asarray(ctx.column("key").to_pylist(), dtype=object)
    order = np.argsort(c_id)
    c_id, keys = c_id[order], keys[order]
    want = (source.pid.astype(np.uint64) << np.uint64(32)) | a_ctx
    pos = np.clip(np.searchsorted(c_id, want), 0, len(c_id) - 1)
    found = c_id[pos] == want
    out[found] = keys[pos[found]]
    return out


def occurrences(keys: np.ndarray, pid: np.ndarray) -> np.ndarray:
    """0-based rank of each object among the objects of its (pid, context), in table order."""
    group = np.unique(np.stack([pid.astype(str), keys.astype(str)], axis=1), axis=0,
                      return_inverse=True)[1].ravel() if len(keys) else np.zeros(0, int)
    order = np.argsort(group, kind="stable")
    ranks = np.empty(len(keys), dtype=np.int64)
    counts = np.bincount(group) if len(group) else np.zeros(0, int)
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    ranks[order] = np.arange(len(keys)) - starts
    return ranks


def planner_table(trace, source: EventSource, accesses: np.ndarray) -> dict:
    keys = context_keys(trace, source)
    return {
        "object": np.arange(source.objects), "context_key": keys.astype(str),
        "occurrence": occurrences(keys, source.pid), "size": source.size,
        "accesses": accesses, "label": np.full(source.objects, "", dtype=object),
        "alloc_ns": source.alloc_ns, "free_ns": source.free_ns,
    }


def planned_fast_bytes(trace, source: EventSource, accesses: np.ndarray, capacity: int,
                       page_bytes: int, algorithm: str) -> np.ndarray:
    """fast_bytes per object from objtier's planner ('rank' whole objects, or 'spill')."""
    from objtier import plan

    if source.objects == 0:
        return np.zeros(0, dtype=np.uint64)
    table = planner_table(trace, source, accesses)
    placement = plan.ALGORITHMS[algorithm](table, capacity_bytes=capacity, page_bytes=page_bytes)
    return np.asarray(placement.fast_bytes, dtype=np.uint64)


def plan_file_fast_bytes(trace, source: EventSource, plan_doc: dict,
                         phase: str = "*") -> np.ndarray:
    """fast_bytes per object from a plan document's entries for `phase` (default the whole
    program, "*"). In another phase, an object with no entry of its own keeps its "*" entry,
    as the runtime does."""
    keys = context_keys(trace, source)
    occ = occurrences(keys, source.pid)
    out, matched = _plan_phase_fast_bytes(source, plan_doc, phase, keys, occ)
    if phase != "*":
        root, _ = _plan_phase_fast_bytes(source, plan_doc, "*", keys, occ)
        out[~matched] = root[~matched]
    return out


def page_layout(source: EventSource, page_shift: int) -> tuple[np.ndarray, np.ndarray,
                                                                 np.ndarray]:
    """Per object: its first page number (uint64), the pages it touches (int64; 0 for an empty
    object) and the index of its first page in a bitmap of all objects' pages (uint64)."""
    sh = np.uint64(page_shift)
    size = source.size.astype(np.uint64)
    first = source.addr >> sh
    npages = np.where(size > 0, ((source.addr + np.maximum(size, 1) - np.uint64(1)) >> sh)
                      - first + np.uint64(1), 0).astype(np.int64)
    base = np.concatenate([[0], np.cumsum(npages)[:-1]]).astype(np.uint64) if len(npages) \
        else np.zeros(0, np.uint64)
    return first, npages, base


def plan_file_page_bits(trace, source: EventSource, plan_doc: dict, page_shift: int
                        ) -> tuple[np.ndarray, np.ndarray] | None:
    """(page_bits, page_base) of a plan with "pages" entries (whole program, "*"), None when it
    has none. A pages entry's ranges count from the object's first whole page; every other
    entry's fast prefix covers the pages of [addr, addr + fast_bytes), as with fast_bytes."""
    entries = [e for e in plan_doc.get("entries", [])
               if e.get("phase", "*") == "*" and e.get("tier") == "pages"]
    if not entries:
        return None
    keys = context_keys(trace, source)
    occ = occurrences(keys, source.pid)
    fast, _ = _plan_phase_fast_bytes(source, plan_doc, "*", keys, occ)
    sh = np.uint64(page_shift)
    page = 1 << page_shift
    first, npages, base = page_layout(source, page_shift)
    base = base.astype(np.int64)
    bits = np.zeros(max(int(npages.sum()), 1), dtype=np.uint8)
    prefix = np.where(fast > 0, ((source.addr + fast - np.uint64(1)) >> sh) - first
                      + np.uint64(1), 0).astype(np.int64)
    for i in np.flatnonzero(prefix).tolist():
        bits[base[i]:base[i] + min(int(prefix[i]), int(npages[i]))] = 1
    for entry in entries:
        for i in np.flatnonzero(_entry_objects(entry, keys, occ, source.size)).tolist():
            bits[base[i]:base[i] + npages[i]] = 0   # the entry's ranges replace its prefix
            lead = 1 if int(source.addr[i]) % page else 0  # partial first page: not whole
            for off, length in entry["ranges"]:
                lo = min(lead + off // page, int(npages[i]))
                hi = min(lead + (off + length) // page, int(npages[i]))
                bits[base[i] + lo:base[i] + hi] = 1
    return bits, base.astype(np.uint64)


def _entry_objects(entry: dict, keys: np.ndarray, occ: np.ndarray,
                   size: np.ndarray) -> np.ndarray:
    """The objects a plan entry names (its context key, size range and occurrence), as the
    runtime matches them."""
    try:
        sel = keys == entry["context_key"]
        lo, hi = entry.get("size_min"), entry.get("size_max")
        if lo is not None:
            sel &= size >= int(lo)
        if hi is not None:
            sel &= size <= int(hi)
        if entry.get("occurrence") is not None:
            sel &= occ == int(entry["occurrence"])
    except (KeyError, TypeError, ValueError):
        raise UsageError("plan entry without context_key/fast_bytes") from None
    return sel


def _plan_phase_fast_bytes(source: EventSource, plan_doc: dict, phase: str, keys: np.ndarray,
                           occ: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    out = np.zeros(source.objects, dtype=np.uint64)
    matched = np.zeros(source.objects, dtype=bool)
    size = source.size
    for entry in plan_doc.get("entries", []):
        if entry.get("phase", "*") != phase:
            continue
        sel = _entry_objects(entry, keys, occ, size)
        try:
            fast = int(entry["fast_bytes"])
        except (KeyError, TypeError, ValueError):
            raise UsageError("plan entry without context_key/fast_bytes") from None
        out[sel] = np.minimum(size[sel], fast).astype(np.uint64)
        matched |= sel
    return out, matched


def oracle_pages(source: EventSource, sample_obj: np.ndarray, sample_addr: np.ndarray,
                 weights: np.ndarray, capacity_pages: int, page_shift: int) -> tuple[np.ndarray, np.ndarray]:
    """(page_bits, page_base): the capacity_pages most accessed object pages."""
    sh = np.uint64(page_shift)
    first, npages, base = page_layout(source, page_shift)
    total = int(npages.sum())
    bits = np.zeros(max(total, 1), dtype=np.uint8)
    hit = sample_obj >= 0
    if hit.any() and capacity_pages > 0:
        obj = sample_obj[hit]
        addr = sample_addr.astype(np.uint64)[hit]
        k = (addr >> sh) - first[obj]
        ok = k < npages[obj].astype(np.uint64)
        idx = (base[obj[ok]] + k[ok]).astype(np.int64)
        counts = np.bincount(idx, weights=weights[hit][ok], minlength=total)
        ranked = np.argsort(-counts, kind="stable")[:capacity_pages]
        ranked = ranked[counts[ranked] > 0]
        bits[ranked] = 1
    return bits, base
