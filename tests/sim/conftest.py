"""Synthetic traces for the simulator tests, written with the real TraceWriter."""

from __future__ import annotations

import numpy as np
import pytest

from objtier.trace import TraceWriter
from objtier.trace import format as F

MIB = 1 << 20
MS = 1_000_000


def write_trace(path, allocs, samples, frees=(), pid=100, start_ns=1_000_000_000, phases=(),
                names=None, source=F.SOURCE_FAULT):
    """allocs: [(time_ns, addr, size, context)], frees: [(time_ns, addr, size)],
    samples: dict of arrays time_ns, addr, weight (optional), flags (optional),
    phases: [(time_ns, name id, event 1 enter / 2 exit)], names: {name id: text},
    source: the samples' sampler (F.SOURCE_TRACE for an exact trace)."""
    with TraceWriter(path, pid=pid, start_mono_ns=start_ns) as w:
        for name_id, text in (names or {}).items():
            w.name(name_id, text)
        for t, name_id, event in phases:
            w.phase(t, name_id, event)
        contexts = sorted({a[3] for a in allocs})
        for c in contexts:
            w.context(c, [(0, 0x1000 + c)])
        events = [("a", a[0], a) for a in allocs] + [("f", f[0], f) for f in frees]
        for seq, (kind, _, rec) in enumerate(sorted(events, key=lambda e: e[1])):
            if kind == "a":
                w.alloc(rec[0], seq, rec[1], rec[2], context=rec[3])
            else:
                w.free(rec[0], seq, rec[1], rec[2])
        n = len(samples["time_ns"])
        rec = np.zeros(n, dtype=F.FIXED[F.TAG_SAMPLE])
        rec["time_ns"] = samples["time_ns"]
        rec["addr"] = samples["addr"]
        rec["weight"] = samples.get("weight", np.ones(n))
        rec["flags"] = samples.get("flags", np.zeros(n))
        rec["source"] = source
        rec["node"] = 0xFFFF
        rec["tid"] = 1
        w.samples(rec)
    return path


def reference_min(pages: list[int], capacity: int) -> tuple[int, int]:
    """(swap-ins, zero-fills) of Belady's MIN with `capacity` resident pages under demand
    paging: a page's first access is a zero-fill, a later miss a swap-in; on a miss with memory
    full the resident page used furthest ahead (or never) goes out."""
    nxt = [0] * len(pages)
    last: dict[int, int] = {}
    for i in range(len(pages) - 1, -1, -1):
        nxt[i] = last.get(pages[i], 1 << 62)
        last[pages[i]] = i
    resident: dict[int, int] = {}  # page -> its next access
    seen: set[int] = set()
    swap_ins = zero_fills = 0
    for i, p in enumerate(pages):
        if p not in resident:
            if len(resident) == capacity:
                del resident[max(resident, key=resident.__getitem__)]
            if p in seen:
                swap_ins += 1
            else:
                zero_fills += 1
        seen.add(p)
        resident[p] = nxt[i]
    return swap_ins, zero_fills


def make_hot_cold(directory):
    """A cold 16 MiB object allocated before a hot 4 MiB one; 90% of 200k samples over 4 s go
    to the hot one, uniformly over its pages. With 8 MiB fast, first-touch fills fast with the
    cold object; the hot one belongs in fast."""
    rng = np.random.default_rng(7)
    start = 1_000_000_000
    cold, hot = 0x7f0000000000, 0x7f1000000000
    allocs = [(start + 1 * MS, cold, 16 * MIB, 1), (start + 2 * MS, hot, 4 * MIB, 2)]
    n = 200_000
    t = np.sort(rng.integers(start + 10 * MS, start + 4000 * MS, n)).astype(np.uint64)
    is_hot = rng.random(n) < 0.9
    addr = np.where(is_hot, hot + rng.integers(0, 4 * MIB, n), cold + rng.integers(0, 16 * MIB, n))
    frees = [(start + 4100 * MS, cold, 0), (start + 4100 * MS, hot, 0)]
    return write_trace(directory / "hotcold.otr", allocs, {"time_ns": t, "addr": addr}, frees,
                       start_ns=start)


@pytest.fixture
def hot_cold_trace(tmp_path):
    return make_hot_cold(tmp_path)
