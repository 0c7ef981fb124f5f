"""Allocation sites: heap blocks below --min-size grouped by calling context.

The runtime samples about 1 in `period` small blocks by address (OBJTIER_SITE_PERIOD,
trace_format.h "Allocation sites") and writes SITE_ALLOC / SITE_FREE records for those only;
a site is one (pid, context) of the sampled blocks. Every figure here scales the sampled
blocks by their period, so it is an estimate of the whole site (columns say est_*), except
`sampled_blocks` and `sampled_samples`, which count what was recorded:

  site            row number
  pid, context, context_key, label     as in the objects table
  sampled_blocks  SITE_ALLOC records of the site
  est_blocks      sampled_blocks * period
  est_bytes       bytes allocated over the run (requested sizes) * period
  mean_size       bytes per block (from the sampled blocks)
  est_peak_bytes  the peak over time of the site's live bytes * period
  est_live_end_bytes   live at the end of the trace * period
  sampled_samples access samples whose address lies in a sampled block live at their time
  est_samples     sampled_samples * period (samples the whole site would have had)
  stream_accesses loads and stores of the exact ordered stream (--sampler trace with
                  OBJTIER_TRACE_STREAM) that fell in a sampled block: not scaled
  watched ... est_touches  access measured through the site's arena while recording
                  (`record --sites N`, analysis.site_watch); zero / null when not watched

The window samplers (fault, pageout, wp) arm tracked objects only, so their samples never
fall in a small block — except in the arenas of watched sites (`record --sites N`), whose
pages the pageout sampler arms as one region per site (analysis.site_watch); perf samples
(PEBS/IBS data addresses) do. Page-fault samples (perf-swfault) mostly do not: the first touch of a heap page is malloc's own write of the
next chunk's header, before that block exists.

A block is live from its SITE_ALLOC to the SITE_FREE of its address (analysis.mapping's
live ranges: a free closes the latest earlier allocation at its address; unmatched frees are
dropped). Accesses are attributed through the same interval join as objects, over the
sampled blocks only, so the index holds 1/period of the live blocks.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from objtier.trace.columns import column, trace_end_ns

NEVER = np.iinfo(np.uint64).max


def has_sites(trace) -> bool:
    """The recording holds sampled small blocks (format 1.4 and OBJTIER_SITE_PERIOD > 0)."""
    tables = getattr(trace, "site_allocations", None)
    return tables is not None and tables.num_rows > 0


def _as_objects(trace) -> tuple[pa.Table, pa.Table]:
    """The sampled blocks as allocations / frees tables analysis.mapping understands."""
    allocs = trace.site_allocations
    frees = trace.site_frees
    frees = pa.table({name: frees.column(name) for name in ("pid", "seq", "time_ns", "addr")}
                     ).append_column("size", pa.array(np.zeros(frees.num_rows, np.uint64)))
    return allocs, frees


def _ranges(trace):
    cached = getattr(trace, "_objtier_site_ranges", None)
    if cached is None:
        from objtier.analysis.mapping import live_ranges

        cached = trace._objtier_site_ranges = live_ranges(*_as_objects(trace))
    return cached


def _period(trace) -> np.ndarray:
    return column(trace.site_allocations, "period", np.float64)


def live_site_bytes(trace, t_ns: int | None = None) -> int:
    """Estimated bytes of small blocks live at t_ns (all sites), or their peak over time
    when t_ns is None."""
    r = _ranges(trace)
    if not len(r.obj):
        return 0
    weight = (r.end - r.start).astype(np.float64) * _period(trace)[r.obj]
    if t_ns is not None:
        live = (r.t_begin <= np.uint64(t_ns)) & (r.t_end > np.uint64(t_ns))
        return int(weight[live].sum())
    return int(_step_peak(r.t_begin, r.t_end, weight))


def _step_peak(t_begin: np.ndarray, t_end: np.ndarray, weight: np.ndarray) -> float:
    """Peak of sum(weight over intervals live at t); frees before allocations at ties."""
    freed = t_end != NEVER
    times = np.concatenate([t_begin, t_end[freed]])
    delta = np.concatenate([weight, -weight[freed]])
    order = np.lexsort((delta > 0, times))
    return float(max(np.cumsum(delta[order]).max(), 0.0)) if len(order) else 0.0


def sample_sites(trace, table: pa.Table | None = None) -> np.ndarray:
    """Sampled-block index (row of trace.site_allocations) per row of `table` (pid, addr,
    time_ns: trace.samples by default, or trace.accesses); -1 where the address lies in no
    sampled block live at that time."""
    from objtier.analysis.mapping import ObjectIndex

    samples = trace.samples if table is None else table
    if not samples.num_rows or not has_sites(trace):
        return np.full(samples.num_rows, -1, dtype=np.int64)
    index = ObjectIndex(*_as_objects(trace))
    return index.lookup(column(samples, "pid", np.uint32), column(samples, "addr", np.uint64),
                        column(samples, "time_ns", np.uint64))


def site_table(trace, labels: bool = True) -> pa.Table:
    """One row per allocation site (module docstring), largest est_peak_bytes first."""
    from objtier.analysis.objects import _context_columns

    allocs = trace.site_allocations
    if not allocs.num_rows:
        return pa.table({"site": pa.array([], pa.int64())})
    pid = column(allocs, "pid", np.uint32)
    ctx = column(allocs, "context", np.uint32)
    size = column(allocs, "size", np.float64)
    period = _period(trace)
    key = (pid.astype(np.uint64) << np.uint64(32)) | ctx.astype(np.uint64)
    uniq, site_of = np.unique(key, return_inverse=True)
    n = len(uniq)
    sampled = np.bincount(site_of, minlength=n)
    est_blocks = np.bincount(site_of, weights=period, minlength=n)
    est_bytes = np.bincount(site_of, weights=size * period, minlength=n)

    r = _ranges(trace)
    site_r = site_of[r.obj]
    weight = (r.end - r.start).astype(np.float64) * period[r.obj]
    end = np.uint64(trace_end_ns(trace))
    live_end = np.bincount(site_r[r.t_end > end], weights=weight[r.t_end > end], minlength=n)
    peak = np.zeros(n)
    order = np.argsort(site_r, kind="stable")
    bounds = np.searchsorted(site_r[order], np.arange(n + 1))
    for s in range(n):   # one step per site (sites are few), vectorized over its blocks
        sel = order[bounds[s]:bounds[s + 1]]
        peak[s] = _step_peak(r.t_begin[sel], r.t_end[sel], weight[sel])

    hits = sample_sites(trace)
    hit = hits >= 0
    sampled_samples = np.bincount(site_of[hits[hit]], minlength=n).astype(np.int64)
    est_samples = np.bincount(site_of[hits[hit]], weights=period[hits[hit]], minlength=n)

    stream = getattr(trace, "accesses", None)   # the exact ordered stream, when recorded
    stream_hits = sample_sites(trace, stream) if stream is not None and stream.num_rows \
        else np.zeros(0, np.int64)
    stream_accesses = np.bincount(site_of[stream_hits[stream_hits >= 0]],
                                  minlength=n).astype(np.int64)

    first = np.zeros(n, dtype=np.int64)
    first[site_of[::-1]] = np.arange(len(site_of))[::-1]
    keys, label = _context_columns(trace, pid[first], ctx[first], labels)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_size = np.where(sampled > 0, np.bincount(site_of, weights=size, minlength=n)
                             / sampled, 0.0)
    table = pa.table({
        "pid": pa.array(pid[first]), "context": pa.array(ctx[first]),
        "context_key": pa.array(keys.tolist(), pa.string()),
        "sampled_blocks": pa.array(sampled.astype(np.int64)),
        "est_blocks": pa.array(est_blocks.round().astype(np.int64)),
        "est_bytes": pa.array(est_bytes.round().astype(np.int64)),
        "mean_size": pa.array(mean_size),
        "est_peak_bytes": pa.array(peak.round().astype(np.int64)),
        "est_live_end_bytes": pa.array(live_end.round().astype(np.int64)),
        "sampled_samples": pa.array(sampled_samples),
        "est_samples": pa.array(est_samples.round().astype(np.int64)),
        "stream_accesses": pa.array(stream_accesses),
        "label": pa.array(label.tolist(), pa.string()),
    })
    from objtier.analysis.site_watch import watch_columns

    at = table.column_names.index("label")
    for name, values in watch_columns(trace, table).items():   # zero / null unless watched
        table = table.add_column(at, name, values)
        at += 1
    table = table.sort_by([("est_peak_bytes", "descending"), ("pid", "ascending"),
                ("context", "ascending")])
    return table.add_column(0, "site", pa.array(np.arange(n, dtype=np.int64)))


def site_live_series(trace, rows: pa.Table, edges_s: np.ndarray) -> np.ndarray:
    """Estimated live bytes of each site of `rows` (a site_table) at each time of edges_s
    [s since start]: an array (sites, times)."""
    allocs = trace.site_allocations
    r = _ranges(trace)
    pid = column(allocs, "pid", np.uint64)[r.obj]
    ctx = column(allocs, "context", np.uint64)[r.obj]
    weight = (r.end - r.start).astype(np.float64) * _period(trace)[r.obj]
    t_ns = (np.asarray(edges_s, np.float64) * 1e9 + trace.start_ns).astype(np.uint64)
    out = np.zeros((rows.num_rows, len(t_ns)))
    for i, (p, c) in enumerate(zip(rows.column("pid").to_pylist(),
                                   rows.column("context").to_pylist())):
        sel = (pid == p) & (ctx == c)
        live = (r.t_begin[sel][:, None] <= t_ns[None, :]) & (r.t_end[sel][:, None] > t_ns[None, :])
        out[i] = (weight[sel][:, None] * live).sum(axis=0)
    return out


def sites_periods(trace) -> tuple[int, int] | None:
    """(smallest, largest) sampling period of the recording's sampled blocks: they differ
    where processes had different periods or the runtime raised it while recording (its cost
    budget, native/runtime/sample/site_pace.h)."""
    if not has_sites(trace):
        return None
    period = column(trace.site_allocations, "period", np.uint64)
    return int(period.min()), int(period.max())
