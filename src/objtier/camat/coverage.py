"""How much of the recorded run an access stream lets the model see.

A stream is either the first N loads and stores of the process (OBJTIER_TRACE_STREAM=N alone)
or windows of B records spread over the whole run (OBJTIER_TRACE_STREAM_WINDOW=B as well;
native/runtime/sample/trace_stream.c). The runtime opens a window at grid position g (in units
of B accesses of the process) for g = 0, 1, ... 15, then every 2nd, every 4th, ... so the
windows at multiples of the last spacing S are evenly spaced over the run; the model takes
those (at least 8 of them once the run is longer than 16 windows), each cut to the same length
(the shortest, so that one timed unit sits in each), and leaves the others out.

The run's own total is the exact count the trace sampler keeps for every load and store
(ACCESS_COUNT records, stack and globals included), so the share modelled is a ratio of two
exact counts. Pure functions over the reader's tables.
"""

from __future__ import annotations

import numpy as np

from objtier.errors import TraceError
from objtier.trace.columns import column

WINDOW_COUNTER = "trace.stream.window"
ORDER_COUNTER = "trace.stream.window_order"
SKIPPED_COUNTER = "trace.stream.window_skipped"  # the first window due after the budget ran out
SHORT_WINDOW = 0.75  # a window with fewer records than this share of the longest is left out
                     # (the run ended inside it)
CUT = 0.99           # a modelled share below this is reported as cut
COLD_NOTE = 0.25     # windows: a first-touch share of memory accesses worth naming


def run_accesses(trace, pid: int | None = None) -> int | None:
    """Loads and stores of the run (exact, every thread, any address), or None when the
    recording has no exact counts."""
    counts = trace.access_counts
    if not counts.num_rows:
        return None
    loads = column(counts, "loads", np.uint64)
    stores = column(counts, "stores", np.uint64)
    if pid is not None and "pid" in counts.column_names:
        keep = column(counts, "pid", np.uint32) == pid
        loads, stores = loads[keep], stores[keep]
    return int(loads.sum() + stores.sum())


def window_marks(trace) -> tuple[np.ndarray, np.ndarray, int | None] | None:
    """(grid index, order at the opening) of each window, in opening order, and the grid index
    of the first window that came due after the budget ran out (None: the run ended first);
    None for a stream of the first N accesses."""
    ctr = trace.counters
    if not ctr.num_rows:
        return None
    names = np.asarray(ctr.column("name").to_pylist(), dtype=object)
    times = column(ctr, "time_ns", np.uint64)
    values = column(ctr, "value", np.int64)
    g_rows = np.flatnonzero(names == WINDOW_COUNTER)
    o_rows = np.flatnonzero(names == ORDER_COUNTER)
    if not len(g_rows):
        return None
    if len(g_rows) != len(o_rows):
        raise TraceError("the access stream's window records are incomplete (a window without "
                         "its order)")
    g_rows = g_rows[np.argsort(times[g_rows], kind="stable")]
    o_rows = o_rows[np.argsort(times[o_rows], kind="stable")]
    skipped = np.flatnonzero(names == SKIPPED_COUNTER)
    return (values[g_rows].astype(np.int64), values[o_rows].astype(np.int64),
            int(values[skipped].min()) if len(skipped) else None)


def select_windows(order: np.ndarray, marks: tuple) -> dict:
    """The windows the model takes: a mask over the records (in `order`'s order, sorted), the
    common length, and the figures of camat.json's "coverage" (without the run total).
    `reaches`: accesses of the run the windows stand for, up to the window that came due after
    the budget ran out (None when every window that came due was recorded)."""
    grid, opened, skipped = marks
    win = np.searchsorted(opened, order.astype(np.int64), side="right") - 1
    sizes = np.bincount(win[win >= 0], minlength=len(grid))
    # records per window (B): the usual size (a window may gain a record in flight at its
    # neighbour's opening, or lose a dropped claim; the run may end inside the last)
    width = int(np.median(sizes)) if len(sizes) else 0
    step = int(grid[-1] - grid[-2]) if len(grid) >= 2 else 1
    even = (grid % step == 0) & (sizes >= SHORT_WINDOW * width)
    if not even.any():
        raise TraceError("the access stream's windows hold no complete window")
    length = int(sizes[even].min())
    keep = np.zeros(len(order), dtype=bool)
    pos = np.arange(len(order)) - np.searchsorted(win, win, side="left")  # index in its window
    keep[(win >= 0)] = even[win[win >= 0]] & (pos[win >= 0] < length)
    last = int(grid[even][-1])
    return {"mode": "windows", "mask": keep, "window": length,
            "windows_recorded": int(len(grid)), "windows_modelled": int(even.sum()),
            "window_records": width, "grid_step_accesses": step * width,
            "recorded_accesses": int(len(order)), "modelled_accesses": int(keep.sum()),
            "last_window": last, "reaches": None if skipped is None else skipped * width}


def coverage(trace, order: np.ndarray, pids: np.ndarray) -> dict:
    """camat.json's "coverage" for a stream (records sorted by order) and its `mask` of the
    records the model takes: the run's accesses, the share of them the windows (or the first
    N accesses) stand for, and whether the stream was cut."""
    processes = np.unique(pids)
    marks = window_marks(trace)
    if marks is not None and len(processes) > 1:
        raise TraceError("a stream recorded in windows holds one process; this one holds "
                         f"{len(processes)} (record with --window 0)")
    total = run_accesses(trace, int(processes[0]) if len(processes) == 1 else None)
    if marks is None:
        cov = {"mode": "first", "mask": None, "window": 0, "recorded_accesses": int(len(order)),
               "modelled_accesses": int(len(order)), "reaches": int(len(order))}
    else:
        cov = select_windows(order, marks)
    cov["run_accesses"] = total
    if cov["reaches"] is None:  # windows, and every one that came due was recorded
        cov["share"] = 1.0
    else:
        cov["share"] = None if not total else min(1.0, cov["reaches"] / total)
    cov["cut"] = cov["share"] is not None and cov["share"] < CUT
    cov["modelled_share"] = None if not total else min(1.0, cov["modelled_accesses"] / total)
    return cov


def describe(cov: dict) -> str:
    """One line: what of the run the figures describe."""
    total = cov.get("run_accesses")
    n = cov["modelled_accesses"]
    if cov["mode"] == "first":
        if not total:
            return (f"modelled: the first {n:,} accesses of the run (the run's total is not "
                    "recorded)")
        return (f"modelled: the first {n:,} of the run's {total:,} accesses "
                f"({100 * cov['share']:.3g} % of the run, exact counts)")
    where = ("the whole run" if not cov["cut"] else
             f"the first {100 * cov['share']:.3g} % of the run" if cov["share"] is not None
             else "the run (its total is not recorded)")
    of = f" of {total:,}" if total else ""
    line = (f"modelled: {cov['windows_modelled']} windows of {cov['window']:,} accesses, one "
            f"per {cov['grid_step_accesses']:,}, spread over {where} ({n:,}{of} accesses)")
    cold = cov.get("mem_first_touch_share")
    if cold is not None and cold >= COLD_NOTE:
        line += (f"; up to {100 * cold:.3g} % of the memory accesses may be LLC hits in the run "
                 "(lines the model first sees in a window: the run may have touched them "
                 "between windows)")
    return line


def warning(cov: dict) -> str | None:
    """The line to print when the figures leave part of the run out, else None."""
    if not cov["cut"]:
        return None
    if cov["mode"] == "first":
        return (f"only the first {100 * cov['share']:.3g} % of the run was modelled: the "
                "figures describe its start (initialisation included), not the rest; record "
                "in windows spread over the run (the default of camat -- CMD) or raise --stream")
    return (f"the stream's budget ran out at {100 * cov['share']:.3g} % of the run: the rest "
            "was not modelled; raise --stream")
