"""The objects table: one row per recorded object (allocation) with its sample metrics.

This is the table the planner and the simulator read. Columns (units in brackets):
  object        int64   row index into trace.allocations (sorted by pid, seq)
  pid, seq, context     as recorded
  context_key   string  stable 16-hex key of the allocation call stack ("" if unknown)
  occurrence    int64   n-th object (0-based, by seq) with this context_key within the pid
  addr, size    uint64  [bytes]
  alloc_ns      uint64  CLOCK_MONOTONIC [ns]
  free_ns       uint64  when its last byte was freed/unmapped [ns]; null = never freed
  lifetime_s    float64 (free_ns or end of trace) - alloc_ns [s]
  samples       int64   samples mapped to the object
  accesses      float64 fault sampler with scan windows (format 1.1+): est_touches, 0 for an
                        object never watched; otherwise the sum of sample weights (weight
                        0 = unknown counts as 1)
  watched_s     float64 fault sampler: page-seconds its pages were armed, each until its
                        first touch or the window's end [page * s]; 0 = never watched
  touch_rate    float64 first touches per page per second of watching: the rate of touch
                        episodes of a page (censored-exponential estimate); null = unwatched
  est_touches   float64 touch_rate * pages * lifetime_s: touch episodes over its lifetime;
                        null = unwatched. Unlike sample counts it does not saturate when
                        every armed page is touched within the window
  density       float64 accesses per MiB of size
  share         float64 samples / all samples of the trace (unmapped samples included)
  pages_touched int64   distinct pages (trace page size) with at least one sample
  mean_latency  float64 mean of known latencies (0 = unknown); null when none is known.
                        Unit of the sampler: fault = microseconds, PEBS/IBS = cycles
  latency_cost  float64 sum of known latencies (same unit)
  retouch_us    float64 fault sampler: mean time from arming a page to its next touch (its
                        hint-fault latency) [us], a page's re-reference interval seen from the
                        object; null when no fault sample of it has a latency
  sequential    float64 share of short forward steps (1-4 pages) among its samples, thread by
                        thread in time order, in its dominant phase (analysis.sequential): 0.9+
                        for a swept array, low for gathers; null below 32 steps
  cache_samples, fast_samples, slow_samples  int64  samples served by caches / fast memory
                        (local DRAM, uncached) / slow tier (remote DRAM, PMEM, CXL, swap)
  slow_share    float64 slow / (fast + slow); null when no sample of it says its level
  node<N>_samples int64 samples whose page was on NUMA node N (only nodes that occur)
  label         string  symbolized innermost frames, "f (file.c:12) <- g (file.c:40)"
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from objtier.analysis.mapping import NEVER, ObjectIndex, sample_objects
from objtier.analysis.sequential import sequential_shares
from objtier.trace.columns import (CACHE_LEVELS, FAST_LEVELS, SLOW_LEVELS, column,
                                   distinct_counts, level_mask, page_shift, trace_end_ns)
from objtier.trace.format import SOURCE_FAULT

MIB = 1 << 20
NODE_UNKNOWN = 0xFFFF


def _context_columns(trace, pids: np.ndarray, contexts: np.ndarray, labels: bool):
    """context_key and label per object, from the contexts table (symbolized once per context)."""
    ctx = trace.contexts
    keys = {}
    frames = {}
    if ctx.num_rows:
        for pid, cid, key, fr in zip(ctx.column("pid").to_pylist(), ctx.column("context").to_pylist(),
                                     ctx.column("key").to_pylist(), ctx.column("frames").to_pylist()):
            keys[(pid, cid)] = key
            frames[(pid, cid)] = fr
    names = {}
    if labels and frames:
        from objtier.trace.symbolize import context_labels
        order = list(frames)
        for k, text in zip(order, context_labels([frames[k] for k in order], depth=2)):
            names[k] = text
    pairs = list(zip(pids.tolist(), contexts.tolist()))
    uniq = {p: None for p in pairs}
    key_col = [keys.get(p, "") for p in uniq]
    label_col = [names.get(p) or (f"context {p[1]}" if p[1] else "(no context)") for p in uniq]
    lookup = {p: i for i, p in enumerate(uniq)}
    idx = np.fromiter((lookup[p] for p in pairs), dtype=np.int64, count=len(pairs))
    return np.array(key_col, dtype=object)[idx], np.array(label_col, dtype=object)[idx]


def _occurrence(pids: np.ndarray, keys: np.ndarray, seqs: np.ndarray) -> np.ndarray:
    """Rank (0-based, by seq) of each object among objects of the same (pid, context_key)."""
    n = len(pids)
    if not n:
        return np.zeros(0, dtype=np.int64)
    _, key_ids = np.unique(keys.astype(str), return_inverse=True)
    order = np.lexsort((seqs, key_ids, pids))
    group_start = np.ones(n, dtype=bool)
    group_start[1:] = (pids[order][1:] != pids[order][:-1]) | (key_ids[order][1:] != key_ids[order][:-1])
    first = np.maximum.accumulate(np.where(group_start, np.arange(n), 0))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - first
    return rank


def _free_times(trace, n: int) -> np.ndarray:
    """Per object: latest t_end over its live ranges (NEVER if any range is never freed)."""
    ranges = getattr(trace, "_objtier_ranges", None)
    if ranges is None:
        ranges = ObjectIndex(trace.allocations, trace.frees).ranges
    free = np.zeros(n, dtype=np.uint64)
    if len(ranges.obj):
        np.maximum.at(free, ranges.obj, ranges.t_end)
    has_range = np.zeros(n, dtype=bool)
    has_range[ranges.obj] = True
    free[~has_range] = NEVER
    return free


def window_exposure(trace, pid: np.ndarray, seq: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(watched page-seconds, first touches) per allocation row from the fault sampler's
    WINDOW records; None when the trace has none. A window's pages are watched from arming
    until their first touch (touched_ns in all) or the disarm (dwell_ns each)."""
    windows = trace.windows
    if windows.num_rows == 0 or not len(pid):
        return None
    row_key = (pid.astype(np.uint64) << np.uint64(40)) | seq
    order = np.argsort(row_key, kind="stable")
    w_key = (column(windows, "pid", np.uint64) << np.uint64(40)) | column(windows, "alloc_seq",
                                                                            np.uint64)
    at = np.searchsorted(row_key[order], w_key)
    found = at < len(order)
    found[found] = row_key[order][at[found]] == w_key[found]
    rows = order[at[found]]
    pages = column(windows, "pages", np.float64)[found]
    touched = column(windows, "touched", np.float64)[found]
    exposure_ns = (column(windows, "touched_ns", np.float64)[found]
                   + (pages - touched) * column(windows, "dwell_ns", np.float64)[found])
    n = len(pid)
    return (np.bincount(rows, weights=exposure_ns, minlength=n) / 1e9,
            np.bincount(rows, weights=touched, minlength=n))


def object_labels(trace) -> np.ndarray:
    """The allocation-site label of every object (row of trace.allocations), symbolized."""
    allocs = trace.allocations
    _, labels = _context_columns(trace, column(allocs, "pid", np.uint32),
                                 column(allocs, "context", np.uint32), True)
    return labels


def object_table(trace, mapped: np.ndarray | None = None, labels: bool = True) -> pa.Table:
    """The objects table (see module docstring). `mapped` = sample_objects(trace) if given."""
    allocs = trace.allocations
    samples = trace.samples
    n = allocs.num_rows
    mapped = sample_objects(trace) if mapped is None else mapped
    total = len(mapped)
    pid = column(allocs, "pid", np.uint32)
    seq = column(allocs, "seq", np.uint64)
    ctx = column(allocs, "context", np.uint32)
    addr = column(allocs, "addr", np.uint64)
    size = column(allocs, "size", np.uint64)
    alloc_ns = column(allocs, "time_ns", np.uint64)

    hit = mapped >= 0
    obj = mapped[hit]
    weight = column(samples, "weight", np.float64)[hit] if total else np.zeros(0)
    weight[weight == 0] = 1.0
    counts = np.bincount(obj, minlength=n).astype(np.int64)
    accesses = np.bincount(obj, weights=weight, minlength=n)
    latency = column(samples, "latency", np.float64)[hit] if total else np.zeros(0)
    known = latency > 0
    lat_n = np.bincount(obj[known], minlength=n)
    lat_sum = np.bincount(obj[known], weights=latency[known], minlength=n)
    fault = known & ((column(samples, "source", np.uint16)[hit] if total
                      else np.zeros(0, np.uint16)) == SOURCE_FAULT)
    fault_n = np.bincount(obj[fault], minlength=n)
    fault_sum = np.bincount(obj[fault], weights=latency[fault], minlength=n)
    level = column(samples, "level", np.uint8)[hit] if total else np.zeros(0, np.uint8)
    node = column(samples, "node", np.uint16)[hit] if total else np.zeros(0, np.uint16)

    def count_where(mask):
        return np.bincount(obj[mask], minlength=n).astype(np.int64)

    cache_n = count_where(level_mask(level, CACHE_LEVELS))
    fast_n = count_where(level_mask(level, FAST_LEVELS))
    slow_n = count_where(level_mask(level, SLOW_LEVELS))
    shift = page_shift(trace)
    page = (column(samples, "addr", np.uint64)[hit] >> np.uint64(shift)).astype(np.int64) \
        if total else np.zeros(0, np.int64)
    pages_touched = np.zeros(n, dtype=np.int64)
    if len(obj):
        first_page = (addr >> np.uint64(shift)).astype(np.int64)
        rel = page - first_page[obj]
        span = int(rel.max()) + 1
        key = obj.astype(np.int64) * span + rel
        pages_touched = np.bincount(distinct_counts(key)[0] // span, minlength=n).astype(np.int64)

    free_ns = _free_times(trace, n)
    never = free_ns == NEVER
    end = trace_end_ns(trace)
    lifetime = (np.where(never, np.uint64(max(end, 0)), free_ns).astype(np.float64)
                - alloc_ns.astype(np.float64)) / 1e9
    keys, label = _context_columns(trace, pid, ctx, labels)
    watched = window_exposure(trace, pid, seq)
    watched_s, touches = watched if watched is not None else (np.zeros(n), np.zeros(n))
    unwatched = watched_s <= 0
    with np.errstate(invalid="ignore", divide="ignore"):
        touch_rate = np.where(unwatched, 0.0, touches / watched_s)
        est_touches = touch_rate * (size.astype(np.float64) / float(1 << shift)) * \
            np.maximum(lifetime, 0.0)
    if watched is not None:
        accesses = np.where(unwatched, 0.0, est_touches)
    with np.errstate(invalid="ignore", divide="ignore"):
        density = np.where(size > 0, accesses / (size.astype(np.float64) / MIB), 0.0)
        mean_latency = lat_sum / lat_n
        retouch_us = fault_sum / fault_n
        memory = fast_n + slow_n
        slow_share = slow_n / memory
    sequential = sequential_shares(trace, mapped)
    columns = {
        "object": pa.array(np.arange(n, dtype=np.int64)),
        "pid": pa.array(pid), "seq": pa.array(seq), "context": pa.array(ctx),
        "context_key": pa.array(keys.tolist() if n else [], pa.string()),
        "occurrence": pa.array(_occurrence(pid, keys, seq)),
        "addr": pa.array(addr), "size": pa.array(size), "alloc_ns": pa.array(alloc_ns),
        "free_ns": pa.array(free_ns, mask=never),
        "lifetime_s": pa.array(np.maximum(lifetime, 0.0)),
        "samples": pa.array(counts), "accesses": pa.array(accesses),
        "watched_s": pa.array(watched_s),
        "touch_rate": pa.array(touch_rate, mask=unwatched),
        "est_touches": pa.array(est_touches, mask=unwatched),
        "density": pa.array(density),
        "share": pa.array(counts / total if total else np.zeros(n)),
        "pages_touched": pa.array(pages_touched),
        "mean_latency": pa.array(mean_latency, mask=lat_n == 0),
        "latency_cost": pa.array(lat_sum),
        "retouch_us": pa.array(retouch_us, mask=fault_n == 0),
        "sequential": pa.array(sequential, mask=np.isnan(sequential)),
        "cache_samples": pa.array(cache_n), "fast_samples": pa.array(fast_n),
        "slow_samples": pa.array(slow_n),
        "slow_share": pa.array(slow_share, mask=memory == 0),
    }
    known_node = node != NODE_UNKNOWN
    for value in np.flatnonzero(np.bincount(node[known_node], minlength=1)).tolist():
        columns[f"node{value}_samples"] = pa.array(count_where(node == value))
    columns["label"] = pa.array(label.tolist() if n else [], pa.string())
    return pa.table(columns)


def unmapped_count(mapped: np.ndarray) -> int:
    """Samples that fall outside every tracked object."""
    return int((mapped < 0).sum())
