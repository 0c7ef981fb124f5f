"""The plan pipeline: recordings -> object table -> placement -> plan (plan.json + plan.txt).

Every command that turns recordings into a plan goes through here, in two calls:

    profile = read_recordings(paths, phases=...)         # recordings -> object table
    result = make_plan(profile, algo, budget, ...)        # -> placement(s) -> plan document
    write_plan_files(result.plan, "plan.json", "plan.txt")

Between the two the caller decides the fast-tier budget, which each caller measures in its own
way: `objtier plan` as a size or a percentage of the profile's footprint
(profile.footprint_bytes), `compare --tier swap` as the cgroup's local memory less an mlock
margin that `fit` fits to the placement, `compare --tier numa` as a share of the fast nodes'
free memory. An object table read from a file (`objtier plan objects.parquet`) is a Profile
without recordings.

Phases: with phases, the program's phases are merged (plan.merge_phases) and every surviving
phase gets its own placement of the objects by its own accesses; the algorithms that rank
pages (plan.NEEDS_PAGE_SAMPLES) rank a split object's pages in one order for every phase.
Backfill: without it every placement stops at the first object that does not fit whole
(plan.without_backfill).

plan/ stays pure (no trace, no files); this module reads recordings through trace/ and
analysis/ and hands plan/ arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import pyarrow as pa

from objtier import plan as planner
from objtier.errors import TraceError, UsageError
from objtier.outputs import write_private
from objtier.plan.per_phase import DEFAULT_MIN_DURATION_NS, DEFAULT_SIMILARITY
from objtier.trace.columns import DEFAULT_PAGE_BYTES, page_bytes, trace_end_ns

#: fit(place, unlocked) -> (fast bytes, placement): chooses the budget a placement is made
#: for. place(fast_bytes) places the objects; unlocked(placement) is the room [bytes] the
#: objects it leaves unlocked need while its plan is in force (plan.unlocked_live_bytes).
Fit = Callable[[Callable[[int], planner.Placement], Callable[[planner.Placement], int]],
               tuple[int, planner.Placement]]


@dataclass
class Profile:
    """What a plan is made from: an object table and what the recordings add to it."""

    table: pa.Table                      # analysis.objects columns, one row per object
    page_bytes: int = DEFAULT_PAGE_BYTES  # the recording's page size [bytes]
    exe: str | None = None               # the program's binary, None when unknown
    source: str = ""                     # what the plan says it was made from
    traces: list = field(default_factory=list)  # the recordings, opened; [0] is the table's
    executions: pa.Table | None = None   # phase, parent, start_ns, end_ns (one row per run)
    phase_accesses: pa.Table | None = None  # phase, object, accesses (exclusive)

    @property
    def has_phases(self) -> bool:
        return self.executions is not None

    @cached_property
    def objects(self) -> planner.ObjectTable:
        return planner.object_table(self.table)

    def footprint_bytes(self, peak_bytes: int | None = None) -> int:
        """The footprint a percentage budget refers to (plan.footprint): peak_bytes if given,
        else the peak of live bytes, else the sum of object sizes."""
        objects = self.objects
        return planner.footprint(objects.size, objects.alloc_ns, objects.free_ns, peak_bytes)


@dataclass
class PlanResult:
    plan: dict[str, Any]                 # the plan document (plan.planfile)
    objects: planner.ObjectTable         # as placed (without lifetimes when asked)
    result: planner.Placement | planner.PhasePlacement
    placements: dict[str, planner.Placement]  # phase ("*" = the whole run) -> placement
    budget: planner.Budget               # the budget the plan was made for
    choice: Any = None                   # plan.by_model.Choice when the model chose, else None
    model_note: str | None = None        # why the model did not choose, when asked to; or what
                                         # it did with watched sites (plan.site_rows)


@dataclass(frozen=True)
class ModelMemory:
    """The memory the kernel model plans for [bytes]: the cgroup's limit, and what the program
    holds outside its tracked objects (it stays with the kernel and takes its room)."""

    local_bytes: int
    other_bytes: int
    cap_bytes: int | None = None   # the most to lock (a margin the user gave); None: derived
    footprint_bytes: int | None = None  # the program's footprint (bounds its objects' pages)
    calibrate_to: float | None = None   # a measured kernel run's swap-ins to fit the model to
    choose: bool = True   # False: keep the algorithm's placement, the model only predicts it


def fill_footprint(objects: planner.ObjectTable, live_share, present, room: float):
    """Which watched objects' pages the footprint holds (share per object, 0..1): when the
    watched objects' live bytes exceed the room the footprint leaves them, the room goes to
    the objects by falling density (sampled accesses per byte) — reserved and never-touched
    buffers, arenas mostly empty, have few or no samples and are left out — and the object at
    the boundary gets the rest. A uniform scaling instead shrank scipy CG's 96 MiB matrix to a
    fifth (751 MiB tracked against a 152 MiB footprint) and predicted no pressure at all."""
    import numpy as np

    size = objects.size.astype(np.float64)
    live = size * live_share * present
    if room <= 0 or live.sum() <= room:
        return present
    density = np.divide(objects.accesses, size, out=np.zeros(len(size)), where=size > 0)
    out = np.zeros(len(size))
    left = room
    for r in np.lexsort((-size, -density)).tolist():
        if present[r] <= 0 or live[r] <= 0:
            continue
        take = min(1.0, left / live[r])
        out[r] = present[r] * take
        left -= live[r] * take
        if left <= 0:
            break
    return out


def model_curves(profile: Profile, footprint_bytes: int | None = None,
                 other: int = 0, spans: list[tuple[int, int]] | None = None,
                 observed: Any = None):
    """The profile's touch-time curves for the kernel model (objtier.model.lru.Curves), or
    None with the reason when its recordings cannot give them.

    Which pages are ever resident: an object no scan window armed had no page resident when
    the scanner came (the scan covers every tracked object each pass; pageout arms only
    resident pages), so it counts as absent; the watched objects' pages are scaled so that
    with `other` they fill no more than the footprint (reserved mappings, never-touched
    buffers: tracked bytes can exceed what the program ever holds). spans: of the windows
    armed within them only (reuse_curves)."""
    import numpy as np

    from objtier.analysis.reuse_curves import reuse_curves
    from objtier.model import Curves

    if not profile.traces or not any(t.windows.num_rows for t in profile.traces):
        return None, ("the recordings have no scan windows (record with the pageout, fault or "
                      "wp sampler for the kernel model)")
    found = reuse_curves(profile.traces, spans, observed)
    if not found.known.any():
        return None, "no tracked object was watched by a scan window"
    present = found.known.astype(np.float64)
    if footprint_bytes:
        present = fill_footprint(profile.objects, found.live_share, present,
                                 max(0.0, float(footprint_bytes) - float(other)))
    return Curves(found.horizon_ns, found.share, found.tail_slope, found.live_share,
                  found.duration_ns, present), None


# The run as slices of about SLICE_NS of recorded time (at most MAX_SLICES): what is live and
# how it is re-used changes over a run (a generation phase's quick passes, then a solver's
# slower sweeps of its matrix), and one average of the two curves is concave where each is
# linear, which makes a lock of a swept object look like a loss. Measured (2026-12-01, scipy
# CG at 50 %, profiles from windows that stay open until touched): 1 view predicted 0.37 M
# swap-ins against the kernel's 1.08 M, 12 slices 1.02 M.
# Fitted to a measured kernel run that the default slicing under-predicts more than
# OVER_TRUST times, the model also tries the run cut into FINE_SLICES: the objects live in each
# slice are exact (allocation times), and a slice shorter than SLICE_NS / 2 takes the whole
# run's curves (its own windows, censored at its end, continue every partial sweep as a sweep).
# Whichever slicing predicts that run closer is used (_fitted_views). scipy CG recorded 0.71 s
# (one slice: its setup and its sweeps averaged) predicted 0 swap-ins at 70 % for a kernel run
# of 617 k, 8 slices 659 k. Tried on every program (suite of 2026-12-02 22:47), it also took
# the 8 slices where they were closer but over (hnswlib at 50 %: 2.2x over, declined; 2.26x
# with the default's plan in the suite before), so an over-prediction keeps the default.
SLICE_NS = 500_000_000
FINE_SLICES = 8
MAX_SLICES = 16
MIN_SLICE_ARMED = 32   # armed pages an object needs in a slice for a curve of the slice's own


def model_views(profile: Profile, footprint_bytes: int | None = None, other: int = 0,
                min_slices: int = 1):
    """(views, whole, None) or (None, None, why): the kernel model's view of the run as
    slices of about SLICE_NS, at least min_slices (each with the objects live in it and the
    curves of the windows armed in it; an object armed on fewer than MIN_SLICE_ARMED pages
    there, or any in a slice shorter than SLICE_NS / 2, keeps its whole-run curve), and the
    whole-run curves (model_curves)."""
    import numpy as np

    from objtier.analysis.reuse_curves import observations, sliced_curves
    from objtier.model import Curves

    # the recordings' windows and samples, mapped onto objects once for the whole run and
    # its slices
    observed = (observations(profile.traces)
                if profile.traces and any(t.windows.num_rows for t in profile.traces) else None)
    whole, why = model_curves(profile, footprint_bytes, other, observed=observed)
    if whole is None:
        return None, None, why
    slices = int(min(MAX_SLICES, max(min_slices, round(whole.duration_ns / SLICE_NS))))
    if slices == 1:
        return whole, whole, None
    curves_of_own = whole.duration_ns / slices >= SLICE_NS / 2
    views = []
    for found in sliced_curves(profile.traces, slices, MIN_SLICE_ARMED, observed):
        own = found.known & curves_of_own
        views.append(Curves(np.where(own, found.horizon_ns, whole.horizon_ns),
                            np.where(own[:, None], found.share, whole.share),
                            np.where(own, found.tail_slope, whole.tail_slope),
                            found.live_share, found.duration_ns, whole.present))
    return views, whole, None


def recorded_footprint(profile: Profile) -> int | None:
    """The program's footprint as the first recording saw it [bytes]: the peak of its resident
    plus swapped memory (proc.rss_bytes + proc.swap_bytes, the pageout sampler's pages in swap
    included); None without those counters."""
    import numpy as np

    from objtier.analysis.timeline import counter_series

    if not profile.traces:
        return None
    trace = profile.traces[0]
    series = counter_series(trace.counters, trace.start_ns)
    if "proc.rss_bytes" not in series:
        return None
    t, rss, _ = series["proc.rss_bytes"]
    if "proc.swap_bytes" in series:
        ts, swap, _ = series["proc.swap_bytes"]
        rss = rss + np.interp(t, ts, swap) if len(ts) else rss
    return int(rss.max()) if len(rss) else None


def other_bytes(footprint_bytes: int, objects: planner.ObjectTable, traces=()) -> int:
    """What the program holds outside its tracked objects [bytes]: the footprint less the
    peak of the objects' live bytes, and never less than the peak of the small blocks the
    recordings' sampled sites held (analysis.sites: an estimate; the median over the
    recordings that sampled sites) plus what the footprint holds beyond the recording's own
    anonymous memory (unseen_bytes), nor more than the footprint. Objects' requested sizes can
    exceed what they touch (scipy CG: 266 MiB tracked in a 152 MiB footprint), so the
    difference alone can say 0 for an interpreter that holds 12 MiB in small blocks."""
    import statistics

    from objtier.analysis.sites import has_sites, live_site_bytes

    peak = planner.peak_live_bytes(objects.size, objects.alloc_ns, objects.free_ns)
    outside = max(0, int(footprint_bytes) - int(peak))
    small = [live_site_bytes(t) for t in traces if has_sites(t)]
    known = int(statistics.median(small)) if small else 0
    outside = max(outside, known + unseen_bytes(footprint_bytes, traces))
    return min(outside, max(int(footprint_bytes), 0))


def unseen_bytes(footprint_bytes: int, traces=()) -> int:
    """What a measured footprint holds beyond the first recording's peak anonymous memory
    (proc.rss_anon_bytes + proc.swap_bytes) [bytes], 0 when it holds less or the recording has
    no such counters. Where the footprint is measured in the cgroup the program will run in,
    this is memory no object and no small block of the recording accounts for and that takes
    the objects' room all the same: kernel memory and page cache a cgroup v2 charges (scipy CG
    in the QEMU guest: 180 MiB measured against 152 MiB recorded on the host, 2026-12-02), or
    file pages the recording's VmRSS counted (a footprint from the recording itself)."""
    import numpy as np

    from objtier.analysis.timeline import counter_series

    if not traces:
        return 0
    trace = traces[0]
    series = counter_series(trace.counters, trace.start_ns)
    if "proc.rss_anon_bytes" not in series:
        return 0
    t, anon, _ = series["proc.rss_anon_bytes"]
    if not len(t):
        return 0
    held = anon.astype(np.float64)
    if "proc.swap_bytes" in series:
        ts, swap, _ = series["proc.swap_bytes"]
        if len(ts):
            held = held + np.interp(t, ts, swap)
    return max(0, int(footprint_bytes) - int(held.max()))


def trace_exe(trace: Any, table: Any) -> str | None:
    """The traced program: the exe of the process whose objects have the most accesses
    (a wrapper shell or launcher has few), else of the first process that names one."""
    processes = [p for p in getattr(trace, "processes", None) or [] if getattr(p, "exe", "")]
    if not processes:
        return None
    if "pid" in getattr(table, "column_names", ()) and len(processes) > 1:
        pid = table.column("pid").to_numpy(zero_copy_only=False)
        acc = table.column("accesses").to_numpy(zero_copy_only=False)
        by_pid = {p.pid: float(acc[pid == p.pid].sum()) for p in processes}
        return str(max(processes, key=lambda p: by_pid[p.pid]).exe)
    return str(processes[0].exe)


def _same_program(paths: list[Path], exe: str | None) -> list[Any]:
    """The further recordings, opened; each must have recorded the first one's program, exe
    (its objects are matched to the first's by allocation context, which another binary does
    not share)."""
    from objtier.analysis.objects import object_table
    from objtier.trace import open_trace

    traces = []
    for path in paths:
        trace = open_trace(path)
        other = trace_exe(trace, object_table(trace, labels=False))
        if exe and other and Path(other).name != Path(exe).name:
            raise UsageError(f"{path} recorded {other}, not {exe}: several recordings must be "
                             f"of one program")
        traces.append(trace)
    return traces


def read_recordings(paths: list[Path], *, phases: bool | None = False, exe: str | None = None,
                    min_phase_ns: int = DEFAULT_MIN_DURATION_NS,
                    similarity: float = DEFAULT_SIMILARITY) -> Profile:
    """The profile of one or more recordings of one program: the first one's object table
    (exact counts for a --sampler trace recording: objtier.objects_view), its page size, the program
    (exe, else the one the first recording names), and with phases (True; None: where the first recording has phase markers) its phase
    table and per-phase accesses. The further recordings only add samples per page
    (make_plan, for plan.NEEDS_PAGE_SAMPLES)."""
    from objtier.objects_view import objects_view
    from objtier.trace import open_trace

    trace = open_trace(paths[0])
    view = objects_view(trace)
    table = view.table
    if phases is None:
        phases = trace.phases.num_rows > 0
    executions = accesses = None
    if phases and view.exact:
        from objtier.exact.context_phases import phase_tables

        executions, accesses = phase_tables(trace, min_ns=min_phase_ns, similarity=similarity)
    elif phases:
        from objtier.analysis.phase_markers import phase_accesses, phase_table

        # in the table's unit (estimated touches for the fault sampler)
        accesses = phase_accesses(trace, table.column("accesses").to_numpy())
        executions = phase_table(trace)
    recorded = trace_exe(trace, table)
    traces = [trace] + _same_program([Path(p) for p in paths[1:]], recorded)
    if len(traces) > 1 and not view.exact:
        later = later_objects(table, traces[1:])
        if all(t.windows.num_rows for t in traces):
            table, accesses = pooled_estimates(table, traces, accesses, later)
        table = table.append_column("recurs", pa.array(recurring(table.num_rows, later)))
    return Profile(table, page_bytes(trace), exe or recorded, str(paths[0]), traces,
                   executions, accesses)


def later_objects(table: pa.Table, traces: list) -> list[tuple[pa.Table, Any]]:
    """For each of the further recordings: its object table and, for each of its objects, the
    row of the first recording's `table` with the same context key, occurrence and size (-1:
    none; analysis.page_samples.matched_rows). Read once for pooled_estimates and
    recurring."""
    from objtier.analysis.objects import object_table
    from objtier.analysis.page_samples import matched_rows

    out = []
    for trace in traces:
        mine = object_table(trace, labels=False)
        out.append((mine, matched_rows(table, mine)))
    return out


def recurring(n: int, later: list[tuple[pa.Table, Any]]) -> Any:
    """For each of the first recording's n objects, whether every further recording made an
    object of the same context key, occurrence and size (bool array; `later`:
    later_objects). A plan names an
    object by those; one that a recording did not make again may be missing from the run the
    plan is for, and a lock the model counted on is then never made. Seen on DuckDB at 70 %
    (suite of 2026-12-03): the plan locked 9 MiB, 7 MiB of it objects found in 1 or 2 of the
    4 recordings; the run locked the 2 MiB found in all 4 and swapped in 1.28x the kernel
    arm's pages (0.89x its speed)."""
    import numpy as np

    found = np.ones(n, dtype=bool)
    for _, rows in later:
        seen = np.zeros(n, dtype=bool)
        seen[rows[rows >= 0]] = True
        found &= seen
    return found


def pooled_estimates(table: pa.Table, traces: list, phase_accesses: pa.Table | None,
                     later: list[tuple[pa.Table, Any]]) -> tuple[pa.Table, pa.Table | None]:
    """The first recording's object table (and per-phase accesses, if given) with each
    object's accesses the mean of its estimates over the recordings that watched it
    (later: later_objects of traces[1:]).

    For the fault sampler (recordings with WINDOW records) an object's accesses are estimated
    touches, from the windows that armed its pages; a short run arms few windows, and an
    object no window armed gets 0 — unobserved, not cold. Seen on BC (Kronecker, scale 18, a
    0.2-0.5 s run): each recording armed 5-7 windows, 2-3 of the 8 objects none, and which
    ones changed from one recording to the next, so a plan from the first recording alone
    left arrays that every step reads unlocked as "cold" and locked a tail of the edge array
    instead (docs/history/benchmarks-2026-11-27-details.md). Objects are matched to the
    first's by context key, occurrence and size (as merged_page_samples does); an object
    watched by no recording keeps 0."""
    import numpy as np

    n = table.num_rows
    total = np.zeros(n)
    count = np.zeros(n)
    per_phase: dict[tuple[str, int], float] = {}
    for k, trace in enumerate(traces):
        mine, rows = (table, np.arange(n, dtype=np.int64)) if k == 0 else later[k - 1]
        acc = mine.column("accesses").to_numpy(zero_copy_only=False).astype(np.float64)
        watched = mine.column("watched_s").to_numpy(zero_copy_only=False) > 0
        ok = (rows >= 0) & watched
        np.add.at(total, rows[ok], acc[ok])
        np.add.at(count, rows[ok], 1.0)
        if phase_accesses is not None:
            from objtier.analysis.phase_markers import phase_accesses as accesses_by_phase

            got = phase_accesses if k == 0 else accesses_by_phase(trace, acc)
            for name, obj, value in zip(got.column("phase").to_pylist(),
                                        got.column("object").to_pylist(),
                                        got.column("accesses").to_pylist()):
                row = int(rows[obj])
                if row >= 0 and watched[obj]:
                    per_phase[(name, row)] = per_phase.get((name, row), 0.0) + value
    mean = np.divide(total, count, out=np.zeros(n), where=count > 0)
    size = table.column("size").to_numpy(zero_copy_only=False).astype(np.float64)
    density = np.divide(mean, size / float(1 << 20), out=np.zeros(n), where=size > 0)
    table = table.set_column(table.schema.get_field_index("accesses"), "accesses",
                             pa.array(mean))
    table = table.set_column(table.schema.get_field_index("density"), "density",
                             pa.array(density))
    if phase_accesses is not None:
        keys = sorted(per_phase)
        phase_accesses = pa.table({
            "phase": pa.array([p for p, _ in keys], pa.string()),
            "object": pa.array([r for _, r in keys], pa.int64()),
            "accesses": pa.array([per_phase[key] / count[key[1]] for key in keys],
                                 pa.float64())})
    return table, phase_accesses


def make_plan(profile: Profile, algo: str, budget: planner.Budget, *,
              phases: bool = False, backfill: bool = True, lifetimes: bool = True,
              page_bytes: int | None = None, params: dict[str, Any] | None = None,
              min_phase_ns: int = DEFAULT_MIN_DURATION_NS,
              similarity: float = DEFAULT_SIMILARITY,
              hint_budget: int | None = None, fit: Fit | None = None,
              source: str | None = None, processes: Sequence[Any] | None = None,
              per_rank: bool = False, identify_binary: bool = True,
              memory: ModelMemory | None = None) -> PlanResult:
    """Place the profile's objects with algorithm `algo` for budget.bytes of fast memory (per
    phase with phases) and build the plan document.

    page_bytes: the placement's granularity (default: the profile's); params: the algorithm's
    own (alpha, beta, max_cells); lifetimes False: every object counts against the budget as
    if all were live at once. fit (see Fit): each placement's budget is chosen by fit within
    budget.bytes, and the plan's budget is the largest chosen (phases run one at a time).
    processes (objtier.analysis.processes rows of a multi-process recording): one plan section
    per program, or per rank with per_rank (plan.program_sections); identify_binary False:
    the plan names no binary (a launcher's, when its children have sections).
    memory: the kernel model chooses the whole run's placement among candidates (locking
    nothing, the algorithm's placement, spill, the model's own; objtier.plan.by_model) for
    this memory; with phases, or without scan windows, the algorithm's placement stands and
    model_note says why."""
    objects = profile.objects
    page = page_bytes or profile.page_bytes
    params = dict(params or {})
    needs_pages = algo in planner.NEEDS_PAGE_SAMPLES
    if needs_pages:
        if not profile.traces:
            raise UsageError(f"--algo {algo} needs a recording (samples per page), not an "
                             f"object table")
        params["backfill"] = backfill
    if phases and profile.executions is None:
        raise TraceError(f"{profile.source} has no phases")
    placed = objects if lifetimes else replace(objects, alloc_ns=None, free_ns=None)
    merge = None
    if phases:
        merge = planner.merge_phases(
            placed, planner.phase_table(profile.executions, profile.phase_accesses),
            min_phase_ns, similarity, hint_budget)
    if needs_pages:
        from objtier.analysis.page_samples import merged_page_samples, phase_page_order

        # every phase's plan ranks a split object's pages in one order
        params["page_samples"] = (phase_page_order(profile.traces, merge) if merge
                                  else merged_page_samples(profile.traces))
    algorithm = planner.algorithm(algo)

    def placer(view: planner.ObjectTable) -> Callable[[int], planner.Placement]:
        def place(fast_bytes: int) -> planner.Placement:
            placement = algorithm(view, fast_bytes, page, **params)
            return placement if backfill else planner.without_backfill(view, placement)
        return place

    limits: dict[str, int] = {}
    placements: dict[str, planner.Placement] = {}
    choice = model_note = None
    if merge is None:
        place = placer(placed)
        if fit is None:
            limits[planner.ROOT], placements[planner.ROOT] = budget.bytes, place(budget.bytes)
        else:
            limits[planner.ROOT], placements[planner.ROOT] = fit(place,
                                                                 planner.unlocked_live_bytes)
        if memory is not None:
            choice, model_note = _model_choice(profile, placed, page, memory,
                                               limits[planner.ROOT], placements[planner.ROOT])
            if choice is not None:
                limits[planner.ROOT], placements[planner.ROOT] = (choice.limit_bytes,
                                                                  choice.placement)
            elif memory.choose and model_note and model_note.startswith((BLIND, UNTRUSTED)):
                placements[planner.ROOT] = _nothing(placed, page, limits[planner.ROOT],
                                                    model_note)
        result: Any = placements[planner.ROOT]
    else:
        spans = (planner.phase_spans(merge, profile.executions,
                                     trace_end_ns(profile.traces[0]) if profile.traces else None)
                 if fit is not None else {})
        for name in merge.survivors():
            place = placer(replace(placed, accesses=merge.vectors[name]))
            if fit is None:
                limits[name], placements[name] = budget.bytes, place(budget.bytes)
            else:
                limits[name], placements[name] = fit(
                    place, lambda p, n=name: planner.unlocked_live_bytes(p, objects, spans[n]))
        result = planner.PhasePlacement(merge=merge, placements=placements)
        if memory is not None:
            whole = placer(placed)
            limit0, rules0 = ((budget.bytes, whole(budget.bytes)) if fit is None
                              else fit(whole, planner.unlocked_live_bytes))
            choice, model_note = _model_choice(profile, placed, page, memory, limit0, rules0)
            phased = (_phase_prediction(profile, merge, placements, placed, page, memory)
                      if choice is not None else None)
            if choice is not None and (phased is None or choice.chosen.swapins
                                       < phased * (1.0 - PHASE_TIE)):
                model_note = (None if phased is None else
                              f"one plan for the whole run: {choice.chosen.swapins:,.0f} "
                              f"swap-ins predicted against {phased:,.0f} with one plan per "
                              f"phase (estimated)")
                merge = None
                limits = {planner.ROOT: choice.limit_bytes}
                placements = {planner.ROOT: choice.placement}
                result = choice.placement
            elif choice is not None:
                choice = replace(choice, name="per-phase", placement=None,
                                 limit_bytes=max(limits.values()),
                                 chosen=_as_prediction(phased),
                                 predictions={**choice.predictions, "per-phase": phased})
    if fit is not None:
        limit = max(limits.values())
        foot = budget.footprint_bytes
        budget = planner.Budget(limit, str(limit),
                                round(100.0 * limit / foot, 2) if foot else None, foot)
    sections = (planner.program_sections(profile.table, placed, processes, per_rank)
                if processes is not None else None)
    binary = (planner.identity(profile.exe) if profile.exe and (identify_binary or not sections)
              else None)
    plan = planner.build_plan(placed, result, budget, binary,
                              source=profile.source if source is None else source,
                              sections=sections)
    if choice is not None:
        folio_note = _folios_by_prediction(plan, placed, choice.chosen.per_object)
        if folio_note:
            model_note = f"{model_note}; {folio_note}" if model_note else folio_note
        plan["model"] = model_section(choice)
        if model_note:
            plan["model"]["note"] = model_note
        if choice.sites:
            plan["sites"] = choice.sites
    elif model_note:
        # the model declined to choose what to lock (its kernel run was too far off, or the
        # windows saw too little): with nothing locked, no folios named without it either
        locks_nothing = all(s.get("fast_bytes", 0) == 0 for s in plan.get("summary", []))
        folio_note = (_folios_by_prediction(plan, placed, None)
                      if locks_nothing and memory is not None else None)
        if folio_note:
            model_note += f"; {folio_note}"
        plan["model"] = {"chosen": None, "why_not": model_note}
    return PlanResult(plan, placed, result, placements, budget, choice, model_note)


MODEL_WHAT = ("estimated: swap-ins over one run predicted by the kernel model (LRU by Che's "
              "approximation over touch-time curves from the profile's scan windows; "
              "objtier.model.lru), for cgroup v1's LRU and MGLRU alike")


def _folios_by_prediction(plan: dict[str, Any], placed: Any,
                          per_object: Any) -> str | None:
    """Drops the plan's large-folio records of objects the model predicts too few of the
    plan's swap-ins for them to matter (folios.worth_naming; per_object: the plan's predicted
    swap-ins per object of `placed`), or all of them with no prediction (None); one line on
    what it dropped."""
    from objtier.plan.folios import MIN_SHARE, worth_naming

    records = plan.get("large_folios") or []
    if records and per_object is None:
        plan["large_folios"] = []
        return f"large folios: {len(records)} swept object(s) not named without a prediction"
    if not records or len(per_object) != len(placed):
        return None
    kept, dropped = worth_naming(records, placed, per_object)
    if not dropped:
        return None
    plan["large_folios"] = kept
    return (f"large folios: {len(dropped)} swept object(s) not named, each predicted under "
            f"{MIN_SHARE:.0%} of the plan's swap-ins (estimated)")


def model_section(choice: Any) -> dict[str, Any]:
    """The plan document's "model" section: what the model predicted for each candidate."""
    return {"chosen": choice.name, "what": MODEL_WHAT,
            "local_bytes": int(choice.capacity_bytes + choice.other_bytes),
            "other_bytes": int(choice.other_bytes),
            "lock_limit_bytes": int(choice.limit_bytes),
            "predicted_swapins": {"kernel": round(choice.nothing.swapins),
                                  "plan": round(choice.chosen.swapins)},
            "candidates": {k: round(v) for k, v in choice.predictions.items()},
            "per_object": {"kernel": [round(float(v)) for v in choice.nothing.per_object],
                           "plan": [round(float(v)) for v in choice.chosen.per_object]},
            **({"calibration": choice.calibration} if choice.calibration else {})}


SPILL_SHARES = (0.25, 0.5, 0.75, 1.0)
# the model plans only when the profile's windows watched at least this share of what the
# program holds in its tracked objects: on scipy CG (2026-12-01) four profiles armed no window
# on its 96 MiB matrix (allocated after a pass over 700 MiB of tracked arenas began), and the
# model, blind to it, predicted no swap-ins where the kernel took 1.09 M. Blind, it locks
# nothing: falling back to the rules' plan then ran CG at 70 % 0.51x and igraph 0.82-0.84x
# the kernel (3 interleaved repeats each, 2026-12-01 21:53), locking nothing about 1.0x.
MIN_WATCHED_SHARE = 0.5
BLIND = "the profiles' scan windows watched"   # how a blind model's note begins
# A model that predicts a measured kernel run's swap-ins this many times over (and by more
# than 500) is not trusted to choose a lock set: nothing is locked. Measured (2026-12-02): xz
# -6 at 70 % local, 11.7 M predicted against 0.71 M measured; its plan locked 53 of 61 MiB and
# ran 0.43x the kernel. The largest over-prediction whose plan paid was K-means, +63 % (1.66x).
OVER_TRUST = 2.0
UNTRUSTED = "the model predicted"   # how an untrusted model's note begins


def watched_too_little(profile: Profile, curves: Any, memory: ModelMemory) -> str | None:
    """Why the model must not plan from these windows (they watched too little of the
    footprint), or None."""
    if not memory.footprint_bytes:
        return None
    held = max(1, memory.footprint_bytes - memory.other_bytes)
    size = profile.objects.size.astype(float)
    watched = float((size * curves.live_share * (curves.horizon_ns > 0)).sum())
    if watched >= MIN_WATCHED_SHARE * held:
        return None
    return (f"{BLIND} {watched / 2**20:.0f} MiB of the "
            f"{held / 2**20:.0f} MiB the program holds in tracked objects (at least "
            f"{MIN_WATCHED_SHARE:.0%} needed): the model would plan blind, so nothing is "
            f"locked (profile a longer run, or more profiles; a named --algo is kept)")


def _nothing(placed: planner.ObjectTable, page: int, limit: int, why: str):
    """The placement that locks nothing, each object's reason saying why."""
    import numpy as np

    from objtier.plan import by_model

    nothing = by_model.as_placement(placed, np.zeros(len(placed)), page, limit, "")
    return replace(nothing, reason=np.array([f"left to the kernel: {why}"] * len(placed),
                                            dtype=object))


PHASE_TIE = 0.03   # one plan for the run must predict this share fewer swap-ins than per-phase


def _as_prediction(swapins: float):
    import numpy as np

    from objtier.model import Prediction

    return Prediction(float(swapins), np.zeros(0), float("nan"), 0.0, 0.0)


def _phase_prediction(profile: Profile, merge: Any, placements: dict[str, planner.Placement],
                      placed: planner.ObjectTable, page: int, memory: ModelMemory
                      ) -> float | None:
    """Swap-ins the kernel model predicts for one plan per phase: each surviving phase's
    placement against the curves of the first recording's windows armed while its plan is in
    force (the switches' own cost not counted). None without curves for a phase."""
    from objtier.plan import by_model

    spans = planner.phase_spans(merge, profile.executions, trace_end_ns(profile.traces[0]))
    capacity_pages = float(max(0, memory.local_bytes - memory.other_bytes) // page)
    total = 0.0
    for name, placement in placements.items():
        curves, _ = model_curves(profile, memory.footprint_bytes, memory.other_bytes,
                                 spans.get(name, []))
        if curves is None:
            continue            # no window armed while this plan was in force
        if len(curves.horizon_ns) != len(placed):
            return None
        total += by_model.predicted(curves, placed, page, capacity_pages,
                                    by_model.locked_pages(placement)).swapins
    return total


def _fitted_views(profile: Profile, memory: ModelMemory, views: Any, judged: float,
                  measured: float, kernel_run: Callable[[Any], float]):
    """(views, raw views, their kernel-run prediction, slicing): the run's default slicing,
    or FINE_SLICES where the default predicts the measured kernel run below 1 / OVER_TRUST of
    it and the fine slicing predicts it closer (by the ratio); slicing is "default" or the
    number of fine slices."""
    import math

    if judged * OVER_TRUST >= measured:
        return views, views, judged, "default"
    fine, _, _ = model_views(profile, memory.footprint_bytes, memory.other_bytes,
                             min_slices=FINE_SLICES)
    if fine is None:
        return views, views, judged, "default"
    fine_judged = kernel_run(fine)

    def miss(value: float) -> float:
        return abs(math.log(max(value, 1.0) / max(measured, 1.0)))

    if miss(fine_judged) < miss(judged):
        return fine, fine, fine_judged, FINE_SLICES
    return views, views, judged, "default"


def _model_choice(profile: Profile, placed: planner.ObjectTable, page: int,
                  memory: ModelMemory, limit: int, rules: planner.Placement):
    """(plan.by_model.Choice, None), or (None, why the model cannot choose). With
    memory.calibrate_to the model is first fitted to that measured kernel run
    (by_model.calibrate) and the choice records the fit."""
    import numpy as np

    from objtier.plan import by_model

    curves, whole, why = model_views(profile, memory.footprint_bytes, memory.other_bytes)
    if curves is None:
        return None, why
    blind = watched_too_little(profile, whole, memory)
    if blind:
        return None, blind
    if len(whole.horizon_ns) != len(placed):
        return None, "the object table does not come from the first recording"
    raw = curves   # before any fit: the site rows are fitted with the objects again
    rows = None    # watched sites as rows of their own (plan.site_rows), read once
    if memory.choose and profile.traces:
        from objtier.plan.site_rows import site_rows

        rows = site_rows(profile.traces)
    calibration = None
    if memory.calibrate_to is not None:
        capacity_pages = float(max(0, memory.local_bytes - memory.other_bytes) // page)
        measured = float(memory.calibrate_to)

        def kernel_run(views) -> float:
            """The kernel run's prediction; with site rows, of the whole footprint."""
            if rows is None:
                return by_model.predicted(views, placed, page, capacity_pages,
                                          np.zeros(len(placed))).swapins
            from objtier.plan.site_rows import kernel_swapins

            return kernel_swapins(rows, placed, views, page, memory.local_bytes,
                                  memory.other_bytes)

        judged = kernel_run(curves)
        curves, raw, judged, slicing = _fitted_views(profile, memory, curves, judged, measured,
                                                     kernel_run)
        before = by_model.predicted(curves, placed, page, capacity_pages,
                                    np.zeros(len(placed))).swapins
        if judged > OVER_TRUST * measured and judged - measured > 500:
            return None, (f"{UNTRUSTED} {judged:,.0f} swap-ins for the kernel run that took "
                          f"{measured:,.0f} ({judged / max(measured, 1.0):.1f}x): too far off "
                          f"to choose what to lock, so nothing is locked")
        alpha, curves = by_model.calibrate(curves, placed, page, capacity_pages,
                                           memory.calibrate_to)
        calibration = {"to_swapins": round(memory.calibrate_to), "alpha": round(alpha, 4),
                       "kernel_before": round(before), "kernel_judged": round(judged),
                       "slices": slicing}
    cap = by_model.lock_cap(memory.local_bytes, memory.other_bytes, memory.cap_bytes)
    # spill's fill at a share of the cap: the greedy set grows one chunk at a time and can
    # stop where one chunk alone gains nothing but a larger lock would
    extra = [(f"spill {share:.0%}" if share < 1 else "spill", int(cap * share),
              planner.spill(placed, int(cap * share), page))
             for share in SPILL_SHARES if int(cap * share) >= page]
    if not memory.choose:
        extra = []
    choice = by_model.choose(placed, curves, page, memory.local_bytes, memory.other_bytes,
                             (rules.algorithm, limit, rules), extra, cap,
                             keep_rules=not memory.choose)
    note = None
    if rows is not None:
        from objtier.plan.site_rows import with_site_locks

        choice, note = with_site_locks(choice, rows, placed, raw, page,
                                       memory.local_bytes, memory.other_bytes,
                                       memory.cap_bytes, memory.calibrate_to)
        if calibration and choice.calibration:
            calibration.update(choice.calibration)
    if calibration:
        choice, scale = by_model.scaled(choice, measured)
        if scale != 1.0:
            calibration["scale"] = round(scale, 4)
    return (replace(choice, calibration=calibration) if calibration else choice), note


def write_plan_files(plan: dict[str, Any], json_path: str | Path,
                     text_path: str | Path | None = None) -> None:
    """plan.json (plan.write_plan) and, if asked, the text form the runtime reads
    (OBJTIER_PLAN), both mode 0600."""
    planner.write_plan(plan, json_path)
    if text_path is not None:
        write_private(text_path, planner.to_text(plan), "text plan")
