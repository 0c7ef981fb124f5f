"""Running a program with a plan enforced by the runtime: its environment, the mlock budget,
and the checks before and after (wrong binary, a plan that matches nothing).

The runtime applies a plan when started with OBJTIER_PLAN=<text form> and OBJTIER_SAMPLER=none:
it mlocks the planned-fast part of each matching object at allocation, never more in total than
OBJTIER_MLOCK_LIMIT bytes, and MADV_COLDs the planned-slow ones. With OBJTIER_OUTPUT set it
writes one PLACEMENT record per action to the trace. This module only prepares and checks; the
enforcement itself is the runtime's.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from objtier.errors import UsageError
from objtier.native import runtime_library

MIB = 1 << 20
#: Smallest mlock safety margin: the cgroup's memory that is not locked must still hold the
#: program's text, stack, libraries, runtime tables and page cache it touches [bytes].
MIN_MARGIN_BYTES = 32 * MIB
MARGIN_FRACTION = 0.10          # default margin = max(10% of local, 32 MiB)
FITTED_MIN_MARGIN_BYTES = 8 * MIB  # compare's fitted margin is never smaller
#: compare's fitted margin: room beyond the wholly unlocked objects, for the program's text,
#: stack, page tables and the pages of a split object's tail it is reading [bytes]
FITTED_SLACK_BYTES = 4 * MIB
DEFAULT_MIN_SIZE = 128 << 10    # the recorder's default --min-size [bytes]
DEFAULT_STACK_DEPTH = 8         # must equal the recording's: context keys hash the frames
#: runtime settings of every run that measures rather than records (a plan enforced, or a
#: NUMA arm read for residency): no access sampler and no sampled small blocks. A recording
#: paces the small blocks' stack captures to its --overhead; these runs have none, and unpaced
#: the captures cost DuckDB's TPC-H queries 7-10 % (docs/runtime.md).
NO_SAMPLING = {"sampler": "none", "site_period": 0}


def plan_stack_depth(plan: dict[str, Any], given: int | None) -> tuple[int, str | None]:
    """(stack depth to run a plan with, a warning or None): --stack-depth when given, else
    the depth the plan's recording was made with (its `recording`), else the default."""
    recorded = (plan.get("recording") or {}).get("stack_depth")
    if given is None:
        return int(recorded or DEFAULT_STACK_DEPTH), None
    if recorded is not None and int(recorded) != given:
        return given, (f"--stack-depth {given} differs from the {recorded} frames the plan's "
                       f"recording was made with: no allocation context will match")
    return given, None

_PCT = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*%\s*$")
_NODES = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


def runtime_supports_plans(library: Path | None = None) -> bool:
    """True when the built runtime reads OBJTIER_PLAN (it names the variable in its binary)."""
    path = library or runtime_library()
    try:
        data = Path(path).read_bytes()
    except OSError:
        return False
    return b"OBJTIER_PLAN" in data


def default_margin(local_bytes: int) -> int:
    """The mlock safety margin for a cgroup limit of local_bytes: max(10%, 32 MiB) [bytes]."""
    return max(int(local_bytes * MARGIN_FRACTION), MIN_MARGIN_BYTES)


def fitted_margin_cap(local_bytes: int) -> int:
    """The largest fitted margin [bytes]: the default margin, but at most half of local memory
    (never below FITTED_MIN_MARGIN_BYTES), so that a small program (GUPS's 32 MiB table at 70 %:
    22 MiB local, under the default's 32 MiB) still gets a plan. Equal to the default from 64
    MiB of local memory up."""
    return min(default_margin(local_bytes), max(FITTED_MIN_MARGIN_BYTES, local_bytes // 2))


def fitted_margin(local_bytes: int, unlocked_object_bytes: int) -> int:
    """`compare`'s margin when none is given [bytes]: room for the objects a plan leaves wholly
    unlocked (unsampled ones included: the profile may have missed them) plus
    FITTED_SLACK_BYTES, at least FITTED_MIN_MARGIN_BYTES and at most fitted_margin_cap. The
    tail of a split object is not counted: it is swept, and a locked MiB of it saves more than
    a free one. Measured (docs/benchmarks.md, third series): an 8 MiB margin raised CC's
    speed-up from 1.56x to 2.0x and killed BC, whose 28 MiB of per-source arrays the profile had
    barely sampled; a margin of exactly the unlocked objects' 8 MiB killed CC in its
    verification, which fills an 8 MiB array while reading the whole graph (docs/benchmarks.md,
    "Graph set with ranked pages after that")."""
    return min(fitted_margin_cap(local_bytes),
               max(FITTED_MIN_MARGIN_BYTES, unlocked_object_bytes + FITTED_SLACK_BYTES))


def fit_margin(local_bytes: int, default_bytes: int, place: Callable[[int], Any],
               unlocked: Callable[[Any], int] | None = None) -> tuple[int, int, Any]:
    """(mlock limit, margin, placement) with the margin fitted to the placement [bytes]:
    place(limit) places the objects for a limit; unlocked(placement) is the room its unlocked
    objects need (default: every object the placement leaves wholly slow; for one phase's
    placement, those live while its plan is in force: plan.unlocked_live_bytes with spans).
    A first placement with the default margin; if the objects it leaves wholly unlocked need
    less room (fitted_margin), the margin shrinks to that and the objects are placed again.
    The larger budget may leave other objects wholly unlocked, so the margin then grows until
    the final placement's unlocked objects have their room; it only grows, and fitted_margin
    never exceeds the default, so this ends."""
    from objtier.plan import unlocked_live_bytes

    unlocked = unlocked or unlocked_live_bytes

    def need(placement: Any) -> int:
        return fitted_margin(local_bytes, unlocked(placement))

    margin = default_bytes
    placement = place(local_bytes - margin)
    if need(placement) < margin:
        margin = need(placement)
        placement = place(local_bytes - margin)
        while need(placement) > margin:
            margin = need(placement)
            placement = place(local_bytes - margin)
    return local_bytes - margin, margin, placement


def parse_local(text: str, footprint_bytes: int | None) -> int:
    """--local: a size ("512M") or a percentage of footprint_bytes ("70%") -> bytes (> 0)."""
    from objtier.units import parse_size

    match = _PCT.match(str(text))
    if match:
        percent = float(match.group(1))
        if not 0 < percent <= 100:
            raise UsageError(f"bad --local {text!r}: a percentage must be in (0, 100]")
        if not footprint_bytes:
            raise UsageError(f"--local {text} is relative but the footprint is unknown; "
                             f"give a size such as 512M")
        return int(footprint_bytes * percent / 100.0)
    try:
        size = parse_size(str(text))
    except UsageError:
        raise UsageError(f"bad --local {text!r}: expected a size (512M, 8G) or a percentage "
                         f"(70%)") from None
    if size <= 0:
        raise UsageError(f"bad --local {text!r}: must be at least one byte")
    return size


def mlock_limit(local_bytes: int, margin_text: str | None,
                fitted: bool = False) -> tuple[int, int]:
    """(mlock limit, margin) in bytes for a cgroup limit; UsageError when nothing is left.
    Without margin_text the margin is the default one, or with fitted (compare's fitted
    margin, whose first placement uses it) fitted_margin_cap."""
    from objtier.units import parse_size

    if margin_text is None:
        margin = fitted_margin_cap(local_bytes) if fitted else default_margin(local_bytes)
    else:
        margin = parse_size(margin_text, "--mlock-margin")
    limit = local_bytes - margin
    if limit <= 0:
        raise UsageError(f"local memory {local_bytes >> 20} MiB leaves nothing to lock after the "
                         f"{margin >> 20} MiB safety margin; raise --local or lower "
                         f"--mlock-margin")
    return limit, margin


def check_nodes(text: str | None, what: str) -> str | None:
    """A node list such as "0", "0-1,3" (the kernel's cpulist syntax), or None."""
    if text is None:
        return None
    compact = text.replace(" ", "")
    if not _NODES.match(compact):
        raise UsageError(f"bad {what} {text!r}: expected node numbers such as 0 or 0-1,3")
    return compact


def plan_min_size(plan: dict[str, Any]) -> int:
    """Allocation size from which the runtime must track objects to see every planned one."""
    sizes = [int(e["size_min"]) for e in plan.get("entries", [])]
    if not sizes:   # the recording's own, where the plan says
        return int((plan.get("recording") or {}).get("min_size", DEFAULT_MIN_SIZE))
    return max(1, min(sizes))


DEFAULT_LARGE_FOLIO = "16K"  # compare/run --large-folio: measured on the graph set (benchmarks.md)


def parse_large_folio(text: str) -> int | None:
    """Bytes of --large-folio SIZE (a power of two >= 8 KiB), or None for "off"."""
    from objtier.tiers.swap import large_folio_size_problem
    from objtier.units import parse_size

    if str(text).strip().lower() == "off":
        return None
    size = parse_size(text, "--large-folio size")
    problem = large_folio_size_problem(size)
    if problem:
        raise UsageError(f"--large-folio {text}: {problem} (or off)")
    return size


@dataclass
class PlanRun:
    """The runtime settings of one enforced run (values are strings, as in the environment)."""

    plan_text: Path                  # the plan's text form
    mlock_limit: int                 # most bytes the runtime may mlock
    min_size: int = DEFAULT_MIN_SIZE
    stack_depth: int = DEFAULT_STACK_DEPTH
    output: Path | None = None       # trace directory for PLACEMENT records, or None
    tier: str = "swap"               # swap | numa
    fast_nodes: str | None = None
    slow_nodes: str | None = None
    pressure_guard: bool = True      # swap: MADV_COLD slow pages when the inactive list runs dry
    large_folios: bool = True        # swap: MADV_HUGEPAGE the plan's swept objects' slow runs
    follow_forks: bool = False       # the plan applies in child processes too

    @property
    def arena_stats(self) -> Path | None:
        """Where the runtime writes its arena counts (a plan's sites), in the trace dir; None
        where the user's own OBJTIER_ARENA_STATS names a file (it is kept, and not read)."""
        if self.output is None or os.environ.get("OBJTIER_ARENA_STATS"):
            return None
        return arena_stats_path(self.output)

    def settings(self) -> dict[str, str]:
        """The run records its objects and placements only (NO_SAMPLING)."""
        from objtier.runtime_settings import runtime_env

        return runtime_env(
            **NO_SAMPLING, plan=self.plan_text.resolve(), mlock_limit=self.mlock_limit,
            min_size=self.min_size, stack_depth=self.stack_depth, tier=self.tier,
            output=self.output.resolve() if self.output is not None else None,
            fast_nodes=self.fast_nodes or None, slow_nodes=self.slow_nodes or None,
            pressure_ms=None if self.pressure_guard else 0,
            large_folios=None if self.large_folios else 0,
            follow_forks=1 if self.follow_forks else None,
            arena_stats=self.arena_stats.resolve() if self.arena_stats else None)


def arena_stats_path(trace_dir: Path) -> Path:
    """The arena counts file of a run whose trace goes to trace_dir: inside it (a spool lands
    it with the trace; the trace reader reads *.otr only)."""
    return Path(trace_dir) / "arena-stats.txt"


def site_locked_bytes(trace_dir: Path) -> int:
    """Bytes of the plan's sites' arena chunks the runtime mlocked, over the run's processes
    (its OBJTIER_ARENA_STATS lines, `locked_bytes=N`); 0 when it wrote none."""
    try:
        text = arena_stats_path(trace_dir).read_text()
    except OSError:
        return 0
    total = 0
    for line in text.splitlines():
        for field in line.split():
            key, _, value = field.partition("=")
            if key == "locked_bytes" and value.isdigit():
                total += int(value)
    return total


def locks_something(plan: dict[str, Any]) -> bool:
    """True when some entry keeps an object, or part of one, in fast memory, or a site's
    arena is kept fast (plan.sites). A plan that locks
    nothing runs without the pressure guard: the guard stocks the inactive list for reclaim
    when locked pages shrink what reclaim may take, and with nothing locked its MADV_COLD only
    ages the pages the kernel would age anyway, sooner (ptrchase at 50 %: 4.52 s with it, 2.55
    s without, 2.45 s the kernel; docs/benchmarks.md)."""
    return (any(e.get("tier") in ("fast", "split") for e in plan.get("entries", []))
            or any(s.get("tier") == "fast" for s in plan.get("sites") or []))


def acts(plan: dict[str, Any]) -> bool:
    """True when running the program under the plan changes what the kernel does with its
    memory on the swap tier: something locked, or objects moved as large folios. A plan that
    does neither (the kernel model chose to lock nothing) would only add the runtime's own
    memory to the cgroup (about 0.3-0.6 MiB resident: bfs here, and 0.3 MiB of a 9 MiB limit in
    the guest took 1.3x the kernel's swap-ins), so compare runs that arm as the program alone
    (a plan naming sites acts: their blocks move to arenas of their own):
    leaving the program to the kernel is then exactly what the kernel does."""
    return locks_something(plan) or bool(plan.get("large_folios")) or bool(plan.get("sites"))


def plan_warnings(plan: dict[str, Any], exe: str | os.PathLike,
                  follow_forks: bool = False) -> list[str]:
    """Warnings before the run: another or rebuilt binary; a plan with nothing fast. With
    follow_forks, or for a plan with per-program sections, `exe` may be a launcher of the
    planned programs: see program_warnings."""
    from objtier.plan import check_plan_binary

    if plan.get("programs") or follow_forks:
        warnings = program_warnings(plan, exe, follow_forks)
    else:
        warnings = list(check_plan_binary(plan, exe))
    entries = plan.get("entries", [])
    if not entries and not plan.get("sites"):   # sites: served from arenas
        warnings.append("the plan has no entries: it matches no object, the program runs as "
                        "without objtier")
    elif not any(e["tier"] in ("fast", "split") for e in entries) and not plan.get("sites"):
        warnings.append("the plan places no object in fast memory: nothing will be locked")
    return warnings


def program_warnings(plan: dict[str, Any], exe: str | os.PathLike,
                     follow_forks: bool) -> list[str]:
    """Before a run of a launcher or a multi-program plan: each planned program rebuilt since
    (its path's build id differs); without follow_forks, a command that is none of the
    planned programs (its children would run without the plan)."""
    from objtier.plan import identity

    programs = plan.get("programs") or [dict(plan.get("binary") or {}, rank=None)]
    warnings = []
    for p in programs:
        if not p.get("path") or not p.get("build_id"):
            continue
        here = identity(p["path"])
        if here["build_id"] and here["build_id"] != p["build_id"]:
            warnings.append(f"{p['path']} was rebuilt since the plan was made (build-id "
                            f"{here['build_id'][:12]}, plan has {p['build_id'][:12]}); its "
                            f"allocation contexts may not match")
    if not follow_forks:
        mine = identity(exe)
        names = {Path(p["path"]).name for p in programs if p.get("path")}
        ids = {p.get("build_id") for p in programs if p.get("build_id")}
        if mine["build_id"] not in ids and Path(mine["path"]).name not in names:
            warnings.append(f"the plan's sections are for {', '.join(sorted(names))}, not "
                            f"{Path(exe).name}: if {Path(exe).name} starts them, use "
                            f"--follow-forks")
    return warnings


@dataclass
class ProcessEnforcement:
    """What one process of a run did with the plan (from its own trace file)."""

    pid: int
    exe: str
    rank: int | None
    section: str        # the runtime's OBJTIER_PLAN_SECTION note: an index, "all" or "none"
    objects: int
    matched: int        # objects whose context key is in the entries of the section applied
    locked_bytes: int   # peak of the process's own mlocked bytes


def _open_run_trace(trace_dir: Path):
    """(trace, allocations, placements) of a run's trace; None when it holds no readable
    trace."""
    from objtier.errors import TraceError
    from objtier.trace import open_trace

    try:
        trace = open_trace(trace_dir)
        return trace, trace.allocations, trace.placements
    except (TraceError, OSError):
        return None


def _peak_locked(placements, rows=None) -> int:
    """Peak of mlocked bytes over the run [bytes]: successful MLOCK lengths less successful
    MUNLOCK lengths of the PLACEMENT rows selected by the boolean mask `rows` (all rows when
    None), summed in time order; 0 for no rows, never below 0."""
    import numpy as np

    if not placements.num_rows:
        return 0
    ok = placements.column("result").to_numpy() >= 0
    if rows is not None:
        ok &= rows
    action = placements.column("action").to_numpy()
    length = placements.column("length").to_numpy().astype(np.int64)
    order = np.argsort(placements.column("time_ns").to_numpy(), kind="stable")
    change = np.where(ok & (action == MLOCK), length, 0) - \
        np.where(ok & (action == MUNLOCK), length, 0)
    return max(0, int(np.cumsum(change[order]).max()))


def read_process_enforcement(plan: dict[str, Any], trace_dir: Path
                             ) -> list[ProcessEnforcement] | None:
    """Per process of a run (follow forks): the section its runtime applied, as it noted in
    its PROCESS record, and what matched; None when the directory holds no readable trace."""
    import numpy as np

    opened = _open_run_trace(trace_dir)
    if opened is None:
        return None
    trace, allocations, placements = opened
    table = None
    if allocations.num_rows:
        from objtier.analysis.objects import object_table

        table = object_table(trace, labels=False)
    rows = []
    for p in sorted(trace.processes, key=lambda p: p.start_mono_ns):
        section = p.config.get("OBJTIER_PLAN_SECTION", "none")
        keys = {e["context_key"] for e in plan.get("entries", [])
                if section == "all" or str(e.get("program")) == section}
        objects = matched = 0
        if table is not None:
            mine = table.column("pid").to_numpy() == p.pid
            objects = int(mine.sum())
            found = table.column("context_key").to_numpy(zero_copy_only=False).astype(str)
            matched = int(np.isin(found[mine], list(keys)).sum()) if keys else 0
        locked = 0
        if placements.num_rows and "pid" in placements.column_names:
            locked = _peak_locked(placements, placements.column("pid").to_numpy() == p.pid)
        rank_text = p.config.get("OBJTIER_RANK", "")
        rows.append(ProcessEnforcement(p.pid, p.exe, int(rank_text) if rank_text.isdigit()
                                       else None, section, objects, matched, locked))
    return rows


def section_warnings(plan: dict[str, Any], processes: list[ProcessEnforcement]) -> list[str]:
    """After a run of a multi-program plan: sections no process applied."""
    programs = plan.get("programs") or []
    applied = {p.section for p in processes}
    return [f"no process of the run applied the plan's section {i} ({p['path']}"
            f"{'' if p.get('rank') is None else ', rank ' + str(p['rank'])}): its program did "
            f"not run, or was rebuilt" for i, p in enumerate(programs) if str(i) not in applied]


@dataclass
class Enforcement:
    """What a run's trace says the runtime did with the plan."""

    objects: int            # objects recorded in the run
    matched: int            # of those, objects whose context key is in the plan
    actions: int            # PLACEMENT records
    failed_actions: int     # PLACEMENT records with result < 0
    locked_bytes: int       # peak of (successful MLOCK lengths - MUNLOCK lengths) over the run,
                            # in time order: the program's frees munlock, so the total at exit
                            # is usually 0 [bytes]
    cold_bytes: int         # sum of successful COLD + PAGEOUT lengths
    large_folio_bytes: int = 0  # sum of successful HUGEPAGE lengths
    site_locked_bytes: int = 0  # the plan's sites' arena chunks mlocked (site_locked_bytes)


MLOCK, MUNLOCK, COLD, PAGEOUT, MBIND, HUGEPAGE = 1, 2, 3, 4, 5, 6  # enum ot_placement_action


def read_enforcement(plan: dict[str, Any], trace_dir: Path) -> Enforcement | None:
    """Read a run's trace back; None when it holds no readable trace."""
    import numpy as np

    opened = _open_run_trace(trace_dir)
    if opened is None:
        return None
    trace, allocations, placements = opened
    keys = {e["context_key"] for e in plan.get("entries", [])}
    matched = 0
    if allocations.num_rows and keys:
        from objtier.analysis.objects import object_table

        table = object_table(trace, labels=False)
        found = table.column("context_key").to_numpy(zero_copy_only=False).astype(str)
        matched = int(np.isin(found, list(keys)).sum())
    actions = placements.num_rows
    if actions:
        action = placements.column("action").to_numpy()
        result = placements.column("result").to_numpy()
        length = placements.column("length").to_numpy().astype(np.int64)
        ok = result >= 0
        locked = _peak_locked(placements)
        cold = int(length[ok & ((action == COLD) | (action == PAGEOUT))].sum())
        large = int(length[ok & (action == HUGEPAGE)].sum())
        failed = int((~ok).sum())
    else:
        locked = cold = failed = large = 0
    return Enforcement(allocations.num_rows, matched, actions, failed, locked, cold, large,
                       site_locked_bytes(trace_dir))


def enforcement_warnings(plan: dict[str, Any], found: Enforcement | None,
                         supported: bool) -> list[str]:
    """Warnings after the run, from what its trace shows."""
    warnings = []
    if not supported:
        warnings.append("this objtier runtime does not enforce plans yet (it does not read "
                        "OBJTIER_PLAN): the program ran without placement")
    if found is None or not plan.get("entries"):
        return warnings
    if found.matched == 0:
        warnings.append(f"the plan matched none of the program's {found.objects} recorded "
                        f"objects (another binary, other inputs, or another --stack-depth?)")
    if found.failed_actions:
        warnings.append(f"{found.failed_actions} of {found.actions} placement actions failed "
                        f"(see the PLACEMENT records of the trace)")
    return warnings
