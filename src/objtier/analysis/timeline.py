"""Time series: live bytes over time (seed Fig. 7), counters (Fig. 9), per-bin sample counts.

Times are returned as seconds relative to trace.start_ns.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from objtier.analysis.objects import column


def live_bytes(objects: pa.Table, start_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """Step function of the bytes of live objects: (time [s], bytes after each event)."""
    size = column(objects, "size", np.float64)
    t_alloc = column(objects, "alloc_ns", np.float64)
    freed = objects.column("free_ns").is_valid().to_numpy(zero_copy_only=False)
    t_free = np.nan_to_num(objects.column("free_ns").to_numpy(zero_copy_only=False).astype(np.float64))
    times = np.concatenate([t_alloc, t_free[freed]])
    deltas = np.concatenate([size, -size[freed]])
    order = np.argsort(times, kind="stable")
    return (times[order] - start_ns) / 1e9, np.cumsum(deltas[order])


def counter_series(counters: pa.Table, start_ns: int) -> dict[str, tuple[np.ndarray, np.ndarray, str]]:
    """name -> (time [s], value, unit) for every counter, time-sorted."""
    out = {}
    if not counters.num_rows:
        return out
    names = counters.column("name").to_numpy(zero_copy_only=False)
    units = counters.column("unit").to_numpy(zero_copy_only=False)
    t = column(counters, "time_ns", np.float64)
    v = column(counters, "value", np.float64)
    for name in np.unique(names).tolist():
        sel = np.flatnonzero(names == name)
        order = sel[np.argsort(t[sel], kind="stable")]
        out[name] = ((t[order] - start_ns) / 1e9, v[order], str(units[sel[0]]))
    return out


def is_cumulative(name: str) -> bool:
    """vmstat counters are cumulative since boot: plot their per-interval deltas."""
    return name.startswith("vmstat.")


def binned_counts(times_s: np.ndarray, edges: np.ndarray) -> np.ndarray:
    return np.histogram(times_s, bins=edges)[0]
