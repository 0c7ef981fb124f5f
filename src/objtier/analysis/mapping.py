"""Map samples to the objects live at their address at their time (an interval join).

Model
  An object is one ALLOC record (its index in the allocations table, sorted by pid, seq). It
  owns the byte range [addr, addr + size) from its alloc time until:
    - a whole free (FREE record with size 0: free, realloc, exit, munmap of the whole object),
      matched to the latest earlier ALLOC of the same pid at the same address;
    - partial unmaps (MUNMAP/MREMAP records with size > 0) remove [addr, addr + size) from every
      live range they overlap: a prefix trim, a suffix trim, a hole (the object becomes two
      ranges) or the whole range;
    - a later allocation overlapping its bytes: an address reused by a later allocation belongs
      to the later object (this also covers frees the runtime could not record);
  Objects never freed live to the end of the trace.

Times are CLOCK_MONOTONIC ns. A range is live for t_begin <= t < t_end. A sample at time t and
address a of pid p maps to the unique live range of p containing a, or to -1 (no object).

Method
  Per pid, all range boundaries split the address space into elementary segments. Every range
  is expanded into the segments it covers ("entries"), sorted by (segment, t_begin); inside a
  segment the entries are disjoint in time once each is cut at its successor's begin (the reuse
  rule above). A sample finds its segment, then the last entry of that segment begun at or
  before its time, and checks that entry is still live. Segments with one entry (the common
  case) need no second search. The segment of an address comes from a two-level direct table
  (1 GiB directory, then fixed granules) when addresses fit in 48 bits, so no per-sample binary
  search is needed except for granules that contain a boundary.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from objtier.trace.columns import column

NEVER = np.iinfo(np.uint64).max  # t_end / end seq of a range that is never freed
_TOP_SHIFT = 30                  # directory granule: 1 GiB
_ADDR_BITS = 48                  # direct tables only when every address is below 2**48
_SCAN = 4                        # segments with up to this many entries: a short scan
_CHUNK = 1 << 15                 # samples per vectorized block (temporaries fit in L2)
_MAX_TABLE = 1 << 23             # cap on level-2 table entries (int32: 32 MiB)


@dataclass
class Ranges:
    """Live ranges: object `obj` owns [start, end) for t_begin <= t < t_end (ns)."""

    pid: np.ndarray      # uint32
    start: np.ndarray    # uint64, byte address
    end: np.ndarray      # uint64, one past the last byte
    t_begin: np.ndarray  # uint64 ns
    t_end: np.ndarray    # uint64 ns; NEVER when never freed
    obj: np.ndarray      # int64, index into the allocations table


def live_ranges(allocations: pa.Table, frees: pa.Table) -> Ranges:
    """Every object's live address ranges after applying whole frees and partial unmaps."""
    a_pid = column(allocations, "pid", np.uint32)
    a_seq = column(allocations, "seq", np.uint64)
    a_time = column(allocations, "time_ns", np.uint64)
    a_addr = column(allocations, "addr", np.uint64)
    a_size = column(allocations, "size", np.uint64)
    n = len(a_pid)
    f_pid = column(frees, "pid", np.uint32)
    f_seq = column(frees, "seq", np.uint64)
    f_time = column(frees, "time_ns", np.uint64)
    f_addr = column(frees, "addr", np.uint64)
    f_size = column(frees, "size", np.uint64)
    whole = f_size == 0

    # Whole frees: sort allocs and frees together by (pid, addr, seq); a free matches the event
    # just before it when that event is an alloc of the same pid and address (a second free of
    # the same address matches nothing).
    end_time = np.full(n, NEVER, dtype=np.uint64)
    end_seq = np.full(n, NEVER, dtype=np.uint64)
    wf = np.flatnonzero(whole)
    if len(wf) and n:
        pid = np.concatenate([a_pid, f_pid[wf]])
        addr = np.concatenate([a_addr, f_addr[wf]])
        seq = np.concatenate([a_seq, f_seq[wf]])
        ident = np.concatenate([np.arange(n), -1 - np.arange(len(wf))])  # >= 0 alloc, < 0 free
        order = np.lexsort((seq, addr, pid))
        ident, pid, addr = ident[order], pid[order], addr[order]
        is_free = ident[1:] < 0
        match = is_free & (ident[:-1] >= 0) & (pid[1:] == pid[:-1]) & (addr[1:] == addr[:-1])
        objs = ident[:-1][match]
        fidx = wf[-1 - ident[1:][match]]
        end_time[objs] = f_time[fidx]
        end_seq[objs] = f_seq[fidx]

    keep = a_size > 0
    r_obj = np.flatnonzero(keep).astype(np.int64)
    r = dict(pid=a_pid[keep], start=a_addr[keep], end=a_addr[keep] + a_size[keep],
             t_begin=a_time[keep], t_end=end_time[keep], b_seq=a_seq[keep], e_seq=end_seq[keep],
             obj=r_obj)

    # Partial unmaps, in (pid, seq) order. One step per unmap record (they are rare: only
    # munmap/mremap of part of a mapping); each step is vectorized over the ranges. The cut
    # range ends at the unmap; the remaining prefix/suffix pieces keep its begin time (so that
    # bytes a later allocation took over in between stay with that allocation, see
    # _build_pid_index) and its end.
    partial = np.flatnonzero(~whole)
    if len(partial) and len(r_obj):
        partial = partial[np.lexsort((f_seq[partial], f_pid[partial]))]
        for i in partial.tolist():
            lo, hi = f_addr[i], f_addr[i] + f_size[i]
            t, s = f_time[i], f_seq[i]
            hit = np.flatnonzero((r["pid"] == f_pid[i]) & (r["start"] < hi) & (r["end"] > lo)
                                 & (r["b_seq"] < s) & (r["e_seq"] > s))
            if not len(hit):
                continue
            pieces = []
            for side in ("prefix", "suffix"):
                if side == "prefix":
                    sel = hit[r["start"][hit] < lo]
                    new_start, new_end = r["start"][sel], np.full(len(sel), lo, np.uint64)
                else:
                    sel = hit[r["end"][hit] > hi]
                    new_start, new_end = np.full(len(sel), hi, np.uint64), r["end"][sel]
                if len(sel):
                    pieces.append(dict(pid=r["pid"][sel], start=new_start, end=new_end,
                                       t_begin=r["t_begin"][sel],
                                       t_end=r["t_end"][sel], b_seq=np.full(len(sel), s, np.uint64),
                                       e_seq=r["e_seq"][sel], obj=r["obj"][sel]))
            r["t_end"][hit] = np.minimum(r["t_end"][hit], t)
            r["e_seq"][hit] = s
            for piece in pieces:
                r = {k: np.concatenate([r[k], piece[k]]) for k in r}
    return Ranges(pid=r["pid"], start=r["start"], end=r["end"], t_begin=r["t_begin"],
                  t_end=r["t_end"], obj=r["obj"])


@dataclass
class _PidIndex:
    bounds: np.ndarray     # uint64 sorted unique range boundaries; segment j = [b[j], b[j+1])
    seg_first_ext: np.ndarray  # int64 first entry of segment s at [s + 1]; [0] and [-1] are
    seg_count_ext: np.ndarray  # sentinels for addresses outside all bounds (count 0)
    max_count: int         # most entries in one segment
    e_tb: np.ndarray       # uint64 entry begin (ns), sorted by (segment, t_begin); + sentinel
    e_te: np.ndarray       # uint64 entry end, cut at the next entry's begin in the segment
    e_obj: np.ndarray      # int64 object (-1 for the sentinel)
    e_key: np.ndarray      # int64 segment * (K + 1) + rank of t_begin (for reused segments)
    tb_unique: np.ndarray  # uint64 sorted distinct t_begin values (rank table)
    table: tuple | None    # direct address -> segment tables, see _build_table


def _build_pid_index(rg: Ranges, sel: np.ndarray) -> _PidIndex:
    start, end = rg.start[sel], rg.end[sel]
    tb, te, obj = rg.t_begin[sel], rg.t_end[sel], rg.obj[sel]
    bounds = np.unique(np.concatenate([start, end]))
    first = np.searchsorted(bounds, start)
    count = np.searchsorted(bounds, end) - first
    total = int(count.sum())
    rep = np.repeat(np.arange(len(start)), count)
    offsets = np.cumsum(count) - count
    seg = first[rep] + (np.arange(total) - offsets[rep])
    order = np.lexsort((rg.obj[sel][rep], tb[rep], seg))  # later t_begin last; ties: later obj
    seg, rep = seg[order], rep[order]
    e_tb, e_te, e_obj = tb[rep], te[rep].copy(), obj[rep]
    same = seg[1:] == seg[:-1]
    e_te[:-1][same] = np.minimum(e_te[:-1][same], e_tb[1:][same])
    nseg = max(len(bounds) - 1, 0)
    seg_first = np.searchsorted(seg, np.arange(nseg))
    seg_count = np.searchsorted(seg, np.arange(nseg), side="right") - seg_first
    tb_unique = np.unique(e_tb)
    k1 = len(tb_unique) + 1
    e_key = seg.astype(np.int64) * k1 + (np.searchsorted(tb_unique, e_tb, side="right"))
    # Sentinel entry (never live) at the end; segment tables padded for seg = -1 and seg = nseg.
    sentinel = len(e_tb)
    e_tb = np.concatenate([e_tb, np.full(_SCAN + 1, NEVER, dtype=np.uint64)])
    e_te = np.concatenate([e_te, np.zeros(_SCAN + 1, dtype=np.uint64)])
    e_obj = np.concatenate([e_obj, np.full(_SCAN + 1, -1, dtype=np.int64)])
    first_ext = np.concatenate([[sentinel], np.where(seg_count > 0, seg_first, sentinel),
                                [sentinel]]).astype(np.int64)
    count_ext = np.concatenate([[0], seg_count, [0]]).astype(np.int64)
    max_count = int(seg_count.max()) if len(seg_count) else 0
    return _PidIndex(bounds, first_ext, count_ext, max_count, e_tb, e_te, e_obj, e_key,
                     tb_unique, _build_table(bounds, seg_count))


def _build_table(bounds: np.ndarray, seg_count: np.ndarray):
    """Direct tables: top[a >> 30] -> base of the address's 1 GiB directory in level2;
    level2[base + granule] -> the segment holding the whole granule, or -1 when a boundary falls
    inside the granule (those samples take the binary search). None when not applicable."""
    if len(bounds) < 2 or int(bounds[-1]) >= 1 << _ADDR_BITS:
        return None
    first_dir = (bounds[:-1] >> np.uint64(_TOP_SHIFT)).astype(np.int64)
    last_dir = ((bounds[1:] - np.uint64(1)) >> np.uint64(_TOP_SHIFT)).astype(np.int64)
    # Directories listed: those holding a boundary and every one inside a covered segment
    # (wide gaps between objects, e.g. heap to mmap area, are left to the binary search).
    covered = seg_count > 0
    span = np.where(covered, last_dir - first_dir + 1, 1)
    if int(span.sum()) > (1 << 14):
        return None
    rep = np.repeat(np.arange(len(first_dir)), span)
    inner = first_dir[rep] + (np.arange(len(rep)) - (np.cumsum(span) - span)[rep])
    dirs = np.unique(np.concatenate([inner, last_dir]))
    shift = _TOP_SHIFT
    while shift > 12 and (len(dirs) + 1) << (_TOP_SHIFT - (shift - 1)) <= _MAX_TABLE:
        shift -= 1
    per_dir = 1 << (_TOP_SHIFT - shift)
    # Block 0 of level2 is all "search" markers; unlisted directories point at it, so every
    # address below 2**48 has a valid level2 slot and no per-sample bounds check is needed.
    top = np.zeros(1 << (_ADDR_BITS - _TOP_SHIFT), dtype=np.int64)
    top[dirs] = (np.arange(len(dirs), dtype=np.int64) + 1) * per_dir
    granule_start = ((dirs.astype(np.uint64)[:, None] << np.uint64(_TOP_SHIFT))
                     + (np.arange(per_dir, dtype=np.uint64) << np.uint64(shift))[None, :]).ravel()
    seg_at = np.searchsorted(bounds, granule_start, side="right") - 1
    seg_end = np.searchsorted(bounds, granule_start + np.uint64((1 << shift) - 1), side="right") - 1
    level2 = np.concatenate([np.full(per_dir, -1, dtype=np.int32),
                             np.where(seg_at == seg_end, seg_at, -1).astype(np.int32)])
    return (top, shift, level2)


def _segments(index: _PidIndex, addr: np.ndarray) -> np.ndarray:
    """Segment index per address: -1 below the first bound, nseg at or above the last."""
    table = index.table
    if table is None or not len(addr) or int(addr.max()) >= 1 << _ADDR_BITS:
        return np.searchsorted(index.bounds, addr, side="right") - 1
    top, shift, level2 = table
    base = top[addr >> np.uint64(_TOP_SHIFT)]
    base += (addr >> np.uint64(shift)).view(np.int64) & np.int64((1 << (_TOP_SHIFT - shift)) - 1)
    seg = level2[base].astype(np.int64)
    # -1 marks a granule holding a boundary (or an unlisted directory): binary search those.
    # A real segment -1 (below the first bound) is never stored: such granules hold bounds[0].
    idx = np.flatnonzero(seg < 0)
    if len(idx):
        seg[idx] = np.searchsorted(index.bounds, addr[idx], side="right") - 1
    return seg


def _map_pid(index: _PidIndex, addr: np.ndarray, t: np.ndarray) -> np.ndarray:
    # seg + 1 indexes the segment tables, which carry a sentinel at both ends (below the first
    # bound, at or above the last); empty segments point at the sentinel entry, never live.
    seg1 = _segments(index, addr) + 1
    first = index.seg_first_ext[seg1]
    count = index.seg_count_ext[seg1]
    e = first.copy()
    # Entries of a segment are sorted by begin time and disjoint in time: the candidate is the
    # last one begun at or before t.
    # (The entry arrays end with _SCAN sentinels, so first + j is always a valid index.)
    for j in range(1, min(index.max_count, _SCAN)):
        c = first + j
        step = count > j
        step &= index.e_tb[c] <= t
        np.copyto(e, c, where=step)
    many = np.flatnonzero(count > _SCAN)
    if len(many):
        k1 = len(index.tb_unique) + 1
        rank = np.searchsorted(index.tb_unique, t[many], side="right")
        key = (seg1[many] - 1) * k1 + rank
        found = np.searchsorted(index.e_key, key, side="right") - 1
        # found >= first always holds: the segment's first entry has the smallest key.
        e[many] = np.maximum(found, first[many])
    ok = index.e_tb[e] <= t
    ok &= t < index.e_te[e]
    out = index.e_obj[e]
    out[~ok] = -1
    return out


class ObjectIndex:
    """Reusable lookup structure over the live ranges of every pid."""

    def __init__(self, allocations: pa.Table, frees: pa.Table):
        self.ranges = live_ranges(allocations, frees)
        self.by_pid: dict[int, _PidIndex] = {}
        for p in np.unique(self.ranges.pid).tolist():
            self.by_pid[p] = _build_pid_index(self.ranges, self.ranges.pid == p)

    def lookup(self, pid: np.ndarray, addr: np.ndarray, time_ns: np.ndarray) -> np.ndarray:
        """Object index per sample (int64; -1 = outside every live object)."""
        addr = np.ascontiguousarray(addr, dtype=np.uint64)
        time_ns = np.ascontiguousarray(time_ns, dtype=np.uint64)
        pid = np.asarray(pid)
        out = np.full(len(addr), -1, dtype=np.int64)
        if not len(addr) or not self.by_pid:
            return out
        if len(pid) and pid[0] == pid[-1] and int(pid.min()) == int(pid.max()):
            p = int(pid[0])
            if p in self.by_pid:
                _map_chunked(self.by_pid[p], addr, time_ns, out)
            return out
        for p in self.by_pid:
            sel = np.flatnonzero(pid == p)
            if len(sel):
                part = np.empty(len(sel), dtype=np.int64)
                _map_chunked(self.by_pid[p], addr[sel], time_ns[sel], part)
                out[sel] = part
        return out


def _map_chunked(index: _PidIndex, addr: np.ndarray, t: np.ndarray, out: np.ndarray) -> None:
    """_map_pid over blocks of _CHUNK samples: the temporaries stay in cache (one Python step
    per block of samples, never per sample)."""
    for lo in range(0, len(addr), _CHUNK):
        hi = lo + _CHUNK
        out[lo:hi] = _map_pid(index, addr[lo:hi], t[lo:hi])


def map_samples(allocations: pa.Table, frees: pa.Table, samples: pa.Table) -> np.ndarray:
    """Object index (row of `allocations`) per row of `samples`; -1 = no live object there."""
    index = ObjectIndex(allocations, frees)
    return index.lookup(column(samples, "pid", np.uint32), column(samples, "addr", np.uint64),
                        column(samples, "time_ns", np.uint64))


def sample_objects(trace) -> np.ndarray:
    """Object index per row of trace.samples (-1 = outside every object); cached on the trace."""
    cached = getattr(trace, "_objtier_sample_objects", None)
    if cached is not None:
        return cached
    index = ObjectIndex(trace.allocations, trace.frees)
    samples = trace.samples
    mapped = index.lookup(column(samples, "pid", np.uint32), column(samples, "addr", np.uint64),
                          column(samples, "time_ns", np.uint64))
    trace._objtier_sample_objects = mapped
    trace._objtier_ranges = index.ranges
    return mapped
