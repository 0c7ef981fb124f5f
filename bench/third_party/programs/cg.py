"""Conjugate gradient (scipy.sparse.linalg.cg) on a generated sparse SPD matrix.

The matrix is symmetric and strictly diagonally dominant, so positive definite: N rows,
2*K off-diagonal bands (wrapping around) at seeded random offsets with random weights, and
a diagonal that is one more than the row's off-diagonal sum. It is stored as CSR (8 B value + 4 B column
index per nonzero), so it takes about N * (2K + 1) * 12 B; every CG iteration reads all of
it once (one sparse matrix-vector product), which is the cyclic scan that the fast tier
cannot hold when the matrix is larger than it. The vectors are N * 8 B each.

Prints one line `FOM cg=<iterations per second> it/s time=<seconds>` for the solve alone
(generation is not timed) and exits 3 when the residual check fails.

    python cg.py [--rows N] [--bands K] [--iters I] [--seed S]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla


def matrix(rows: int, bands: int, seed: int) -> sp.csr_matrix:
    """Built in place as CSR (no COO/DIA temporaries): each row holds the diagonal and, per
    band, the entries at +off and -off (wrapping around, so every row has 2K + 1)."""
    rng = np.random.default_rng(seed)
    offsets = rng.choice(np.arange(1, rows // 2), size=bands, replace=False)
    width = 2 * bands + 1
    data = np.empty((rows, width))
    indices = np.empty((rows, width), dtype=np.int32)
    ids = np.arange(rows)
    diagonal = np.ones(rows)
    for k, off in enumerate(offsets):
        weights = rng.uniform(-1.0, 1.0, rows)  # weights[i]: entries (i, i+off) and (i+off, i)
        data[:, 2 * k] = weights
        indices[:, 2 * k] = (ids + off) % rows
        data[:, 2 * k + 1] = np.roll(weights, off)   # row j: weights[j - off], symmetric
        indices[:, 2 * k + 1] = (ids - off) % rows
        diagonal += np.abs(weights) + np.abs(data[:, 2 * k + 1])
    data[:, -1] = diagonal
    indices[:, -1] = ids
    indptr = np.arange(0, rows * width + 1, width, dtype=np.int32)
    return sp.csr_matrix((data.ravel(), indices.ravel(), indptr), shape=(rows, rows))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--bands", type=int, default=10, help="off-diagonal bands per side")
    parser.add_argument("--iters", type=int, default=25, help="CG iterations (fixed)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    a = matrix(args.rows, args.bands, args.seed)
    x_true = np.random.default_rng(args.seed + 1).standard_normal(args.rows)
    b = a @ x_true
    done = [0]

    def count(_x: np.ndarray) -> None:
        done[0] += 1

    start = time.perf_counter()
    # rtol=0 with maxiter: a fixed amount of work, the same in every run
    x, _info = spla.cg(a, b, rtol=0.0, atol=0.0, maxiter=args.iters, callback=count)
    seconds = time.perf_counter() - start
    residual = float(np.linalg.norm(b - a @ x) / np.linalg.norm(b))
    mib = (a.data.nbytes + a.indices.nbytes + a.indptr.nbytes) / 2**20
    print(f"matrix: {args.rows} rows, {a.nnz} nonzeros, {mib:.1f} MiB CSR; "
          f"{done[0]} iterations, relative residual {residual:.2e}")
    if not residual < 1e-3:
        print(f"cg: verification failed: relative residual {residual:.2e}", file=sys.stderr)
        return 3
    print("verification: passed")
    print(f"FOM cg={done[0] / seconds:.3f} it/s time={seconds:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
