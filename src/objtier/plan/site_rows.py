"""Watched allocation sites as rows of the kernel model: the small blocks a plan can place.

A recording made with watched sites (`record --sites N`, `compare --profile sites=N`;
analysis.site_watch) served each watched site's blocks from arena chunks of its own, and the
pageout sampler armed those chunks' pages as it arms objects' (WINDOW records with the region's
seq; samples whose address lies in a chunk). That is what the model needs for a row: touch
delays (events) and pages left untouched when their window closed (censored), whose
Kaplan-Meier curve (analysis.reuse_curves.kaplan_meier) is the site's F(t).

Without site rows the model counts every small block as memory outside the objects that is
always resident and takes its room. With them (layout): in the kernel's run, which has no
arenas, the sites' blocks share the heap's pages, one row of them mixed (mixed_curve); in the
plan's, a site kept apart (site tier `apart`) has pages of its own, a row at its arena's size,
and a lock of its first chunks (`site ... fast LOCK_BYTES`, plan.sites) is a candidate like a
lock of an object's first pages: on a matrix of per-row arrays swept every iteration it is
the part LRU would lose anyway; on a hot site mixed with cold ones, keeping it apart alone
lets LRU keep its pages and lose the others'.

What a row stands for: apart, the site's arena chunks' bytes (at most twice its estimated peak
live bytes: size classes and freed blocks cost room); mixed, its estimated peak live bytes;
live from its first chunk to the end of the run. Every figure here is an estimate from
sampled pages.
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
    size: np.ndarray              # int64: bytes the row takes in arenas of its own (its arena
                                  # chunks' bytes, at most twice its estimated peak)
    peak: np.ndarray              # int64: its estimated peak live bytes (in the program's heap)
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
    for trace in traces:
        if not has_watched_sites(trace):
            continue
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
        size = int(min(arena, 2.0 * peak))
        if size < CHUNK_BYTES:
            continue
        rows.append((key, p, size, horizon, share, slope, int(peak)))
    if not rows:
        return None
    return SiteRows(
        sites=[{"context_key": k, "frame0_key": p["frame0_key"], "label": p["label"],
                "arena_bytes": int(np.median(p["arena_bytes"]))} for k, p, *_ in rows],
        size=np.array([r[2] for r in rows], dtype=np.int64),
        peak=np.array([r[6] for r in rows], dtype=np.int64),
        horizon_ns=np.array([r[3] for r in rows]),
        share=np.array([r[4] for r in rows]).reshape(len(rows), GRID),
        tail_slope=np.array([r[5] for r in rows]),
        first_ns=np.array([r[1]["first_ns"] for r in rows]),
        armed=np.array([r[1]["armed"] for r in rows], dtype=np.int64),
        calls=np.array([float(np.median(r[1]["calls"])) for r in rows]))


def _table(objects: ObjectTable, keys: list[str], labels: list[str], size: np.ndarray,
           accesses: np.ndarray) -> ObjectTable:
    """The object table with rows appended after the objects' (ids above theirs; never freed,
    allocated at 0: only size, plannable and the lifetime columns are read by the model)."""
    n = len(keys)
    base = int(objects.object.max()) + 1 if len(objects) else 0

    def more(a, values):
        return None if a is None else np.concatenate([a, np.asarray(values, dtype=a.dtype)])

    return replace(
        objects,
        object=np.concatenate([objects.object, base + np.arange(n, dtype=np.int64)]),
        context_key=np.concatenate([objects.context_key, np.array(keys, dtype=object)]),
        occurrence=np.concatenate([objects.occurrence, np.ones(n, dtype=np.int64)]),
        size=np.concatenate([objects.size, np.asarray(size, dtype=np.int64)]),
        accesses=np.concatenate([objects.accesses, np.asarray(accesses, dtype=np.float64)]),
        label=np.concatenate([objects.label, np.array(labels, dtype=object)]),
        alloc_ns=more(objects.alloc_ns, np.zeros(n)),
        free_ns=more(objects.free_ns, -np.ones(n)),
        retouch_us=more(objects.retouch_us, np.full(n, np.nan)),
        sequential=more(objects.sequential, np.full(n, np.nan)),
        recurs=more(objects.recurs, np.ones(n, dtype=bool)))


def _row_curves(rows: SiteRows, pick: np.ndarray) -> Curves:
    return Curves(rows.horizon_ns[pick], rows.share[pick], rows.tail_slope[pick],
                  np.ones(int(pick.sum())), 1.0)


def mixed_curve(rows: SiteRows, mixed: np.ndarray) -> tuple[float, np.ndarray, float]:
    """(H, F on GRID points over [0, H], tail slope) of a page of the program's own heap that
    holds the `mixed` sites' blocks side by side, in proportion to their peak bytes: a page
    is left untouched for t only when each of its blocks is, so its survival is the product
    of the sites' survivals, each to the power of its share of the page (independent blocks;
    a page of one site is one site's page): 1 - F = prod_s (1 - F_s)^(w_s)."""
    from objtier.analysis.reuse_curves import concave_majorant
    from objtier.model.lru import shares_at

    curves = _row_curves(rows, mixed)
    weight = rows.peak[mixed].astype(np.float64)
    weight = weight / max(weight.sum(), 1.0)
    horizon = float(curves.horizon_ns.max())
    grid = np.linspace(0.0, horizon, GRID)

    def share(ts):
        survive = np.clip(1.0 - shares_at(curves, ts), 0.0, 1.0)
        return 1.0 - np.prod(survive ** weight[:, None], axis=0)

    f = concave_majorant(grid, share(grid))
    beyond = share(np.array([horizon, 1.5 * horizon]))
    slope = max(0.0, float(beyond[1] - beyond[0]) / (0.5 * horizon))
    return horizon, f, slope


@dataclass(frozen=True)
class Layout:
    """The model's rows for one way of holding the sites: the objects, then one row per site
    in an arena of its own (`apart`), then one row for the other sites' blocks mixed in the
    program's heap (if any)."""

    table: ObjectTable
    views: Any
    other_bytes: int          # held outside objects and sites [bytes]
    apart: np.ndarray         # bool (k,): sites with a row of their own
    first_site_row: int       # = len(objects)

    def capacity_pages(self, local_bytes: int, page_bytes: int) -> float:
        """The pages the kernel has for the objects and sites: local less what is held
        outside both."""
        return float(max(0, local_bytes - self.other_bytes) // page_bytes)


def layout(placed: ObjectTable, views: Any, rows: SiteRows, apart: np.ndarray,
           other_bytes: int) -> Layout:
    """The Layout with the `apart` sites in arenas of their own (their arena bytes) and the
    rest mixed (their peak bytes); what is held outside both is other_bytes less every site's
    peak bytes."""
    apart = np.asarray(apart, bool)
    mixed = ~apart
    keys = [s["context_key"] for s, a in zip(rows.sites, apart) if a]
    labels = [f"site {s['label']}" for s, a in zip(rows.sites, apart) if a]
    size = list(rows.size[apart])
    acc = list(rows.armed[apart].astype(float))
    first = list(rows.first_ns[apart])
    h, share, slope = list(rows.horizon_ns[apart]), list(rows.share[apart]), \
        list(rows.tail_slope[apart])
    if mixed.any():
        mh, mf, ms = mixed_curve(rows, mixed)
        keys.append("")          # no context: a plan can name no lock of it
        labels.append("small blocks of the other watched sites, mixed in the heap")
        size.append(int(rows.peak[mixed].sum()))
        acc.append(float(rows.armed[mixed].sum()))
        first.append(float(rows.first_ns[mixed].min()))
        h.append(mh)
        share.append(mf)
        slope.append(ms)
    table = _table(placed, keys, labels, np.array(size), np.array(acc))
    duration = float(views_duration(views))
    first_ns = np.array(first)
    many = isinstance(views, list)
    parts = views if many else [views]
    out = []
    for i, view in enumerate(parts):
        lo, hi = duration * i / len(parts), duration * (i + 1) / len(parts)
        live = np.clip((hi - np.maximum(first_ns, lo)) / max(hi - lo, 1.0), 0.0, 1.0)
        present = (None if view.present is None
                   else np.concatenate([view.present, np.ones(len(keys))]))
        out.append(Curves(np.concatenate([view.horizon_ns, h]),
                          np.concatenate([view.share, np.array(share).reshape(-1, GRID)]),
                          np.concatenate([view.tail_slope, slope]),
                          np.concatenate([view.live_share, live]), view.duration_ns, present))
    other = max(0, int(other_bytes) - int(rows.peak.sum()))
    return Layout(table, out if many else out[0], other, apart, len(placed))


def site_entries(rows: SiteRows, apart: np.ndarray, locked_pages: np.ndarray,
                 page_bytes: int) -> list[dict[str, Any]]:
    """The plan's `sites`: every site kept apart, `fast` with lock_bytes where the model locks
    at least a chunk of it (its locked pages rounded down to whole chunks: the runtime locks
    chunks whole, the first ones the site got; rounding down keeps the plan within the cap),
    else `apart` (its own arena, no tier action: its pages no longer share pages with other
    blocks, which the kernel's LRU then tells apart)."""
    out = []
    locks = iter(locked_pages.tolist())
    for site, size, keep in zip(rows.sites, rows.size.tolist(), apart.tolist()):
        if not keep:
            continue
        lock = min(int(next(locks)) * page_bytes, int(size)) // CHUNK_BYTES * CHUNK_BYTES
        entry = {"context_key": site["context_key"], "frame0_key": site["frame0_key"],
                 "tier": "fast" if lock > 0 else "apart", "est_peak_bytes": int(size),
                 "label": site["label"],
                 "access": "model: pageout windows on the site's arena (estimated)"}
        if lock > 0:
            entry["lock_bytes"] = int(lock)
        out.append(entry)
    return out


# sites placed must predict this share fewer swap-ins than the objects' locks alone: arenas
# cost calls and room the model does not weigh in swap-ins. At 3 %, SQLite at 70 % kept its
# page-cache site apart for 4 % fewer predicted swap-ins and took 16 % more (0.88x the
# kernel, 3 repeats, 2026-12-02); the gains that paid were 28 % and more (rows.c, PageRank).
# Set at 15 % while predictions still gave the runtime's own room to the unlocked pages; since
# they pay it (by_model.RUNTIME_BYTES), rows.c's predicted gain on the same four profiles fell
# from 18 % (10 MiB locked) to 13 % (8 MiB), and the plan placed nothing where the run had
# swapped in 20 % less and more with it (test_compare_model; CI, 2026-12-03). 10 % keeps the
# same distance from SQLite's 4 %.
SITE_TIE = 0.10
# What serving a planned site costs and what a swap-in saved is worth, to weigh the two (the
# plan has no measured cost per swap-in yet): a malloc+free pair of a planned hot site took
# 562 ns against 45.5 ns without the runtime (bench/arena_cost.py cost, 2026-12-02, M1); a
# swap-in from zram 6.4-9.8 us (bench/replay_prefetch.py, 2026-11-28), taken low. Every block
# of a site kept apart is served from its arena, locked chunk or not.
ARENA_CALL_S = 0.52e-6
SWAPIN_S = 5e-6
COST_SHARE = 0.5  # the arenas' cost must stay below this share of the swap-ins' time saved


def _kernel(placed, views, rows, other_bytes, local_bytes, page_bytes, calibrate_to):
    """(layout, alpha, capacity pages) of the kernel's layout (every site mixed), fitted to a
    measured kernel run where there is one."""
    from objtier.plan import by_model

    k = layout(placed, views, rows, np.zeros(len(rows), bool), other_bytes)
    capacity = k.capacity_pages(local_bytes, page_bytes)
    alpha = 0.0
    if calibrate_to is not None:
        alpha, fitted = by_model.calibrate(k.views, k.table, page_bytes, capacity, calibrate_to)
        k = replace(k, views=fitted)
    return k, alpha, capacity


def with_site_locks(choice: Any, rows: SiteRows | None, placed: ObjectTable, views: Any,
                    page_bytes: int, local_bytes: int, other_bytes: int,
                    cap_bytes: int | None, calibrate_to: float | None) -> tuple[Any, str | None]:
    """(choice, note): the model's choice with the watched sites as rows beside the objects
    (module docstring). The kernel's run holds every site's blocks mixed in the program's
    heap (layout: one mixed row); the plan's may keep the watched sites apart in arenas of
    their own and lock the first chunks of some (by_model.greedy growing site rows only, the
    objects' lock set as chosen). The model is fitted to a measured kernel run where there is
    one (by_model.calibrate, on the kernel's layout; the same tail on the plan's but on its
    apart rows; what the fit leaves is put on the mixed row, _levels). Kept where
    it predicts SITE_TIE fewer swap-ins than the objects' locks alone and the arenas' calls
    cost less than COST_SHARE of the swap-ins' time saved; the choice's predictions are then
    those of the whole footprint (per_object: the objects' only). note: one line on what the
    sites did (None without watched sites)."""
    from objtier.plan import by_model

    if rows is None or choice.placement is None:
        return choice, None
    n = len(placed)
    obj_locks = by_model.locked_pages(choice.placement)
    kernel, alpha, k_capacity = _kernel(placed, views, rows, other_bytes, local_bytes,
                                        page_bytes, calibrate_to)

    def at(lay: Layout, site_locks) -> Any:
        locks = np.concatenate([obj_locks, np.zeros(len(lay.table) - n)])
        locks[n:n + len(site_locks)] = site_locks
        return by_model.predicted(lay.views, lay.table, page_bytes,
                                  lay.capacity_pages(local_bytes, page_bytes), locks)

    def apart_layout(apart):
        lay = layout(placed, views, rows, apart, other_bytes)
        return replace(lay, views=_tail_but_apart(lay, alpha)) if alpha else lay

    nothing = by_model.predicted(kernel.views, kernel.table, page_bytes, k_capacity,
                                 np.zeros(len(kernel.table)))
    objects_only = at(kernel, [])

    def with_locks(apart):
        """(prediction, entries) of the sites `apart` kept apart, with the locks of their
        first chunks the model's greedy set makes on top of the objects' locks."""
        lay = apart_layout(apart)
        cap = by_model.lock_cap(local_bytes, lay.other_bytes, cap_bytes)
        k = int(apart.sum())
        start = np.concatenate([obj_locks, np.zeros(len(lay.table) - n)])
        only = np.zeros(len(lay.table), bool)
        only[n:n + k] = True
        grown = by_model.greedy(lay.views, lay.table, page_bytes,
                                lay.capacity_pages(local_bytes, page_bytes),
                                float(cap // page_bytes), start=start, only=only)
        entries = site_entries(rows, apart, grown[n:n + k], page_bytes)
        return at(lay, [e.get("lock_bytes", 0) // page_bytes for e in entries]), entries

    # which sites to keep apart: grown one site at a time while that lowers the prediction
    # (an arena costs its size classes' slack, so keeping a site apart can also lose), then
    # the locks on top; against every site apart with its locks (a sweep gains only by them)
    apart = np.zeros(len(rows), bool)
    best = objects_only.swapins
    while not apart.all():
        trials = []
        for i in np.flatnonzero(~apart).tolist():
            trial = apart.copy()
            trial[i] = True
            trials.append((at(apart_layout(trial), np.zeros(int(trial.sum()))).swapins, i))
        value, i = min(trials)
        if value >= best * (1.0 - 1e-3):
            break
        apart[i], best = True, value
    candidates = [with_locks(np.ones(len(rows), bool))]
    if apart.any() and not apart.all():
        candidates.append(with_locks(apart))
    with_sites, entries = min(candidates, key=lambda c: (c[0].swapins, len(c[1])))
    keys = {e["context_key"] for e in entries}
    calls = float(sum(c for site, c in zip(rows.sites, rows.calls.tolist())
                      if site["context_key"] in keys))
    watched = f"{len(rows)} watched site(s), {rows.peak.sum() / 2**20:.1f} MiB"
    # every prediction at the level a measured kernel run showed, row by row (_levels)
    levels = _levels(nothing, n, calibrate_to)
    level = levels[0] if levels else None
    if level is not None:
        nothing, objects_only = level(nothing, 0), level(objects_only, 0)
        with_sites = level(with_sites, len(entries))
    saved = max(0.0, objects_only.swapins - with_sites.swapins) * SWAPIN_S
    locked_bytes = int(sum(e.get("lock_bytes", 0) for e in entries))
    if with_sites.swapins >= objects_only.swapins * (1.0 - SITE_TIE):
        chosen, entries = objects_only, []
        note = (f"sites: {watched} modelled; keeping them apart or locking their chunks gains "
                f"too little ({objects_only.swapins:,.0f} swap-ins predicted without, "
                f"{with_sites.swapins:,.0f} with; estimated): none placed")
    elif calls * ARENA_CALL_S > COST_SHARE * saved:
        chosen, entries = objects_only, []
        note = (f"sites: {watched} modelled; placing them would save about {saved:.2f} s of "
                f"swap-ins but serving their {calls:,.0f} allocation calls from arenas costs "
                f"about {calls * ARENA_CALL_S:.2f} s (estimated): none placed")
    else:
        chosen = with_sites
        note = (f"sites: {watched} modelled; {len(entries)} kept apart in arenas of their own"
                + (f", {locked_bytes / 2**20:.0f} MiB of their first chunks locked"
                   if locked_bytes else "")
                + f": {with_sites.swapins:,.0f} swap-ins predicted against "
                f"{objects_only.swapins:,.0f} with the objects' locks alone (estimated)")

    def trim(p):
        return replace(p, per_object=p.per_object[:n])

    object_bytes = int(obj_locks.sum()) * page_bytes
    name = ("sites" if choice.name == "nothing" else f"{choice.name}+sites") if entries \
        else choice.name
    # the objects' candidates (by_model.choose, without the sites' rows) at the kernel
    # run's level as by_model.scaled puts it
    k = 1.0 if level is None else by_model.scale_factor(choice.nothing.swapins, calibrate_to)
    predictions = {**{cand: v * k for cand, v in choice.predictions.items()},
                   "objects only": objects_only.swapins}
    if entries:
        predictions[name] = with_sites.swapins
    fit = dict(choice.calibration or {})
    if calibrate_to is not None:
        fit["sites_alpha"] = round(alpha, 4)
        if levels:
            fit["sites_scale_objects"], fit["sites_scale_mixed"] = (round(levels[1], 4),
                                                                    round(levels[2], 4))
    return replace(choice, name=name,
                   limit_bytes=max(choice.limit_bytes, object_bytes + locked_bytes),
                   predictions=predictions, nothing=trim(nothing), chosen=trim(chosen),
                   capacity_bytes=max(0, local_bytes - kernel.other_bytes),
                   other_bytes=kernel.other_bytes, calibration=fit or None,
                   sites=entries, leveled=level is not None), note


def _levels(nothing: Any, n: int, calibrate_to: float | None):
    """Where the kernel's layout, fitted, still predicts outside by_model.SCALE_BAND of the
    measured kernel run: (level, objects' factor, mixed row's factor), level a function
    (prediction, apart rows) -> the prediction at the run's level; else None. Rows of a
    layout: n objects, then the sites kept apart, then the mixed row (the kernel's layout:
    objects and the mixed row). The measured surplus or shortfall is
    put on the mixed row, the one curve the windows did not watch as such (a product of the
    sites' survivals, module docstring); the objects and the apart rows keep their
    predictions, their curves watched in the layout the plan's run holds them in. Where the
    mixed row cannot carry it (the objects alone predict more than the run), every row is
    scaled alike, as by_model.scaled does."""
    from objtier.plan import by_model

    if calibrate_to is None:
        return None
    k = by_model.scale_factor(nothing.swapins, calibrate_to)
    if k == 1.0:
        return None
    mixed = float(nothing.per_object[n:].sum())
    objects = float(nothing.swapins) - mixed
    if mixed > 0 and calibrate_to > objects:
        k_objects, k_mixed = 1.0, (calibrate_to - objects) / mixed
    else:
        k_objects = k_mixed = k

    def level(p: Any, apart: int) -> Any:
        weight = np.full(len(p.per_object), k_mixed)
        weight[:n] = k_objects
        weight[n:n + apart] = 1.0
        per = p.per_object * weight
        return replace(p, swapins=float(p.swapins - p.per_object.sum() + per.sum()),
                       per_object=per)

    return level, k_objects, k_mixed


def _tail_but_apart(lay: Layout, alpha: float) -> Any:
    """lay's views with by_model.with_tail(alpha) on every row but the sites kept apart. The
    tail is fitted to the kernel's run, whose heap holds the sites mixed; an apart row's curve
    comes from windows on the site's own arena (record --sites), the layout the plan's run
    holds it in, so it keeps its measured tail."""
    from objtier.plan import by_model

    first, k = lay.first_site_row, int(lay.apart.sum())

    def one(before, after):
        slope = after.tail_slope.copy()
        slope[first:first + k] = before.tail_slope[first:first + k]
        return replace(after, tail_slope=slope)

    fitted = by_model.with_tail(lay.views, alpha)
    if isinstance(fitted, list):
        return [one(b, a) for b, a in zip(lay.views, fitted)]
    return one(lay.views, fitted)


def kernel_swapins(rows: SiteRows, placed: ObjectTable, views: Any, page_bytes: int,
                   local_bytes: int, other_bytes: int) -> float:
    """The swap-ins predicted with nothing locked and every watched site's blocks mixed in
    the heap, as the kernel's run holds them: what a measured kernel run is to be held
    against."""
    from objtier.plan import by_model

    kernel, _, capacity = _kernel(placed, views, rows, other_bytes, local_bytes, page_bytes,
                                  None)
    return by_model.predicted(kernel.views, kernel.table, page_bytes, capacity,
                              np.zeros(len(kernel.table))).swapins


def views_duration(views: Any) -> float:
    """The run's length the views cover [ns] (a list: the sum of its slices)."""
    return sum(v.duration_ns for v in views) if isinstance(views, list) else views.duration_ns
