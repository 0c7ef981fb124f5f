"""Watched allocation sites as rows of the kernel model: the small blocks a plan can lock.

A recording made with watched sites (`record --sites N`, `compare --sites N`;
analysis.site_watch) served each watched site's blocks from arena chunks of its own, and the
pageout sampler armed those chunks' pages as it arms objects' (WINDOW records with the region's
seq; samples whose address lies in a chunk). That is what the model needs for a row: touch
delays (events) and pages left untouched when their window closed (censored), whose
Kaplan-Meier curve (analysis.reuse_curves.kaplan_meier) is the site's F(t).

Without site rows the model counts every small block as memory outside the objects that is
always resident and takes its room; with them a watched site's bytes compete in the LRU like
an object's, and a lock of the site's first chunks (the runtime's `site ... fast LOCK_BYTES`,
plan.sites) is a candidate like a lock of an object's first pages: on a matrix of per-row
arrays swept every iteration it is the part LRU would lose anyway.

What a row stands for: the site's bytes its arena served (the arena chunks' bytes, at most the
site's estimated peak live bytes: blocks allocated before the runtime learnt the site stay with
the program's allocator and outside the row), live from its first chunk to the end of the run.
Every figure here is an estimate from sampled pages.
Units: bytes, ns, pages (the profile's page size).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from objtier.analysis.reuse_curves import GRID, kaplan_meier, sampler_corrected
from objtier.analysis.site_watch import in_regions, has_watched_sites
from objtier.model.lru import Curves
from objtier.plan.table import ObjectTable
from objtier.trace.columns import column

CHUNK_BYTES = 1 << 20      # RT_SARENA_CHUNK_BYTES: the runtime locks a site's chunks whole
MIN_ARMED_PAGES = 64       # armed pages a site needs for a curve of its own


@dataclass(frozen=True)
class SiteRows:
    """One row per watched site with a curve, pooled over the recordings by context key."""

    sites: list[dict[str, Any]]   # {context_key, frame0_key, label, arena_bytes}
    size: np.ndarray              # int64: bytes the row stands for
    horizon_ns: np.ndarray        # float64: the curve's horizon (> 0)
    share: np.ndarray             # float64 (n, GRID)
    tail_slope: np.ndarray        # float64 [1/ns]
    first_ns: np.ndarray          # float64: first chunk, ns after the first recording's start
    armed: np.ndarray             # int64: pages armed over all windows
    calls: np.ndarray             # float64: estimated allocation calls of the site in a run

    def __len__(self) -> int:
        return len(self.sites)


def _site_observations(trace) -> dict[str, dict[str, Any]]:
    """Per watched site's context key in one recording: its events, censors and chunks."""
    from objtier.analysis.sites import site_table
    from objtier.plan.sites import frame0_keys

    regions = trace.site_regions
    r_pid = column(regions, "pid", np.uint32)
    r_seq = column(regions, "seq", np.uint64)
    r_key = [f"{k:016x}" for k in column(regions, "key", np.uint64).tolist()]
    r_len = column(regions, "len", np.float64)
    r_time = column(regions, "time_ns", np.float64) - float(trace.start_ns)
    out: dict[str, dict[str, Any]] = {}
    for i, key in enumerate(r_key):
        o = out.setdefault(key, {"delays": [], "dwell": [], "untouched": [], "armed": 0,
                                 "arena_bytes": 0.0, "first_ns": np.inf, "peak": 0.0,
                                 "calls": 0.0, "label": "", "frame0_key": None})
        o["arena_bytes"] += r_len[i]
        o["first_ns"] = min(o["first_ns"], r_time[i])
    region_key = {(int(p), int(s)): k for p, s, k in zip(r_pid.tolist(), r_seq.tolist(), r_key)}
    windows = trace.windows
    if windows.num_rows:
        w_pid = column(windows, "pid", np.uint32).tolist()
        w_seq = column(windows, "alloc_seq", np.uint64).tolist()
        pages = column(windows, "pages", np.int64)
        touched = column(windows, "touched", np.int64)
        dwell = column(windows, "dwell_ns", np.float64)
        for j, (p, s) in enumerate(zip(w_pid, w_seq)):
            key = region_key.get((int(p), int(s)))
            if key is None:
                continue
            o = out[key]
            o["dwell"].append(dwell[j])
            o["untouched"].append(max(0, int(pages[j] - touched[j])))
            o["armed"] += int(pages[j])
    samples = trace.samples
    if samples.num_rows:
        at = in_regions(regions, column(samples, "pid", np.uint32),
                         column(samples, "addr", np.uint64))
        hit = at >= 0
        if hit.any():
            delays = sampler_corrected(trace, hit)
            for key_i, d in zip(at[hit].tolist(), delays.tolist()):
                out[r_key[key_i]]["delays"].append(d)
    first = frame0_keys(trace)
    table = site_table(trace, labels=True)
    if table.num_rows and "context_key" in table.column_names:
        for r in table.to_pylist():
            o = out.get(r["context_key"])
            if o is None:
                continue
            o["peak"] += float(r["est_peak_bytes"] or 0)
            o["calls"] += float(r.get("est_blocks") or 0)
            o["label"] = o["label"] or r["label"]
            o["frame0_key"] = o["frame0_key"] or first.get((r["pid"], r["context"]))
    return out


def site_rows(traces: list[Any]) -> SiteRows | None:
    """The recordings' watched sites with a curve (module docstring), or None when none."""
    pooled: dict[str, dict[str, Any]] = {}
    counted = 0
    for trace in traces:
        if not has_watched_sites(trace):
            continue
        counted += 1
        for key, o in _site_observations(trace).items():
            p = pooled.setdefault(key, {"delays": [], "dwell": [], "untouched": [], "armed": 0,
                                        "arena_bytes": [], "peak": [], "calls": [],
                                        "first_ns": np.inf, "label": "", "frame0_key": None})
            for field in ("delays", "dwell", "untouched"):
                p[field] += o[field]
            p["armed"] += o["armed"]
            p["arena_bytes"].append(o["arena_bytes"])
            p["peak"].append(o["peak"])
            p["calls"].append(o["calls"])
            p["first_ns"] = min(p["first_ns"], o["first_ns"])
            p["label"] = p["label"] or o["label"]
            p["frame0_key"] = p["frame0_key"] or o["frame0_key"]
    rows = []
    for key, p in sorted(pooled.items()):
        if not p["frame0_key"] or p["armed"] < MIN_ARMED_PAGES:
            continue
        horizon, share, slope = kaplan_meier(np.array(p["delays"]), np.array(p["dwell"]),
                                             np.array(p["untouched"]))
        if horizon <= 0:
            continue
        arena = float(np.median(p["arena_bytes"]))
        peak = float(np.median(p["peak"])) or arena
        size = int(min(arena, peak))
        if size < CHUNK_BYTES:
            continue
        rows.append((key, p, size, horizon, share, slope))
    if not rows:
        return None
    return SiteRows(
        sites=[{"context_key": k, "frame0_key": p["frame0_key"], "label": p["label"],
                "arena_bytes": int(np.median(p["arena_bytes"]))} for k, p, *_ in rows],
        size=np.array([r[2] for r in rows], dtype=np.int64),
        horizon_ns=np.array([r[3] for r in rows]),
        share=np.array([r[4] for r in rows]).reshape(len(rows), GRID),
        tail_slope=np.array([r[5] for r in rows]),
        first_ns=np.array([r[1]["first_ns"] for r in rows]),
        armed=np.array([r[1]["armed"] for r in rows], dtype=np.int64),
        calls=np.array([float(np.median(r[1]["calls"])) for r in rows]))


def extended_table(objects: ObjectTable, rows: SiteRows) -> ObjectTable:
    """The object table with one row per site after the objects' (ids above theirs; never
    freed, allocated at their first chunk: only size, plannable and the lifetime columns are
    read by the model)."""
    n = len(rows)
    base = int(objects.object.max()) + 1 if len(objects) else 0

    def more(a, values):
        return None if a is None else np.concatenate([a, np.asarray(values, dtype=a.dtype)])

    return replace(
        objects,
        object=np.concatenate([objects.object, base + np.arange(n, dtype=np.int64)]),
        context_key=np.concatenate([objects.context_key,
                                    np.array([s["context_key"] for s in rows.sites],
                                             dtype=object)]),
        occurrence=np.concatenate([objects.occurrence, np.ones(n, dtype=np.int64)]),
        size=np.concatenate([objects.size, rows.size]),
        accesses=np.concatenate([objects.accesses, rows.armed.astype(np.float64)]),
        label=np.concatenate([objects.label,
                              np.array([f"site {s['label']}" for s in rows.sites],
                                       dtype=object)]),
        alloc_ns=more(objects.alloc_ns, np.zeros(n)),
        free_ns=more(objects.free_ns, -np.ones(n)),
        retouch_us=more(objects.retouch_us, np.full(n, np.nan)),
        sequential=more(objects.sequential, np.full(n, np.nan)))


def extended_views(views, rows: SiteRows, duration_ns: float):
    """Each view (model.Curves, or a list of the run's equal slices) with the site rows
    appended: the site's whole-run curve in every slice, live from its first chunk on."""
    many = isinstance(views, list)
    parts = views if many else [views]
    out = []
    for i, view in enumerate(parts):
        lo, hi = duration_ns * i / len(parts), duration_ns * (i + 1) / len(parts)
        live = np.clip((hi - np.maximum(rows.first_ns, lo)) / max(hi - lo, 1.0), 0.0, 1.0)
        present = (None if view.present is None
                   else np.concatenate([view.present, np.ones(len(rows))]))
        out.append(Curves(np.concatenate([view.horizon_ns, rows.horizon_ns]),
                          np.concatenate([view.share, rows.share]),
                          np.concatenate([view.tail_slope, rows.tail_slope]),
                          np.concatenate([view.live_share, live]),
                          view.duration_ns, present))
    return out if many else out[0]


def site_entries(rows: SiteRows, locked_pages: np.ndarray, page_bytes: int
                 ) -> list[dict[str, Any]]:
    """The plan's `sites` for the model's locks of the site rows: each site with at least a
    chunk's worth of locked pages goes fast with lock_bytes, its locked pages rounded down to
    whole chunks (the runtime locks chunks whole, the first ones the site got; rounding down
    keeps the plan within the cap)."""
    out = []
    for site, size, pages in zip(rows.sites, rows.size.tolist(), locked_pages.tolist()):
        lock = min(int(pages) * page_bytes, int(size)) // CHUNK_BYTES * CHUNK_BYTES
        if lock <= 0:
            continue
        out.append({"context_key": site["context_key"], "frame0_key": site["frame0_key"],
                    "tier": "fast", "lock_bytes": int(lock), "est_peak_bytes": int(size),
                    "label": site["label"],
                    "access": "model: a lock of its first chunks lowers the predicted "
                              "swap-ins (pageout windows on the site's arena; estimated)"})
    return out


SITE_TIE = 0.03   # site locks must predict this share fewer swap-ins than the objects' alone
# What serving a planned site costs and what a swap-in saved is worth, to weigh the two (the
# plan has no measured cost per swap-in yet): a malloc+free pair of a planned hot site took
# 562 ns against 45.5 ns without the runtime (bench/arena_cost.py cost, 2026-12-02, M1); a
# swap-in from zram 6.4-9.8 us (bench/replay_prefetch.py, 2026-11-28), taken low. Every block
# of a locked site is served from its arena, locked chunk or not.
ARENA_CALL_S = 0.52e-6
SWAPIN_S = 5e-6
COST_SHARE = 0.5  # the arena's cost must stay below this share of the swap-ins' time saved


def with_site_locks(choice: Any, traces: list[Any], placed: ObjectTable, views: Any,
                    page_bytes: int, local_bytes: int, other_bytes: int,
                    cap_bytes: int | None, calibrate_to: float | None) -> tuple[Any, str | None]:
    """(choice, note): the model's choice with the watched sites as rows beside the objects
    (module docstring). The objects' lock set stays as chosen; the sites' bytes leave
    `other_bytes` for rows of their own, the model is fitted again to a measured kernel run
    where there is one (by_model.calibrate), and the sites' chunks are locked where the
    model's greedy set (by_model.greedy, growing only site rows) predicts SITE_TIE fewer
    swap-ins than the objects' locks alone. The choice's predictions are then those of the
    whole footprint: kernel, and plan with the sites' locks (per_object: the objects' only).
    note: one line on what the sites did (None without watched sites)."""
    from objtier.plan import by_model

    rows = site_rows(traces)
    if rows is None or choice.placement is None:
        return choice, None
    n = len(placed)
    table, ext, other = extended(placed, views, rows, other_bytes)
    capacity_pages = float(max(0, local_bytes - other) // page_bytes)
    calibration = None
    if calibrate_to is not None:
        alpha, ext = by_model.calibrate(ext, table, page_bytes, capacity_pages, calibrate_to)
        calibration = round(alpha, 4)
    cap = by_model.lock_cap(local_bytes, other, cap_bytes)
    start = np.concatenate([by_model.locked_pages(choice.placement), np.zeros(len(rows))])
    only = np.concatenate([np.zeros(n, bool), np.ones(len(rows), bool)])
    locked = by_model.greedy(ext, table, page_bytes, capacity_pages,
                             float(cap // page_bytes), start=start, only=only)
    # what the runtime will lock: whole chunks, rounded down
    entries = site_entries(rows, locked[n:], page_bytes)
    by_key = {e["context_key"]: e["lock_bytes"] for e in entries}
    locked[n:] = [by_key.get(s["context_key"], 0) // page_bytes for s in rows.sites]

    def at(locks):
        return by_model.predicted(ext, table, page_bytes, capacity_pages, locks)

    nothing, objects_only, with_sites = at(np.zeros(len(locked))), at(start), at(locked)
    site_bytes = int(sum(by_key.values()))
    watched = f"{len(rows)} watched site(s), {rows.size.sum() / 2**20:.1f} MiB"
    locked_keys = set(by_key)
    calls = float(sum(c for s, c in zip(rows.sites, rows.calls.tolist())
                      if s["context_key"] in locked_keys))
    saved_s = max(0.0, objects_only.swapins - with_sites.swapins) * SWAPIN_S
    if not entries or with_sites.swapins >= objects_only.swapins * (1.0 - SITE_TIE):
        chosen = objects_only
        note = (f"sites: {watched} modelled; locking their chunks gains too little "
                f"({objects_only.swapins:,.0f} swap-ins predicted without, "
                f"{with_sites.swapins:,.0f} with; estimated): none locked")
        entries = []
    elif calls * ARENA_CALL_S > COST_SHARE * saved_s:
        chosen = objects_only
        note = (f"sites: {watched} modelled; locking their chunks would save about "
                f"{saved_s:.2f} s of swap-ins but serving their {calls:,.0f} allocation calls "
                f"from arenas costs about {calls * ARENA_CALL_S:.2f} s (estimated): none "
                f"locked")
        entries = []
    else:
        chosen = with_sites
        note = (f"sites: {watched} modelled; {len(entries)} locked "
                f"({site_bytes / 2**20:.0f} MiB of their first chunks): "
                f"{with_sites.swapins:,.0f} swap-ins predicted against "
                f"{objects_only.swapins:,.0f} with the objects' locks alone (estimated)")

    def trim(p):
        return replace(p, per_object=p.per_object[:n])

    object_bytes = int(by_model.locked_pages(choice.placement).sum()) * page_bytes
    # "sites" alone where the objects' choice locks nothing, else "<objects' choice>+sites"
    name = ("sites" if choice.name == "nothing" else f"{choice.name}+sites") if entries \
        else choice.name
    predictions = {**choice.predictions, "objects only": objects_only.swapins}
    if entries:
        predictions[name] = with_sites.swapins
    fit = dict(choice.calibration or {})
    if calibration is not None:
        fit["sites_alpha"] = calibration
    return replace(choice, name=name,
                   limit_bytes=max(choice.limit_bytes, object_bytes + site_bytes),
                   predictions=predictions, nothing=trim(nothing), chosen=trim(chosen),
                   capacity_bytes=max(0, local_bytes - other), other_bytes=other,
                   calibration=fit or None, sites=entries), note


def extended(placed: ObjectTable, views: Any, rows: SiteRows, other_bytes: int):
    """(table, views, other): the objects and the site rows, and what is then held outside
    both [bytes]."""
    table = extended_table(placed, rows)
    ext = extended_views(views, rows, float(views_duration(views)))
    return table, ext, max(0, int(other_bytes) - int(rows.size.sum()))


def kernel_swapins(traces: list[Any], placed: ObjectTable, views: Any, page_bytes: int,
                   local_bytes: int, other_bytes: int) -> float | None:
    """The swap-ins predicted with nothing locked when the watched sites are rows of their
    own (None without watched sites): what a measured kernel run is to be held against."""
    from objtier.plan import by_model

    rows = site_rows(traces)
    if rows is None:
        return None
    table, ext, other = extended(placed, views, rows, other_bytes)
    capacity_pages = float(max(0, local_bytes - other) // page_bytes)
    return by_model.predicted(ext, table, page_bytes, capacity_pages,
                              np.zeros(len(table))).swapins


def views_duration(views: Any) -> float:
    """The run's length the views cover [ns] (a list: the sum of its slices)."""
    return sum(v.duration_ns for v in views) if isinstance(views, list) else views.duration_ns
