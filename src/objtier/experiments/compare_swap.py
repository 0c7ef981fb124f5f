"""`objtier compare` as a library: kernel reclaim alone vs an objtier plan, on the swap tier.

    1. footprint: one unlimited run; footprint = its peak RSS [bytes]
    2. profile:   one recording (record_program), unlimited; plan for the fast budget
                  = local bytes - mlock margin with the chosen algorithm (default margin:
                  fitted to what a first plan leaves unlocked, enforce.fitted_margin)
    3. A/B:       under one SwapTier (cgroup limit = local bytes, zram or a device behind it),
                  baseline and objtier alternately, A B A B ..., `repeat` times each (and
                  the arms asked for: objtier-noguard, kernel-raw, in the same rotation).
                  Every arm but kernel-raw runs with the same stat-flush reader
                  (tiers.statflush: memory.stat read every stat_flush_ms from this process),
                  so no arm is denied the LRU-statistics flush that keeps memcg v1 reclaim
                  from OOM-killing; kernel-raw is kernel reclaim without it, for survival only
    4. results:   DIR/compare.csv (one row per run), DIR/summary.json, DIR/compare.png,
                  DIR/plan.json + plan.txt, DIR/profile.otr/, DIR/runs/ (each run's output
                  and, for objtier runs, its trace with the runtime's PLACEMENT records)

Machine state: the cgroup and the swap device exist only inside step 3's SwapTier, which undoes
them on exit, error, Ctrl-C and SIGTERM; every child is reaped (run_measured kills it when
interrupted) and the cgroup's removal kills anything left inside.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import platform
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from objtier.errors import EnvironmentProblem, ObjtierError, UsageError
from objtier import enforcement as enforce
from objtier.experiments.results import (RunRow, prepare_output, run_warnings, summarize,
                                         survival_text, write_csv, write_summary)
from objtier.tiers.spool import Spool
from objtier.tiers.statflush import (DEFAULT_PERIOD_MS, FAST_PERIOD_MS, StatFlushReader,
                                     check_period)

# Recordings summed per page for --algo auto and pages: on Kronecker BFS the ranked plan ran
# 19.3 s from 1 profile, 15.2 s from 4 and from 8 (docs/benchmarks.md, "Profile depth").
PAGE_PROFILES = 4
MIN_FOOTPRINT_BYTES = 16 << 20   # below this a cgroup limit is mostly page cache and stacks
MEMCG_KEYS = ("pgmajfault", "workingset_refault_anon", "pswpout")
EXTRA_ARMS = ("objtier-noguard", "kernel-raw")
NO_FLUSH_WARNING = ("--stat-flush 0: no arm gets the stat-flush reader; on memory cgroup v1 "
                    "the kernel arm may be OOM-killed and the ratios are not fair")


def check_stat_flush(period_ms: float) -> None:
    """--stat-flush: 0 (off) or a period in (0, statflush.MAX_PERIOD_MS] ms."""
    check_period(period_ms)


def arms_of(settings: "CompareSettings") -> list[str]:
    """The arms of one repetition, in the order they run."""
    unknown = [a for a in settings.arms if a not in EXTRA_ARMS]
    if unknown:
        raise UsageError(f"unknown arm {unknown[0]!r}; choose from {', '.join(EXTRA_ARMS)}")
    return ["baseline", "objtier"] + [a for a in EXTRA_ARMS if a in settings.arms]


@dataclass
class CompareSettings:
    local: str = "70%"             # SIZE or PCT of the measured footprint
    repeat: int = 5                # runs per configuration
    swap: str = "zram"             # zram | a swap device or file
    algo: str = "auto"             # spill, ranking a split object's pages where some are cold
    backfill: bool = False         # let colder objects fill gaps (planner.without_backfill)
    guard: bool = True             # the runtime's pressure guard (enforce.PlanRun.pressure_guard)
    stat_flush_ms: float = DEFAULT_PERIOD_MS  # the reader's period in every arm; 0: no reader
    arms: tuple[str, ...] = ()     # extra arms: "objtier-noguard", "kernel-raw"
    large_folio: str = enforce.DEFAULT_LARGE_FOLIO  # SIZE|off: folios of the plan's swept objects
    sampler: str = "auto"
    margin: str | None = None      # mlock margin SIZE; None = enforce.fitted_margin
    rate: int = 20000              # profile: most samples per second (10x record's default)
    profiles: int | None = None    # recordings for the plan; None = profile_count(algo)
    phases: bool | None = None     # one placement per program phase (the program's markers);
                                   # None = where the recording has markers, else one plan
    sites: int | None = None       # profile: small-block sites watched (record --sites N);
                                   # None = record_profile decides
    min_size: int = 128 << 10      # profile: smallest recorded allocation [bytes]
    stack_depth: int = 8           # profile and objtier runs (context keys hash the frames)
    timeout_s: float | None = None  # per limited run; None = max(300 s, 100 x unlimited wall)
    follow_forks: bool = False     # record and place child processes too (per-program sections)
    spare_reclaim: str = "auto"    # objtier arm: reclaim on a spare CPU (tiers.spare_reclaim)
    output: Path = Path("compare-out")
    force: bool = False


@dataclass
class CompareResult:
    rows: list[RunRow]
    summary: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def preflight(swap: str) -> None:
    """Fail fast, before any long run, when the swap tier cannot be built here."""
    from objtier.tiers.swap import CGROUP_V1, CGROUP_V2, ZRAM_CONTROL, require_root

    require_root("objtier compare")
    v2 = CGROUP_V2 / "cgroup.controllers"
    if not (CGROUP_V1 / "memory.limit_in_bytes").exists() and not (
            v2.exists() and "memory" in v2.read_text().split()):
        raise EnvironmentProblem("no memory cgroup controller (neither cgroup v1 "
                                 "/sys/fs/cgroup/memory nor v2 with memory enabled)")
    for tool in ("swapon", "swapoff") + (("mkswap",) if swap == "zram" else ()):
        if not shutil.which(tool):
            raise EnvironmentProblem(f"no swap possible: {tool} is not installed")
    if swap == "zram":
        if not ZRAM_CONTROL.exists() and subprocess.run(
                ["modprobe", "-n", "zram"], capture_output=True).returncode != 0:
            raise EnvironmentProblem("no swap possible: no zram support (module zram not "
                                     "available); pass --swap DEVICE with a swap device")
    elif not Path(swap).exists():
        raise EnvironmentProblem(f"no swap possible: swap device {swap} does not exist")


def machine_info() -> dict[str, Any]:
    from objtier.procfs import meminfo_bytes

    return {"kernel": platform.release(), "cpus": os.cpu_count(),
            "memory_bytes": meminfo_bytes("MemTotal"),
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:160] if lines else "no message"


def measure_footprint(command: list[str], say: Callable[[str], None]):
    """The unlimited run, in a memory cgroup of its own with no limit: (Measurement, footprint
    bytes, page cache bytes). Footprint = the cgroup's peak charge less the file page cache still
    charged at the end: the program's own memory, which a limit constrains. Page cache is charged
    only when the program is the first to read a file (an input another process read before is
    charged to that one), so counting it would make "70%" mean another limit from one run to the
    next; a file read once is also dropped at no swap cost. (The child's peak RSS from wait4 is
    no measure of a small program: it includes the forked Python before exec.) Errors when the
    program fails or its footprint is too small to limit."""
    from objtier.experiments.measure import run_measured
    from objtier.restore import Restorer
    from objtier.tiers.swap import MemoryCgroup

    say("unlimited run (footprint)")
    with Restorer() as restorer:
        cgroup = MemoryCgroup.create(f"objtier-{os.getpid()}-footprint", 1 << 62, restorer)
        unlimited = run_measured("unlimited", command, preexec=cgroup.add_self)
        peak = cgroup.peak_bytes()
        stat = cgroup.stat()
        cache = stat.get("total_cache", stat.get("cache", stat.get("file", 0)))
    if unlimited.returncode == -signal.SIGINT:
        raise KeyboardInterrupt
    if not unlimited.ok:
        raise ObjtierError(f"the program failed in the unlimited run (exit status "
                           f"{unlimited.returncode}): {_last_line(unlimited.stderr)}")
    cache = max(0, min(cache, peak or 0))
    footprint = peak - cache if peak else unlimited.max_rss_bytes
    if footprint < MIN_FOOTPRINT_BYTES:
        raise UsageError(f"footprint too small to limit: {footprint >> 20} MiB < "
                         f"{MIN_FOOTPRINT_BYTES >> 20} MiB at its peak; give the program a "
                         f"larger input")
    return unlimited, footprint, (cache if peak else 0)


def profile_count(algo: str) -> int:
    """Recordings `compare` makes by default: PAGE_PROFILES for the algorithms that sum
    samples per page (auto, pages), else 1."""
    from objtier import plan as planner

    return PAGE_PROFILES if algo in planner.NEEDS_PAGE_SAMPLES else 1


SHORT_PROFILE_S = 1.0   # a window sampler's pass lasts up to 250 ms: fewer than 4 in a run


def short_profile_warning(wall_s: float, windowed: bool) -> str | None:
    """The warning for profiles of a run that lasted wall_s [s] unlimited, when their sampler
    watches objects in windows (fault, pageout, wp: a window dwells up to 50 ms and a pass
    over the objects up to 250 ms); None when the run is long enough or the sampler is not
    windowed. Measured: the alternating program (0.1 s unlimited) gave profiles with 83-100 %
    of their samples on one of two equally used arrays (docs/benchmarks.md)."""
    if not windowed or wall_s >= SHORT_PROFILE_S:
        return None
    return (f"the program ran {wall_s:.2f} s without a limit: the profiles' sampler watches "
            f"objects in windows of up to 50 ms, so a run this short shows it part of them "
            f"and the plan may favour whichever it watched first; profile a longer run "
            f"(a larger input or more iterations) for a plan to trust")


AUTO_SITES = 8              # sites watched when compare decides to watch them itself
AUTO_SITES_SHARE = 0.25     # ... because small blocks hold this share of the footprint


def watch_sites_after(first: Path, footprint: int, sampler: str) -> bool:
    """Whether the later profiles watch sites on their own (settings.sites None): the first
    profile's sampled small-block sites hold at least AUTO_SITES_SHARE of the footprint, and
    the sampler is pageout (only its windows arm the watched arenas)."""
    from objtier.analysis.sites import has_sites, live_site_bytes
    from objtier.trace import open_trace

    if sampler != "pageout" or footprint <= 0:
        return False
    trace = open_trace(first)
    return has_sites(trace) and live_site_bytes(trace) >= AUTO_SITES_SHARE * footprint


def _watching(stack: contextlib.ExitStack, n: int, first: Path, sampler: str) -> dict:
    """The runtime settings that watch the n largest sites of the first profile, its sites
    file kept until `stack` closes ({} for none: n is 0, or the first profile has no site
    with a context, which record.watch_sites refuses)."""
    from objtier.record.watch_sites import watched_sites

    if not n:
        return {}
    try:
        return stack.enter_context(watched_sites(n, str(first), sampler, lambda text: None))
    except UsageError:
        return {}


def record_profile(command: list[str], settings: CompareSettings,
                   say: Callable[[str], None], footprint: int = 0) -> list[Path]:
    """Record the program settings.profiles times (default profile_count), unlimited, into
    DIR/profile.otr, then DIR/profile-2.otr, … (its output: DIR/profile.log, appended).
    Sites: settings.sites N watches N sites in every profile (the first learns them, the
    others watch the first's N largest by peak bytes); None (the default) watches the first's
    AUTO_SITES largest in the others where the first shows small blocks holding much of the
    footprint [bytes] (watch_sites_after); 0 never. Returns the recordings."""
    from dataclasses import replace as _replace

    from objtier.record.sampler_choice import choose_sampler
    from objtier.record.sampler_swap import sampler_swap
    from objtier.record.session import RecordSettings, record_program
    from objtier.record.watch_sites import LEARN_BYTES

    count = settings.profiles or profile_count(settings.algo)
    # record's own default (pageout where there is no PEBS/IBS): the plan comes from the
    # sampler users record with, which the program cannot notice
    sampler, reason = choose_sampler(settings.sampler, transparent_default=True)
    say(f"recording {count} profile(s) (sampler {sampler}: {reason})")
    record = RecordSettings(sampler=sampler, rate=settings.rate, min_size=settings.min_size,
                            stack_depth=settings.stack_depth,
                            follow_forks=settings.follow_forks)
    if settings.sites:
        say(f"watching the {settings.sites} small-block site(s) with the most sampled bytes: "
            f"in profile 1 those after its first {LEARN_BYTES >> 20} MiB of small blocks, in "
            f"the others profile 1's largest, through arenas")
    watch = settings.sites or 0   # sites watched in profiles 2..count (from profile 1's)
    # profile 1 learns the sites (with settings.sites); the others share one sites file
    env = {"OBJTIER_ARENA_LEARN": str(settings.sites)} if settings.sites else {}
    profiles = []
    with contextlib.ExitStack() as later:
        for i in range(1, count + 1):
            if i == 2:
                if settings.sites is None and watch_sites_after(profiles[0], footprint,
                                                                sampler):
                    watch = AUTO_SITES
                    say(f"watching profile 1's {AUTO_SITES} largest small-block sites through "
                        f"arenas in profiles 2-{count}: small blocks hold "
                        f"{AUTO_SITES_SHARE:.0%} of the footprint or more (--profile "
                        f"sites=0: none)")
                env = _watching(later, watch, profiles[0], sampler)
            profile = settings.output / ("profile.otr" if i == 1 else f"profile-{i}.otr")
            with _output_to(settings.output / "profile.log", append=i > 1), \
                    sampler_swap(sampler, say):
                returncode, _ = record_program(command, profile,
                                               _replace(record, extra_env=env), force=True)
            if returncode == -signal.SIGINT:
                raise KeyboardInterrupt
            if returncode != 0:
                log = (settings.output / "profile.log").read_text(errors="replace")
                raise ObjtierError(f"the program failed while being recorded (exit status "
                                   f"{returncode}): {_last_line(log)}")
            profiles.append(profile)
    return profiles


def plan_profile(profiles: list[Path], command: list[str], settings: CompareSettings,
                 footprint: int, local: int, calibrate_to: float | None = None
                 ) -> tuple[dict[str, Any], int, int]:
    """Plan the recordings (objtier.plan.pipeline) for local bytes of local memory; writes
    plan.json/plan.txt. Returns the plan, the mlock limit it was made for and the margin
    (local - limit) [bytes]. Without settings.margin the margin is fitted (enforce.fit_margin):
    a first placement with the default margin, then the margin shrunk to the bytes of the
    objects that placement leaves wholly unlocked plus some slack and the objects placed again,
    until the objects the final placement leaves unlocked have their room — room for the
    objects the plan does not lock, not for the tail of the one it splits. With phases
    (settings.phases, or where it is None: the recording has phase markers) each phase the
    program marks gets its own placement and margin, fitted to the objects live while its plan
    is in force; phases run one at a time and the runtime unlocks the old phase's set before it
    locks the new one, so the limit is the largest phase's."""
    from objtier import plan as planner
    from objtier.plan.pipeline import (ModelMemory, make_plan, other_bytes, read_recordings,
                                  write_plan_files)

    profile = read_recordings(profiles, phases=settings.phases, exe=command[0])
    limit, margin = enforce.mlock_limit(local, settings.margin, fitted=settings.margin is None)
    # a margin the user gave bounds every candidate; else the model derives its own
    memory = ModelMemory(local, other_bytes(footprint, profile.objects, profile.traces),
                         limit if settings.margin is not None else None, footprint,
                         calibrate_to, choose=settings.algo == "auto")

    def fit(place, unlocked):
        if settings.margin is not None:
            return limit, place(limit)
        fitted, _, placement = enforce.fit_margin(local, margin, place, unlocked)
        return fitted, placement

    processes = None
    if settings.follow_forks and profile.traces:   # one section per program the launcher started
        from objtier.analysis.processes import process_programs

        processes = process_programs(profile.traces[0])
    made = make_plan(profile, settings.algo, planner.Budget(local, str(local), None, footprint),
                     phases=profile.has_phases, backfill=settings.backfill, fit=fit,
                     processes=processes, identify_binary=False, memory=memory)
    write_plan_files(made.plan, settings.output / "plan.json", settings.output / "plan.txt")
    return made.plan, made.budget.bytes, local - made.budget.bytes


@contextlib.contextmanager
def _output_to(path: Path, append: bool = False):
    """Send this process's (and so its children's) stdout and stderr to a file meanwhile."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    try:
        with open(path, "ab" if append else "wb") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
    finally:
        os.close(saved[0])
        os.close(saved[1])


def _memcg_stats(tier) -> dict[str, int]:
    """The cgroup's MEMCG_KEYS from memory.stat and its OOM kills so far (v1:
    memory.oom_control oom_kill, v2: memory.events oom_kill; absent on kernels before 4.13,
    then RunRow.oom_killed falls back to the exit by SIGKILL)."""
    stat = tier.cgroup.stat()
    oom = None
    if tier.cgroup.version == 1 and (tier.cgroup.path / "memory.oom_control").exists():
        for line in tier.cgroup.read("memory.oom_control").splitlines():
            if line.startswith("oom_kill "):
                oom = int(line.split()[1])
    elif tier.cgroup.version == 2 and (tier.cgroup.path / "memory.events").exists():
        for line in tier.cgroup.read("memory.events").splitlines():
            if line.startswith("oom_kill "):
                oom = int(line.split()[1])
    found = {k: stat[k] for k in MEMCG_KEYS if k in stat}
    return found if oom is None else {**found, "oom_kill": oom}


def _delta(before: dict[str, int], after: dict[str, int], key: str) -> int | None:
    return after[key] - before[key] if key in before and key in after else None


def one_run(tier, config: str, repeat: int, order: int, command: list[str],
            env: dict[str, str] | None, timeout_s: float, runs_dir: Path,
            plan: dict[str, Any], trace_dir: Path | None,
            stat_flush_ms: float = 0.0, spool: Spool | None = None) -> RunRow:
    """One measured run inside the tier's cgroup, with the stat-flush reader reading the
    cgroup's memory.stat every stat_flush_ms meanwhile (0: none); its output goes to
    runs_dir. spool: where the runtime wrote its trace, landed in trace_dir after the run."""
    from objtier.experiments.measure import run_measured

    tier.cgroup.reset_peak()
    before = _memcg_stats(tier)
    with StatFlushReader(tier.cgroup.path, stat_flush_ms) as reader:
        m = run_measured(config, command, env=env, preexec=tier.preexec, timeout_s=timeout_s)
    after = _memcg_stats(tier)
    if spool is not None:
        spool.land()
    stem = runs_dir / f"{order:02d}-{config}-{repeat}"
    stem.with_suffix(".out").write_text(m.stdout)
    stem.with_suffix(".err").write_text(m.stderr)
    found = enforce.read_enforcement(plan, trace_dir) if trace_dir else None
    return RunRow(
        config=config, repeat=repeat, order=order, returncode=m.returncode,
        timed_out=m.wall_s >= timeout_s and m.returncode == -signal.SIGKILL,
        wall_s=round(m.wall_s, 6),
        user_s=round(m.user_s, 3) if m.user_s is not None else None,
        system_s=round(m.system_s, 3) if m.system_s is not None else None,
        fom_name=m.fom_name, fom_value=m.fom_value,
        fom_unit=m.fom_unit, fom_seconds=m.fom_seconds, pswpin=m.pswpin, pswpout=m.pswpout,
        major_faults=m.major_faults, max_rss_bytes=m.max_rss_bytes,
        memcg_peak_bytes=tier.cgroup.peak_bytes(),
        memcg_pgmajfault=_delta(before, after, "pgmajfault"),
        memcg_refault_anon=_delta(before, after, "workingset_refault_anon"),
        memcg_pswpout=_delta(before, after, "pswpout"),
        memcg_oom_kills=_delta(before, after, "oom_kill"),
        objects_matched=found.matched if found else None,
        placement_actions=found.actions if found else None,
        locked_bytes=found.locked_bytes + found.site_locked_bytes if found else None,
        stat_flush_ms=stat_flush_ms, stat_flush_reads=reader.stats.reads,
        stat_flush_max_gap_ms=round(reader.stats.max_gap_ms, 3))


def run_compare(command: list[str], settings: CompareSettings,
                say: Callable[[str], None] = lambda text: None,
                on_row: Callable[[RunRow], None] = lambda row: None) -> CompareResult:
    """The whole experiment; see the module docstring. Writes into settings.output."""
    from objtier.record.launch import runtime_env
    from objtier.tiers.swap import SwapTier, large_folio_swapin_note

    if settings.repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {settings.repeat}")
    check_stat_flush(settings.stat_flush_ms)
    arms = arms_of(settings)
    preflight(settings.swap)
    prepare_output(settings.output, settings.force)
    supported = enforce.runtime_supports_plans()
    warnings: list[str] = [NO_FLUSH_WARNING] if not settings.stat_flush_ms else []
    unlimited, footprint, page_cache = measure_footprint(command, say)
    local = enforce.parse_local(settings.local, footprint)
    # a margin leaving nothing fails before profiling
    enforce.mlock_limit(local, settings.margin, fitted=settings.margin is None)
    say(f"footprint {footprint >> 20} MiB (+ {page_cache >> 20} MiB of file page cache, not "
        f"counted); local {local >> 20} MiB")
    profiles = record_profile(command, settings, say, footprint)
    from objtier.trace import open_trace

    from objtier.analysis.coverage import coverage_line, coverage_of

    # the last profile: where compare watched sites, it is one that watched them
    covered = coverage_of(footprint, open_trace(profiles[-1]), "the unlimited run's cgroup peak "
                          "less page cache", page_cache)
    say(coverage_line(covered).replace("\ncoverage: ", "; "))
    short = short_profile_warning(unlimited.wall_s, open_trace(profiles[0]).windows.num_rows > 0)
    if short:
        warnings.append(short)
    plan, limit, margin = plan_profile(profiles, command, settings, footprint, local)
    say(f"plan budget {limit >> 20} MiB ({margin >> 20} MiB margin)")
    if (plan.get("model") or {}).get("note"):
        say(plan["model"]["note"])
    guarded = settings.guard and enforce.locks_something(plan)  # the objtier arm's guard
    if not enforce.acts(plan):
        say("the plan leaves the program to the kernel (nothing locked, no large folios): "
            "the objtier arm runs it without the runtime")
    elif settings.guard and not guarded:
        say("the plan locks nothing: the objtier arm runs without the pressure guard")
    phases = plan.get("phases", [])      # the whole program "*" and the marked phases
    own = [p["name"] for p in phases if p["name"] == p["target"]]
    if len(own) > 1:
        say(f"one placement per phase, switched as the program marks them: {', '.join(own)}")
    elif len(phases) > 1:
        say("the marked phases are too short or too alike: one placement for the whole run")
    elif settings.phases is None:
        say("no phase markers in the recording: one placement for the whole run")
    warnings += plan.get("warnings", []) + enforce.plan_warnings(plan, command[0],
                                                                 settings.follow_forks)
    if not supported:
        warnings.append("this objtier runtime does not enforce plans yet (no OBJTIER_PLAN): "
                        "the objtier runs measure the runtime without placement")
    timeout = settings.timeout_s or max(300.0, 100.0 * unlimited.wall_s)
    runs_dir = settings.output / "runs"
    runs_dir.mkdir()
    rows: list[RunRow] = []
    folio = enforce.parse_large_folio(settings.large_folio) if plan.get("large_folios") else None
    if folio:
        say(f"{len(plan['large_folios'])} swept object(s) swapped in {folio >> 10} KiB folios "
            f"(enabled for madvised memory in both arms; only objtier's runs advise it)")
        note = large_folio_swapin_note()
        if note:
            say(note)
    say(f"stat-flush reader: memory.stat every {settings.stat_flush_ms:g} ms in "
        f"{', '.join(a for a in arms if a != 'kernel-raw')}" if settings.stat_flush_ms
        else "stat-flush reader off")
    with SwapTier(local, swap=settings.swap, large_folio_bytes=folio) as tier:
        spare = None            # decided after the first kernel run (tiers.spare_reclaim)
        spare_counts = [0, 0.0]
        for i in range(1, settings.repeat + 1):
            for config in arms:
                order = len(rows) + 1
                say(f"run {order}/{len(arms) * settings.repeat}: {config} #{i}")
                env = trace_dir = spool = None
                if config.startswith("objtier") and enforce.acts(plan):
                    trace_dir = runs_dir / f"{order:02d}-{config}-{i}.otr"
                    trace_dir.mkdir(mode=0o700)
                    spool = Spool(trace_dir)
                    guard = guarded and config == "objtier"
                    run = enforce.PlanRun(settings.output / "plan.txt", limit,
                                          enforce.plan_min_size(plan), settings.stack_depth,
                                          spool.path, pressure_guard=guard,
                                          large_folios=folio is not None,
                                          follow_forks=settings.follow_forks)
                    env = runtime_env(run.settings())
                flush = 0.0 if config == "kernel-raw" else settings.stat_flush_ms
                helper = (spare_helper(tier) if config == "objtier" and spare is not None
                          and spare.use and spare.off_after_first is None else None)
                with spool or contextlib.nullcontext(), helper or contextlib.nullcontext():
                    row = one_run(tier, config, i, order, command, env, timeout, runs_dir,
                                  plan, trace_dir, flush, spool)
                if helper is not None:
                    spare_counts[0] += helper.reclaims
                    spare_counts[1] += helper.seconds
                    if i == 1 and settings.spare_reclaim == "auto" and i < settings.repeat:
                        spare = checked_spare(spare, rows, row, say)
                if (config == "baseline" and i == 1 and settings.algo == "auto"
                        and needs_calibration(plan, row)):
                    old = plan["model"]["chosen"]
                    plan, limit, margin = plan_profile(profiles, command, settings, footprint,
                                                       local, calibrate_to=kernel_swapins(row))
                    guarded = settings.guard and enforce.locks_something(plan)
                    if not enforce.acts(plan):
                        say("the plan now leaves the program to the kernel: the objtier arm "
                            "runs it without the runtime")
                    fit = plan["model"].get("calibration", {})
                    if plan["model"].get("why_not"):
                        say(f"model checked on kernel run 1 ({kernel_swapins(row):,} swap-ins "
                            f"measured): {plan['model']['why_not']} (was '{old}')")
                    else:
                        scale = (f"; every prediction then scaled by {fit['scale']:.2f} to "
                                 f"the run's level" if fit.get("scale") else "")
                        say(f"model calibrated on kernel run 1 ({kernel_swapins(row):,} "
                            f"swap-ins measured, {fit.get('kernel_before', 0):,} predicted"
                            f"{scale}): plan '{plan['model']['chosen']}' (was '{old}'), "
                            f"budget {limit >> 20} MiB")
                if spare is None and config == "baseline":
                    spare = decide_spare(settings.spare_reclaim, tier, unlimited, plan, row)
                    say(f"spare-CPU reclaim {'on' if spare.use else 'off'} for the objtier "
                        f"arm: {spare.why}")
                if row.returncode == -signal.SIGINT:
                    raise KeyboardInterrupt
                rows.append(row)
                on_row(row)
    summary = summarize(rows)
    if spare is not None:
        summary["spare_reclaim"] = {**spare.as_dict(), "mode": settings.spare_reclaim,
                                    "reclaims": spare_counts[0],
                                    "seconds": round(spare_counts[1], 3)}
    from objtier.model.check import lines as model_lines

    summary["model_check"] = model_check(plan, summary, unlimited.wall_s)
    for line in model_lines(summary["model_check"]):
        say(line)
    if plan.get("model", {}).get("why_not"):
        say(f"kernel model not used: {plan['model']['why_not']}")
    summary.update({
        "command": command, "machine": machine_info(),
        "unlimited": {"wall_s": unlimited.wall_s, "user_s": unlimited.user_s,
                      "system_s": unlimited.system_s, "fom_value": unlimited.fom_value,
                      "fom_unit": unlimited.fom_unit, "fom_seconds": unlimited.fom_seconds,
                      "max_rss_bytes": unlimited.max_rss_bytes, "footprint_bytes": footprint,
                      "page_cache_bytes": page_cache},
        "local": {"given": settings.local, "bytes": local, "margin_bytes": margin,
                  "margin_fitted": settings.margin is None,
                  "mlock_limit_bytes": limit, "swap": settings.swap,
                  "pressure_guard": guarded,
                  "large_folio_bytes": folio,
                  "large_folio_objects": len(plan.get("large_folios", []))},
        "plan": {"algorithm": settings.algo, "backfill": settings.backfill,
                 "profiles": len(profiles),
                 "path": str(settings.output / "plan.json"),
                 # the whole run's plan, or the phase plan that locks most
                 **max(plan.get("summary") or [{}],
                       key=lambda row: row.get("peak_fast_bytes") or 0),
                 "phases_with_own_plan": [p["name"] for p in plan.get("phases", [])
                                          if p["name"] == p["target"]]},
        "repeat": settings.repeat, "runtime_enforces_plans": supported,
        "arms": arms,
        # the objtier arm ran the kernel arm's command, alone and without a helper: its ratio
        # to the kernel is the spread between identical runs, not the plan's doing
        "same_command": not enforce.acts(plan) and not (spare is not None and spare.use),
        "stat_flush": stat_flush_summary(rows, settings.stat_flush_ms),
        "warnings": warnings + run_warnings(rows),   # every warning compare prints
    })
    summary["coverage"] = covered.as_dict()   # the footprint the profile's objects cover
    _write(rows, summary, settings.output, command)
    return CompareResult(rows, summary, warnings)


def kernel_swapins(row: RunRow) -> int:
    """A run's swap-ins in pages, as the model counts them (model.check.measured_swapins)."""
    from objtier.model.check import measured_swapins

    return int(measured_swapins(lambda field: getattr(row, field, None)) or 0)


def needs_calibration(plan: dict[str, Any], kernel: RunRow) -> bool:
    """Whether the first kernel run says the model the plan was chosen by is off (beyond
    model.check's bounds) — then compare fits the model to that run and plans again, before
    any objtier run."""
    from objtier.model.check import is_off

    model = plan.get("model") or {}
    if not model.get("chosen") or not kernel.ok or "calibration" in model:
        return False
    return is_off(model["predicted_swapins"]["kernel"], kernel_swapins(kernel))


def checked_spare(spare, rows: list[RunRow], row: RunRow, say: Callable[[str], None]):
    """The spare-CPU decision after the objtier arm's first run with the helper
    (tiers.spare_reclaim.check_first_run against kernel run 1): off for the later runs where
    that run was slower and swapped in more."""
    from dataclasses import replace

    from objtier.tiers.spare_reclaim import check_first_run

    kernel = next((r for r in rows if r.config == "baseline" and r.repeat == 1), None)
    if kernel is None or not kernel.ok or not row.ok:
        return spare
    why = check_first_run(kernel.wall_s, kernel_swapins(kernel), row.wall_s,
                          kernel_swapins(row))
    if why is None:
        return spare
    say(f"spare-CPU reclaim off for the objtier arm's later runs: {why}")
    return replace(spare, off_after_first=why)


def spare_helper(tier):
    """The spare-CPU reclaimer for one run in the tier's cgroup (decide_spare turns it on
    for memory cgroup v1 only)."""
    from objtier.tiers.spare_reclaim import SpareReclaimer

    return SpareReclaimer(tier.cgroup.path)


def decide_spare(mode: str, tier, unlimited, plan: dict[str, Any], kernel: RunRow):
    """tiers.spare_reclaim.decide from the unlimited run, the plan's model section and the
    first kernel-reclaim run."""
    from objtier.tiers.spare_reclaim import Decision, decide

    if tier.cgroup.version != 1 and mode != "off":
        return Decision(False, "memory cgroup v2: the spare-CPU reclaimer is built for v1")
    from objtier.model.check import seconds_per_swapin

    model = plan.get("model") or {}
    predicted = (model.get("predicted_swapins") or {}).get("plan")
    kernel_in = kernel_swapins(kernel)
    wall = None
    if predicted is not None and kernel_in and kernel.ok:
        wall = unlimited.wall_s + predicted * seconds_per_swapin(unlimited.wall_s,
                                                                 kernel.wall_s, kernel_in)
    cpu = ((unlimited.user_s or 0.0) + (unlimited.system_s or 0.0)
           if unlimited.user_s is not None else None)
    swapouts = kernel.memcg_pswpout if kernel.memcg_pswpout is not None else kernel.pswpout
    return decide(mode, os.cpu_count() or 1, cpu, unlimited.wall_s, predicted, wall,
                  kernel.system_s, swapouts)


def model_check(plan: dict[str, Any], summary: dict[str, Any],
                unlimited_wall_s: float) -> dict[str, Any] | None:
    """The kernel model's prediction (the plan's "model" section) beside the arms' medians:
    swap-ins are pages, as the model counts them: the cgroup's anonymous refaults
    (memcg_refault_anon), else the pages swapped in (pswpin), else the major faults (a fault
    may bring a large folio of several pages)."""
    from objtier.model.check import check, measured_swapins

    measured = {}
    for arm in ("baseline", "objtier"):
        med = summary["medians"].get(arm) or {}
        swapins = measured_swapins(med.get)
        alive = med.get("finished", 0) == med.get("runs", 0) and med.get("runs", 0) > 0
        measured[arm] = ({"swapins": swapins, "wall_s": med.get("wall_s")}
                         if alive and swapins is not None else {})
    return check(plan.get("model"), measured, unlimited_wall_s)


def stat_flush_summary(rows: list[RunRow], period_ms: float) -> dict[str, Any]:
    """What summary.json says of the reader: its period, the arms it ran in, and per arm the
    reads it made (total, fewest in a run) and the longest gap between two reads."""
    per: dict[str, dict[str, Any]] = {}
    for config in dict.fromkeys(r.config for r in rows):
        mine = [r for r in rows if r.config == config]
        per[config] = {"period_ms": mine[0].stat_flush_ms,
                       "reads": sum(r.stat_flush_reads for r in mine),
                       "fewest_reads_in_a_run": min(r.stat_flush_reads for r in mine),
                       "max_gap_ms": max(r.stat_flush_max_gap_ms for r in mine)}
    return {"period_ms": period_ms,
            "what": "a thread of objtier reads the cgroup's memory.stat every period_ms, "
                    f"every {FAST_PERIOD_MS} ms while the cgroup's major faults grow "
                    "(forcing the memcg LRU statistics flush); nothing else: no advice, no "
                    "limits, no placement",
            "arms_with_reader": [c for c, v in per.items() if v["period_ms"] > 0],
            "arms_without_reader": [c for c, v in per.items() if v["period_ms"] <= 0],
            "per_arm": per}


def _write(rows: list[RunRow], summary: dict[str, Any], output: Path,
           command: list[str]) -> None:
    import csv

    from objtier.experiments.chart import plot_comparison

    write_csv(rows, output / "compare.csv")
    write_summary(summary, output / "summary.json")
    with open(output / "compare.csv") as f:
        dict_rows = list(csv.DictReader(f))
    alive = "; ".join(f"{c} {survival_text(summary['medians'][c])}"
                      for c in ("baseline", "objtier"))
    title = (f"{Path(command[0]).name}: local {summary['local']['given']} of "
             f"{summary['unlimited']['footprint_bytes'] >> 20} MiB, {summary['repeat']} runs "
             f"each\n{alive}")
    plot_comparison([(Path(command[0]).name, summary, dict_rows)], output / "compare.png", title)
