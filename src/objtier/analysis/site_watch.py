"""Watched allocation sites: sampled access to small-block sites measured through their arenas.

`objtier record --sites N` (OBJTIER_ARENA_SITES, docs/watched-sites.md) serves the
blocks of N chosen sites from segregated arena chunks while recording, and the pageout sampler
arms those chunks' pages as it arms objects' pages: each site's chunks are one object-like
region (SITE_REGION records, trace_format.h), its WINDOW records carry the region's seq, and a
sample whose address lies in a chunk is an access to the site. The columns below are added to
analysis.sites.site_table (zero / null for a site that was not watched):

  watched         bool    the site had arena chunks while recording
  arena_bytes     int64   bytes of its chunks (1 MiB each; the last one partly used)
  arena_share     float64 sampled blocks of the site that lay in its chunks / all its sampled
                          blocks: how much of the site the arena saw (blocks allocated before
                          the runtime started, or above 128 KiB, stay outside)
  region_samples  int64   samples whose address lies in its chunks (not scaled)
  arms_per_page   float64 armed pages of its WINDOW records / its pages (min(arena bytes, est
                          peak bytes) in pages): how often each page was armed, on average
  armed_share     float64 1 - exp(-arms_per_page): the estimated share of the site's bytes
                          armed at least once (each pass arms pages at a random phase)
  watched_s       float64 page-seconds its pages were armed, as objects' (analysis.objects)
  touch_rate      float64 first touches per page per second of watching; null = unwatched
  est_touches     float64 touch_rate * est_peak_bytes (in pages) * seconds since its first
                          chunk: estimated touch episodes, the objects' est_touches of a site

Everything here is an estimate from sampled pages (and est_peak_bytes from 1 in `period`
blocks); none of it is an exact count.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from objtier.trace.columns import column, page_shift, trace_end_ns

WATCH_COLUMNS = ("watched", "arena_bytes", "arena_share", "region_samples", "arms_per_page",
                 "armed_share", "watched_s", "touch_rate", "est_touches")


def has_watched_sites(trace) -> bool:
    """The recording served some sites from watched arenas (format 1.6, record --sites)."""
    regions = getattr(trace, "site_regions", None)
    return regions is not None and regions.num_rows > 0


def in_regions(regions: pa.Table, pid: np.ndarray, addr: np.ndarray) -> np.ndarray:
    """Row of `regions` (sorted by pid, addr; never overlapping within a pid) holding each
    (pid, addr), -1 for none."""
    out = np.full(len(addr), -1, np.int64)
    r_pid = column(regions, "pid", np.uint32)
    r_addr = column(regions, "addr", np.uint64)
    r_end = r_addr + column(regions, "len", np.uint64)
    for p in np.unique(r_pid):
        rows = np.flatnonzero(r_pid == p)
        sel = np.flatnonzero(pid == p)
        if not len(sel):
            continue
        at = np.searchsorted(r_addr[rows], addr[sel], side="right") - 1
        ok = at >= 0
        ok[ok] = addr[sel][ok] < r_end[rows][at[ok]]
        out[sel[ok]] = rows[at[ok]]
    return out


def watch_columns(trace, table: pa.Table) -> dict[str, pa.Array]:
    """The columns of the module docstring for the rows of `table` (a site table with pid,
    context_key, est_peak_bytes, sampled_blocks) in its order."""
    n = table.num_rows
    empty = {"watched": pa.array(np.zeros(n, bool)),
             "arena_bytes": pa.array(np.zeros(n, np.int64)),
             "arena_share": pa.nulls(n, pa.float64()),
             "region_samples": pa.array(np.zeros(n, np.int64)),
             "arms_per_page": pa.array(np.zeros(n)),
             "armed_share": pa.array(np.zeros(n)),
             "watched_s": pa.array(np.zeros(n)),
             "touch_rate": pa.nulls(n, pa.float64()),
             "est_touches": pa.nulls(n, pa.float64())}
    if not n or not has_watched_sites(trace):
        return empty
    regions = trace.site_regions
    r_pid = column(regions, "pid", np.uint32)
    r_key = [f"{k:016x}" for k in column(regions, "key", np.uint64).tolist()]
    row_of = {(p, k): i for i, (p, k) in enumerate(zip(table.column("pid").to_pylist(),
                                                        table.column("context_key").to_pylist()))}
    region_row = np.array([row_of.get((int(p), k), -1) for p, k in zip(r_pid, r_key)], np.int64)
    known = region_row >= 0
    if not known.any():
        return empty
    r_len = column(regions, "len", np.float64)
    arena_bytes = np.bincount(region_row[known], weights=r_len[known], minlength=n)
    first_ns = np.full(n, np.inf)
    np.minimum.at(first_ns, region_row[known], column(regions, "time_ns", np.float64)[known])
    watched = arena_bytes > 0

    # samples in the chunks
    samples = trace.samples
    hit = in_regions(regions, column(samples, "pid", np.uint32),
                      column(samples, "addr", np.uint64)) if samples.num_rows else np.zeros(0, int)
    hit_row = region_row[hit[hit >= 0]]
    region_samples = np.bincount(hit_row[hit_row >= 0], minlength=n).astype(np.int64)

    # the site's sampled blocks that lay in its chunks
    allocs = trace.site_allocations
    in_arena = in_regions(regions, column(allocs, "pid", np.uint32),
                           column(allocs, "addr", np.uint64))
    block_row = np.full(len(in_arena), -1, np.int64)
    block_row[in_arena >= 0] = region_row[in_arena[in_arena >= 0]]
    arena_blocks = np.bincount(block_row[block_row >= 0], minlength=n)
    sampled_blocks = column(table, "sampled_blocks", np.float64)

    # WINDOW records of the regions: (pid, seq) -> row
    windows = trace.windows
    shift = page_shift(trace)
    page = float(1 << shift)
    peak = column(table, "est_peak_bytes", np.float64)
    pages = np.maximum(np.minimum(arena_bytes, peak), page) / page
    arms = np.zeros(n)
    watched_s = np.zeros(n)
    touches = np.zeros(n)
    if windows.num_rows:
        # (pid, region seq) -> site row, as objects' (pid << 40 | seq; region seqs < 2^40)
        r_keys = (r_pid[known].astype(np.uint64) << np.uint64(40)) | \
            column(regions, "seq", np.uint64)[known]
        r_keys, first = np.unique(r_keys, return_index=True)
        r_rows = region_row[known][first]
        w_keys = (column(windows, "pid", np.uint64) << np.uint64(40)) | \
            column(windows, "alloc_seq", np.uint64)
        at = np.minimum(np.searchsorted(r_keys, w_keys), len(r_keys) - 1)
        idx = np.flatnonzero(r_keys[at] == w_keys)
        w_row = r_rows[at[idx]]
        w_pages = column(windows, "pages", np.float64)[idx]
        w_touched = column(windows, "touched", np.float64)[idx]
        exposure = (column(windows, "touched_ns", np.float64)[idx]
                    + (w_pages - w_touched) * column(windows, "dwell_ns", np.float64)[idx]) / 1e9
        arms = np.bincount(w_row, weights=w_pages, minlength=n)
        watched_s = np.bincount(w_row, weights=exposure, minlength=n)
        touches = np.bincount(w_row, weights=w_touched, minlength=n)
    end = float(trace_end_ns(trace))
    unwatched = watched_s <= 0
    with np.errstate(invalid="ignore", divide="ignore"):
        arms_per_page = np.where(watched, arms / pages, 0.0)
        touch_rate = np.where(unwatched, 0.0, touches / watched_s)
        span_s = np.where(watched, np.maximum(end - first_ns, 0.0) / 1e9, 0.0)
        est_touches = touch_rate * (peak / page) * span_s
        share = np.where(sampled_blocks > 0, arena_blocks / sampled_blocks, 0.0)
    return {"watched": pa.array(watched),
            "arena_bytes": pa.array(arena_bytes.round().astype(np.int64)),
            "arena_share": pa.array(share, mask=~watched),
            "region_samples": pa.array(region_samples),
            "arms_per_page": pa.array(arms_per_page),
            "armed_share": pa.array(np.where(watched, 1.0 - np.exp(-arms_per_page), 0.0)),
            "watched_s": pa.array(watched_s),
            "touch_rate": pa.array(touch_rate, mask=unwatched),
            "est_touches": pa.array(est_touches, mask=unwatched)}


def access_per_byte(row: dict) -> float:
    """A watched site's estimated touches per byte of its peak live bytes (0 when unwatched)."""
    touches = row.get("est_touches") or 0.0
    return touches / row["est_peak_bytes"] if row.get("est_peak_bytes") else 0.0


def rank_by_access(table: pa.Table) -> pa.Table:
    """The watched sites of a site table whose arena scan windows armed, most estimated
    touches per byte first (then larger first); the others follow in the table's order."""
    if not table.num_rows or "watched" not in table.column_names:
        return table
    watched = column(table, "watched", bool) & ~np.asarray(
        table.column("touch_rate").is_null().to_numpy(zero_copy_only=False), bool)
    rows = np.flatnonzero(watched)
    est = np.nan_to_num(np.asarray(table.column("est_touches").to_numpy(zero_copy_only=False),
                                   np.float64))
    peak = column(table, "est_peak_bytes", np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_byte = np.where(peak > 0, est / peak, 0.0)
    order = rows[np.lexsort((-peak[rows], -per_byte[rows]))]
    return table.take(pa.array(np.concatenate([order, np.flatnonzero(~watched)]).astype(np.int64)))
