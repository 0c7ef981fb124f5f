"""numpy work with large arrays: sort, unique, cumulative sums, FFT, a matrix product.

Prints checksums of the results (SHA-256 of exact integer results; floats rounded to 6
significant digits), so the output is the same on every run with the same numpy.

usage: python3 numpy_work.py MILLIONS
"""

import hashlib
import sys

import numpy as np

n = int(float(sys.argv[1]) * 1_000_000)
rng = np.random.default_rng(20261125)
ints = rng.integers(0, 1 << 40, size=n, dtype=np.int64)
ordered = np.sort(ints)
print("sort", hashlib.sha256(ordered.tobytes()).hexdigest()[:16])
uniq = np.unique(ints % 1_000_003)
print("unique", len(uniq), hashlib.sha256(uniq.tobytes()).hexdigest()[:16])
print("cumsum", int(np.cumsum(ints % 1000)[-1]))
floats = rng.standard_normal(n)
spectrum = np.fft.rfft(floats)
print("fft", f"{float(np.abs(spectrum).sum()):.6g}")
side = 384
a = rng.standard_normal((side, side))
print("matmul", f"{float((a @ a.T).trace()):.6g}")
