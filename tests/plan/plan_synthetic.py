"""Synthetic object tables for planner tests: sizes given in pages of PAGE bytes."""

from __future__ import annotations

import numpy as np

PAGE = 4096


def table(pages, accesses, contexts=None, occurrences=None, size_bytes=None):
    """Object table with objects 0..n-1; context i by default; sizes in pages unless
    size_bytes is given."""
    n = len(pages) if size_bytes is None else len(size_bytes)
    size = np.asarray(size_bytes if size_bytes is not None else np.asarray(pages) * PAGE,
                      dtype=np.int64)
    return {
        "object": np.arange(n, dtype=np.int64),
        "context_key": [f"{c:016x}" for c in (contexts if contexts is not None else range(n))],
        "occurrence": np.asarray(occurrences if occurrences is not None else np.zeros(n),
                                 dtype=np.int64),
        "size": size,
        "accesses": np.asarray(accesses, dtype=np.float64),
        "label": [f"main > alloc{i}" for i in range(n)],
    }


def fast_pages(placement):
    """fast_bytes of every object in pages (rounded up)."""
    return ((placement.fast_bytes + PAGE - 1) // PAGE).tolist()
