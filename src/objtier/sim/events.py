"""Turn a recorded trace into the simulator's event stream, in bounded chunks.

Objects are the rows of trace.allocations (sorted by pid, seq); object i is index i. Address
spaces are the distinct pids. Events:
  ALLOC  at the allocation time;
  FREE   whole object at its matched free (the FREE record with size 0 of the same pid and
         address following it in (pid, addr, seq) order), or a range [addr, addr+size) for a
         partial munmap/mremap (the core drops the pages inside it);
  ACCESS one per sample, standing for `weight` accesses (`default_weight` when the sampler
         wrote 0 = unknown), naming the object it falls in (NO_OBJ for none).
  PHASE  at each switch of the phase in force (phases policy only; see objtier.sim.phase_events).
At equal times allocations and phase switches come before accesses and accesses before frees.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from objtier.sim.engine import EV_ACCESS, EV_ALLOC, EV_FREE, EVENT, NO_OBJ
from objtier.trace.columns import column

CHUNK_SAMPLES = 1 << 20  # samples per chunk handed to the core


@dataclass
class EventSource:
    """Columns needed by the simulator, with time-sorted event arrays ready to merge."""

    objects: int
    start_ns: int
    end_ns: int
    alloc_ev: np.ndarray   # EVENT, time sorted
    free_ev: np.ndarray    # EVENT, time sorted
    sample_ev: np.ndarray  # EVENT, time sorted
    size: np.ndarray       # per object, bytes
    alloc_ns: np.ndarray   # per object
    free_ns: np.ndarray    # per object, -1 = never freed
    pid: np.ndarray        # per object
    addr: np.ndarray       # per object
    sample_obj: np.ndarray | None = None  # object per sample in trace order (-1 = none)
    phase_ev: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=EVENT))
    # PHASE events, time sorted (set by the driver for the phases policy; others ignore them)

    @property
    def events(self) -> int:
        return len(self.alloc_ev) + len(self.free_ev) + len(self.sample_ev) + len(self.phase_ev)

    def chunks(self, chunk: int = CHUNK_SAMPLES) -> Iterator[np.ndarray]:
        """Time-ordered EVENT arrays of about `chunk` samples plus the allocations and frees
        up to the last sample's time (the last chunk takes everything left)."""
        a = f = p = 0
        n = len(self.sample_ev)
        s = 0
        a_time, f_time = self.alloc_ev["time_ns"], self.free_ev["time_ns"]
        p_time = self.phase_ev["time_ns"]
        while True:
            e = min(s + chunk, n)
            last = e >= n
            if last:
                a_end, f_end, p_end = len(a_time), len(f_time), len(p_time)
            else:
                t_hi = self.sample_ev["time_ns"][e - 1]
                a_end = int(np.searchsorted(a_time, t_hi, side="right"))
                f_end = int(np.searchsorted(f_time, t_hi, side="right"))
                p_end = int(np.searchsorted(p_time, t_hi, side="right"))
            samples = self.sample_ev[s:e]
            other = np.concatenate([self.alloc_ev[a:a_end], self.phase_ev[p:p_end],
                                    self.free_ev[f:f_end]])
            if len(other):
                # allocations and frees are few: insert them into the sorted samples (O(n))
                # rather than sorting the chunk; allocations and phase switches go before
                # samples of equal time, frees after them, all keep their time order
                other = other[np.argsort(other["time_ns"], kind="stable")]
                st = samples["time_ns"]
                is_free = other["type"] == EV_FREE
                pos = np.where(is_free, np.searchsorted(st, other["time_ns"], side="right"),
                               np.searchsorted(st, other["time_ns"], side="left"))
                pos = np.maximum.accumulate(pos) if len(pos) else pos
                samples = np.insert(samples, pos, other)
            yield samples
            a, f, p, s = a_end, f_end, p_end, e
            if last:
                return


def _sorted(ev: np.ndarray) -> np.ndarray:
    return ev[np.argsort(ev["time_ns"], kind="stable")]


def from_tables(allocations, frees, samples, start_ns: int | None = None,
                default_weight: int = 1) -> EventSource:
    """Build the event source from the trace's pyarrow tables."""
    a_pid = column(allocations, "pid", np.uint32)
    a_seq = column(allocations, "seq", np.uint64)
    a_time = column(allocations, "time_ns", np.uint64)
    a_addr = column(allocations, "addr", np.uint64)
    a_size = column(allocations, "size", np.uint64)
    f_pid = column(frees, "pid", np.uint32)
    f_seq = column(frees, "seq", np.uint64)
    f_time = column(frees, "time_ns", np.uint64)
    f_addr = column(frees, "addr", np.uint64)
    f_size = column(frees, "size", np.uint64)
    s_pid = column(samples, "pid", np.uint32)
    s_time = column(samples, "time_ns", np.uint64)
    n = len(a_pid)
    if n >= NO_OBJ:
        from objtier.errors import TraceError
        raise TraceError(f"too many objects for the simulator ({n})")

    pids = np.unique(np.concatenate([a_pid, f_pid, s_pid]))
    space = lambda p: np.searchsorted(pids, p).astype(np.uint32)  # noqa: E731

    alloc_ev = np.zeros(n, dtype=EVENT)
    alloc_ev["time_ns"], alloc_ev["addr"], alloc_ev["size"] = a_time, a_addr, a_size
    alloc_ev["obj"] = np.arange(n, dtype=np.uint32)
    alloc_ev["space"] = space(a_pid)
    alloc_ev["type"] = EV_ALLOC

    # whole frees matched to the alloc just before them in (pid, addr, seq) order
    whole = np.flatnonzero(f_size == 0)
    free_obj = np.full(len(f_pid), NO_OBJ, dtype=np.uint32)
    free_ns = np.full(n, -1, dtype=np.int64)
    if len(whole) and n:
        ident = np.concatenate([np.arange(n), -1 - np.arange(len(whole))])
        pid = np.concatenate([a_pid, f_pid[whole]])
        addr = np.concatenate([a_addr, f_addr[whole]])
        seq = np.concatenate([a_seq, f_seq[whole]])
        order = np.lexsort((seq, addr, pid))
        ident, pid, addr = ident[order], pid[order], addr[order]
        match = (ident[1:] < 0) & (ident[:-1] >= 0) & (pid[1:] == pid[:-1]) \
            & (addr[1:] == addr[:-1])
        objs = ident[:-1][match]
        fidx = whole[-1 - ident[1:][match]]
        free_obj[fidx] = objs
        free_ns[objs] = f_time[fidx].astype(np.int64)
    keep = (f_size > 0) | (free_obj != NO_OBJ)  # drop unmatched whole frees
    free_ev = np.zeros(int(keep.sum()), dtype=EVENT)
    free_ev["time_ns"], free_ev["addr"] = f_time[keep], f_addr[keep]
    free_ev["size"], free_ev["obj"] = f_size[keep], free_obj[keep]
    free_ev["space"] = space(f_pid[keep])
    free_ev["type"] = EV_FREE

    sample_ev = np.zeros(len(s_pid), dtype=EVENT)
    sample_ev["time_ns"] = s_time
    sample_ev["addr"] = column(samples, "addr", np.uint64)
    weight = column(samples, "weight", np.uint64)
    sample_ev["size"] = np.where(weight == 0, np.uint64(max(default_weight, 1)), weight)
    sample_ev["space"] = space(s_pid)
    sample_ev["flags"] = column(samples, "flags", np.uint16)
    obj = np.full(len(s_pid), -1, dtype=np.int64)
    if len(s_pid) and n:
        # the object each sample falls in: lets the core find the page in the object's page
        # array instead of a hash (a hint only; the core checks the address against it)
        from objtier.analysis.mapping import map_samples

        obj = np.asarray(map_samples(allocations, frees, samples)).astype(np.int64)
    sample_ev["obj"] = np.where(obj >= 0, obj, NO_OBJ).astype(np.uint32)
    sample_ev["type"] = EV_ACCESS
    if len(s_time) > 1 and np.any(s_time[1:] < s_time[:-1]):
        sample_ev = _sorted(sample_ev)

    times = [t for t in (a_time, f_time, s_time) if len(t)]
    lo = min(int(t.min()) for t in times) if times else 0
    hi = max(int(t.max()) for t in times) if times else 0
    start = lo if start_ns is None else min(int(start_ns), lo)
    return EventSource(objects=n, start_ns=start, end_ns=hi, alloc_ev=_sorted(alloc_ev),
                       free_ev=_sorted(free_ev), sample_ev=sample_ev, size=a_size.astype(np.int64),
                       alloc_ns=a_time.astype(np.int64), free_ns=free_ns, pid=a_pid, addr=a_addr,
                       sample_obj=obj)


def set_next_access(source: EventSource, page_shift: int) -> None:
    """Fill sample_ev["next"] for the belady policy: for each sample, how many samples ahead
    the next sample of the same page (address space, page number) is, 0 for none. Samples are
    the ACCESS events in feeding order (sample_ev is time sorted)."""
    ev = source.sample_ev
    n = len(ev)
    if n >= 1 << 32:
        from objtier.errors import UsageError
        raise UsageError(f"the belady policy takes at most {(1 << 32) - 1} samples; this trace "
                         f"has {n}")
    key = (ev["space"].astype(np.uint64) << np.uint64(40)) \
        | (ev["addr"] >> np.uint64(page_shift))
    order = np.argsort(key, kind="stable")  # by page, in sample order within a page
    same = key[order[1:]] == key[order[:-1]]
    nxt = np.zeros(n, dtype=np.uint32)
    nxt[order[:-1][same]] = (order[1:][same] - order[:-1][same]).astype(np.uint32)
    ev["next"] = nxt


def from_trace(trace, default_weight: int = 1) -> EventSource:
    return from_tables(trace.allocations, trace.frees, trace.samples, trace.start_ns,
                       default_weight)
