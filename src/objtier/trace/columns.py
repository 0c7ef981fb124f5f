"""Columns of a trace's tables as numpy arrays, and the facts every reader of them needs: the
memory-level groups of a sample, the trace's page size and its end.

The trace's tables (trace.allocations, .frees, .samples, ...) are pyarrow tables whose columns
trace/format.py names; analysis, simulation and reports read them through these helpers.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

# ot_mem_level groups (trace_format.h enum ot_mem_level)
CACHE_LEVELS = (1, 2, 3, 4)      # L1, LFB, L2, L3
FAST_LEVELS = (5, 10)            # local DRAM, uncached
SLOW_LEVELS = (6, 7, 8, 9)       # remote DRAM, PMEM, CXL, swap
MEMORY_LEVELS = FAST_LEVELS + SLOW_LEVELS
DEFAULT_PAGE_BYTES = 4096        # a trace whose process headers name no page size


def column(table: pa.Table, name: str, dtype=None) -> np.ndarray:
    """A column as numpy (nulls not expected); dtype converts."""
    array = table.column(name).to_numpy(zero_copy_only=False)
    return array if dtype is None else array.astype(dtype, copy=False)


def distinct_counts(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values of an int64 array and how often each occurs. Sort-based: numpy's
    hash-based unique degrades badly on structured keys such as object * span + page."""
    if not len(keys):
        return keys[:0], np.zeros(0, dtype=np.int64)
    ordered = np.sort(keys, kind="stable")
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    counts = np.diff(np.append(starts, len(ordered)))
    return ordered[starts], counts


def level_mask(level: np.ndarray, levels: tuple[int, ...]) -> np.ndarray:
    """level in levels, for uint8 levels, through a 256-entry table (np.isin would sort)."""
    table = np.zeros(256, dtype=bool)
    table[list(levels)] = True
    return table[level]


def page_bytes(trace, default: int = DEFAULT_PAGE_BYTES) -> int:
    """The trace's page size [bytes]: the smallest of its processes' (a recording's processes
    share one machine), else default when no process header names one."""
    sizes = [p.page_bytes for p in getattr(trace, "processes", None) or [] if p.page_bytes]
    return min(sizes) if sizes else default


def page_shift(trace) -> int:
    """log2 of page_bytes(trace): addr >> page_shift(trace) is the page number."""
    return max(int(page_bytes(trace)).bit_length() - 1, 0)


def trace_end_ns(trace) -> int:
    """Latest time seen in any table of the trace (ns)."""
    ends = [int(trace.start_ns)]
    for table in (trace.allocations, trace.frees, trace.samples):
        if table.num_rows:
            ends.append(int(column(table, "time_ns").max()))
    try:
        if trace.ends.num_rows:
            ends.append(int(column(trace.ends, "time_ns").max()))
    except AttributeError:
        pass
    return max(ends)
