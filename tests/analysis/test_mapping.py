"""map_samples against a brute-force oracle and hand-made cases."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from objtier.analysis.mapping import ObjectIndex, live_ranges, map_samples

MUNMAP = 3


def tables(allocs, frees, samples):
    """allocs: (pid, seq, t, addr, size); frees: (pid, seq, t, addr, size, kind);
    samples: (pid, t, addr)."""
    a = np.array(allocs, dtype=np.uint64).reshape(-1, 5)
    f = np.array(frees, dtype=np.uint64).reshape(-1, 6)
    s = np.array(samples, dtype=np.uint64).reshape(-1, 3)
    order = np.lexsort((a[:, 1], a[:, 0]))
    a = a[order]
    at = pa.table({"pid": a[:, 0].astype(np.uint32), "seq": a[:, 1], "time_ns": a[:, 2],
                   "addr": a[:, 3], "size": a[:, 4]})
    ft = pa.table({"pid": f[:, 0].astype(np.uint32), "seq": f[:, 1], "time_ns": f[:, 2],
                   "addr": f[:, 3], "size": f[:, 4], "kind": f[:, 5].astype(np.uint16)})
    st = pa.table({"pid": s[:, 0].astype(np.uint32), "time_ns": s[:, 1], "addr": s[:, 2]})
    return at, ft, st


def oracle(at, ft, st):
    """Event-by-event replay in seq order; per sample pick the live owner of its byte."""
    allocs = at.to_pylist()
    frees = ft.to_pylist()
    events = [(r["pid"], r["seq"], 0, i) for i, r in enumerate(allocs)]
    events += [(r["pid"], r["seq"], 1, i) for i, r in enumerate(frees)]
    events.sort()
    # spans[obj] = list of (start, end, tb, te)
    live = {}   # obj -> list of [start, end, tb]
    done = []   # (pid, obj, start, end, tb, te)
    last_alloc_at = {}
    for pid, seq, is_free, i in events:
        if not is_free:
            r = allocs[i]
            lo, hi = r["addr"], r["addr"] + r["size"]
            # later allocation takes over overlapping bytes of older live objects
            for obj, spans in list(live.items()):
                if allocs[obj]["pid"] != pid:
                    continue
                new = []
                for s0, s1, tb in spans:
                    if s0 < hi and s1 > lo:
                        done.append((pid, obj, s0, s1, tb, r["time_ns"]))
                        if s0 < lo:
                            new.append([s0, lo, r["time_ns"]])
                        if s1 > hi:
                            new.append([hi, s1, r["time_ns"]])
                    else:
                        new.append([s0, s1, tb])
                live[obj] = new
            if r["size"]:
                live[i] = [[lo, hi, r["time_ns"]]]
            last_alloc_at[(pid, r["addr"])] = i
            continue
        r = frees[i]
        if r["size"] == 0:
            obj = last_alloc_at.pop((pid, r["addr"]), None)
            if obj is not None and obj in live:
                for s0, s1, tb in live.pop(obj):
                    done.append((pid, obj, s0, s1, tb, r["time_ns"]))
            continue
        lo, hi = r["addr"], r["addr"] + r["size"]
        for obj, spans in list(live.items()):
            if allocs[obj]["pid"] != pid:
                continue
            new = []
            for s0, s1, tb in spans:
                if s0 < hi and s1 > lo:
                    done.append((pid, obj, s0, s1, tb, r["time_ns"]))
                    if s0 < lo:
                        new.append([s0, lo, r["time_ns"]])
                    if s1 > hi:
                        new.append([hi, s1, r["time_ns"]])
                else:
                    new.append([s0, s1, tb])
            live[obj] = new
    for obj, spans in live.items():
        for s0, s1, tb in spans:
            done.append((allocs[obj]["pid"], obj, s0, s1, tb, 2**64 - 1))
    out = []
    for s in st.to_pylist():
        best = -1
        for pid, obj, s0, s1, tb, te in done:
            if pid == s["pid"] and s0 <= s["addr"] < s1 and tb <= s["time_ns"] < te:
                best = obj
        out.append(best)
    return np.array(out)


def test_address_reuse_after_free_belongs_to_the_later_object():
    at, ft, st = tables(
        [(1, 1, 100, 0x1000, 0x100), (1, 3, 300, 0x1000, 0x100)],
        [(1, 2, 200, 0x1000, 0, 1)],
        [(1, 150, 0x1010), (1, 250, 0x1010), (1, 350, 0x1010), (1, 50, 0x1010)])
    assert map_samples(at, ft, st).tolist() == [0, -1, 1, -1]


def test_reuse_without_recorded_free_goes_to_the_later_object():
    at, ft, st = tables([(1, 1, 100, 0x1000, 0x100), (1, 2, 200, 0x1080, 0x100)], [],
                        [(1, 150, 0x1090), (1, 250, 0x1090), (1, 250, 0x1010), (1, 250, 0x1170)])
    assert map_samples(at, ft, st).tolist() == [0, 1, 0, 1]


def test_partial_munmap_prefix_suffix_and_hole():
    page = 0x1000
    at, ft, st = tables(
        [(1, 1, 10, 0x100000, 8 * page)],
        [(1, 2, 20, 0x100000, page, MUNMAP),            # prefix
         (1, 3, 30, 0x100000 + 7 * page, page, MUNMAP),  # suffix
         (1, 4, 40, 0x100000 + 3 * page, page, MUNMAP)],  # hole
        [(1, 15, 0x100000), (1, 25, 0x100000), (1, 25, 0x100000 + 7 * page),
         (1, 35, 0x100000 + 7 * page), (1, 35, 0x100000 + 3 * page),
         (1, 45, 0x100000 + 3 * page), (1, 45, 0x100000 + 2 * page),
         (1, 45, 0x100000 + 4 * page)])
    assert map_samples(at, ft, st).tolist() == [0, -1, 0, -1, 0, -1, 0, 0]
    ranges = live_ranges(at, ft)
    live_at_end = ranges.t_end == np.iinfo(np.uint64).max
    assert sorted(zip(ranges.start[live_at_end].tolist(), ranges.end[live_at_end].tolist())) == [
        (0x101000, 0x103000), (0x104000, 0x107000)]


def test_munmap_spanning_two_objects_and_pids_are_separate():
    at, ft, st = tables(
        [(1, 1, 10, 0x10000, 0x2000), (1, 2, 11, 0x12000, 0x2000), (2, 1, 10, 0x10000, 0x4000)],
        [(1, 3, 20, 0x11000, 0x2000, MUNMAP)],
        [(1, 30, 0x10500), (1, 30, 0x11500), (1, 30, 0x12500), (1, 30, 0x13500),
         (2, 30, 0x11500), (3, 30, 0x11500)])
    assert map_samples(at, ft, st).tolist() == [0, -1, -1, 1, 2, -1]


def test_never_freed_objects_live_to_the_end_and_unmapped_samples_stay_unmapped():
    at, ft, st = tables([(1, 1, 10, 0x5000, 0x10)], [],
                        [(1, 10**15, 0x500f), (1, 20, 0x5010), (1, 20, 0x4fff), (1, 5, 0x5000)])
    assert map_samples(at, ft, st).tolist() == [0, -1, -1, -1]


@pytest.mark.parametrize("seed", range(12))
def test_random_traces_match_the_oracle(seed):
    rng = np.random.default_rng(seed)
    allocs, frees, samples = [], [], []
    seq, t = 0, 0
    live = []
    base = int(rng.choice([0x10000, 0x7F0000000000 - (1 << 36)]))
    for _ in range(60):
        seq += 1
        t += int(rng.integers(0, 3))
        action = rng.random()
        if action < 0.5 or not live:
            addr = base + int(rng.integers(0, 64)) * 0x800
            size = int(rng.integers(1, 8)) * 0x400
            allocs.append((1, seq, t, addr, size))
            live.append((addr, size))
        elif action < 0.8:
            addr, size = live.pop(int(rng.integers(0, len(live))))
            frees.append((1, seq, t, addr, 0, 1))
        else:
            addr = base + int(rng.integers(0, 70)) * 0x400
            frees.append((1, seq, t, addr, int(rng.integers(1, 6)) * 0x400, MUNMAP))
    tmax = t + 3
    for _ in range(400):
        samples.append((1, int(rng.integers(0, tmax)), base + int(rng.integers(0, 72 * 0x800))))
    at, ft, st = tables(allocs, frees, samples)
    assert map_samples(at, ft, st).tolist() == oracle(at, ft, st).tolist()


def test_direct_table_agrees_with_binary_search():
    rng = np.random.default_rng(7)
    n = 500
    sizes = rng.integers(1, 1 << 22, n).astype(np.uint64)
    gaps = rng.integers(0, 1 << 20, n).astype(np.uint64)
    addr = np.uint64(0x7F0000000000) + np.cumsum(sizes + gaps) - sizes
    at = pa.table({"pid": np.ones(n, np.uint32), "seq": np.arange(n, dtype=np.uint64),
                   "time_ns": np.zeros(n, np.uint64), "addr": addr, "size": sizes})
    ft = pa.table({"pid": pa.array([], pa.uint32()), "seq": pa.array([], pa.uint64()),
                   "time_ns": pa.array([], pa.uint64()), "addr": pa.array([], pa.uint64()),
                   "size": pa.array([], pa.uint64())})
    index = ObjectIndex(at, ft)
    pid_index = index.by_pid[1]
    assert pid_index.table is not None
    q = rng.integers(int(addr[0]) - 4096, int(addr[-1] + sizes[-1]) + 4096, 100_000).astype(np.uint64)
    got = index.lookup(np.ones(len(q), np.uint32), q, np.ones(len(q), np.uint64))
    inside = np.searchsorted(addr, q, side="right") - 1
    ok = (inside >= 0) & (q < addr[np.maximum(inside, 0)] + sizes[np.maximum(inside, 0)])
    assert got.tolist() == np.where(ok, inside, -1).tolist()
