"""A synthetic recording for the report benchmarks: N objects, M samples, address reuse.

Layout (one pid): 90% small heap objects (64 B .. 64 KiB) packed from 0x5555_0000_0000, 10%
large mapped objects (1 .. 64 MiB) from 0x7f00_0000_0000; a fifth of the objects are freed
half-way and their addresses reused by later objects of the same size. Samples: 85% in large
objects, 12% in small ones, 3% outside every object. Times in ns over `seconds`.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

PID = 4242


def synthetic_tables(objects: int = 10_000, samples: int = 50_000_000, seconds: float = 60.0,
                     seed: int = 1):
    rng = np.random.default_rng(seed)
    n_large = objects // 10
    n_small = objects - n_large
    small = np.exp(rng.uniform(np.log(64), np.log(65536), n_small)).astype(np.uint64) // 16 * 16
    large = np.exp(rng.uniform(np.log(1 << 20), np.log(64 << 20), n_large)).astype(np.uint64)
    large = (large + np.uint64(4095)) // np.uint64(4096) * np.uint64(4096)
    # A fifth of each class is "reused": same address and size as an earlier, freed object.
    reuse_small, reuse_large = n_small // 5, n_large // 5
    small_addr = np.uint64(0x555500000000) + np.concatenate(
        [[0], np.cumsum(small[:-1] + np.uint64(16))]).astype(np.uint64)
    large_addr = np.uint64(0x7F0000000000) + np.concatenate(
        [[0], np.cumsum(large[:-1] + np.uint64(4096))]).astype(np.uint64)
    small[n_small - reuse_small:] = small[:reuse_small]
    small_addr[n_small - reuse_small:] = small_addr[:reuse_small]
    large[n_large - reuse_large:] = large[:reuse_large]
    large_addr[n_large - reuse_large:] = large_addr[:reuse_large]
    span = np.uint64(int(seconds * 1e9))
    half = span // np.uint64(2)
    addr = np.concatenate([small_addr, large_addr])
    size = np.concatenate([small, large])
    first_user = np.concatenate([np.arange(n_small) < reuse_small,
                                 np.arange(n_large) < reuse_large])
    second_user = np.concatenate([np.arange(n_small) >= n_small - reuse_small,
                                  np.arange(n_large) >= n_large - reuse_large])
    t_alloc = np.where(second_user, half + np.uint64(1000), np.uint64(0)) + np.arange(
        objects, dtype=np.uint64)
    order = np.argsort(t_alloc, kind="stable")
    addr, size, t_alloc = addr[order], size[order], t_alloc[order]
    first_user, second_user = first_user[order], second_user[order]
    seq = np.arange(1, objects + 1, dtype=np.uint64) * np.uint64(2)
    allocations = pa.table({
        "pid": np.full(objects, PID, np.uint32), "seq": seq, "time_ns": t_alloc, "addr": addr,
        "size": size, "tid": np.full(objects, PID, np.uint32),
        "context": (np.arange(objects) % 97 + 1).astype(np.uint32),
        "kind": np.where(size >= np.uint64(1 << 20), 9, 1).astype(np.uint16)})
    freed = np.flatnonzero(first_user)
    frees = pa.table({
        "pid": np.full(len(freed), PID, np.uint32),
        "seq": (np.uint64(objects * 2 + 1) + np.arange(len(freed), dtype=np.uint64)),
        "time_ns": np.full(len(freed), half, np.uint64), "addr": addr[freed],
        "size": np.zeros(len(freed), np.uint64), "tid": np.full(len(freed), PID, np.uint32),
        "kind": np.ones(len(freed), np.uint16)})
    # Samples: pick an object class, an object (hot ones more often), an offset, a time.
    t = np.sort(rng.integers(0, int(span), samples, dtype=np.uint64))
    is_large = size >= np.uint64(1 << 20)
    u = rng.random(samples)
    large_idx, small_idx = np.flatnonzero(is_large), np.flatnonzero(~is_large)
    pick = np.where(u < 0.85, large_idx[rng.zipf(1.3, samples) % len(large_idx)],
                    small_idx[rng.integers(0, len(small_idx), samples)])
    offset = (rng.random(samples) * size[pick]).astype(np.uint64)
    a = addr[pick] + offset
    outside = u > 0.97
    a[outside] = np.uint64(0x600000000000) + rng.integers(0, 1 << 30, int(outside.sum()),
                                                          dtype=np.uint64)
    # Samples of reused objects must fall in the right half of the run.
    late = second_user[pick] & ~outside
    t[late] = np.maximum(t[late], half + np.uint64(2000))
    early = first_user[pick] & ~outside
    t[early] = np.minimum(t[early], half - np.uint64(1))
    sample_table = pa.table({
        "pid": np.full(samples, PID, np.uint32), "time_ns": t, "addr": a,
        "tid": np.full(samples, PID, np.uint32),
        "latency": rng.integers(1, 400, samples, dtype=np.uint32),
        "source": np.full(samples, 1, np.uint16), "level": np.zeros(samples, np.uint8),
        "tlb": np.zeros(samples, np.uint8), "flags": np.zeros(samples, np.uint16),
        "node": np.zeros(samples, np.uint16), "weight": np.ones(samples, np.uint32)})
    return allocations, frees, sample_table
