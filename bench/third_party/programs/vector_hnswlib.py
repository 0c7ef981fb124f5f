"""Exact nearest-neighbour search with hnswlib's brute-force index (hnswlib.BFIndex).

N random float32 vectors of DIM dimensions (N * DIM * 4 B, held by hnswlib in one buffer),
added in chunks so that no second copy stays alive; then Q queries for the K nearest
neighbours by L2 distance, in batches. Each query reads every stored vector once, so the
batches scan the index cyclically.

Prints one line `FOM vector=<queries per second> q/s time=<seconds>` for the queries alone
(generation and insertion are not timed); exits 3 when a check fails.

    python vector_hnswlib.py [--vectors N] [--dim DIM] [--queries Q] [--k K] [--seed S]
"""

from __future__ import annotations

import argparse
import sys
import time

import hnswlib
import numpy as np

CHUNK = 20_000      # vectors generated and added at a time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=int, default=300_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--queries", type=int, default=80)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    index = hnswlib.BFIndex(space="l2", dim=args.dim)
    index.init_index(max_elements=args.vectors)
    probe_ids = rng.choice(args.vectors, size=args.queries, replace=False)
    probes = np.empty((args.queries, args.dim), dtype=np.float32)
    for first in range(0, args.vectors, CHUNK):
        chunk = rng.standard_normal((min(CHUNK, args.vectors - first), args.dim),
                                    dtype=np.float32)
        ids = np.arange(first, first + len(chunk))
        index.add_items(chunk, ids)
        mine = (probe_ids >= first) & (probe_ids < first + len(chunk))
        probes[mine] = chunk[probe_ids[mine] - first]
    start = time.perf_counter()
    found = []
    for first in range(0, args.queries, 8):                # batches of 8 queries
        labels, _distances = index.knn_query(probes[first:first + 8], k=args.k)
        found.append(labels[:, 0])
    seconds = time.perf_counter() - start
    nearest = np.concatenate(found)
    # every probe is a stored vector, so its own id is its nearest neighbour (distance 0)
    if not np.array_equal(nearest, probe_ids):
        print("vector: verification failed: a probe's nearest neighbour is not itself",
              file=sys.stderr)
        return 3
    mib = args.vectors * args.dim * 4 / 2**20
    print(f"vector: {args.vectors} x {args.dim} float32 ({mib:.1f} MiB), "
          f"{args.queries} queries, k={args.k}")
    print("verification: passed")
    print(f"FOM vector={args.queries / seconds:.3f} q/s time={seconds:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
