"""`objtier compare --dynamic [online]`: one more arm, `objtier-dynamic` (or `objtier-online`:
the runtime's online placement, prepare_online), in compare's rotation on the
swap tier: the runtime running a dynamic schedule (objtier.plan.dynamic, plan version 2) learned
from compare's first profile for the same mlock limit as the static plan, next to the fair
kernel baseline and the static plan, under the same cgroup and the same stat-flush reader.

The schedule is chosen as `objtier plan --dynamic` chooses it (schedule auto: hot, next-use and
the static spill plan simulated on the profile, the fewest swap-ins kept), with the static
arm's own plan as one more candidate and as the fallback (prepare), locking no more than that
plan does at its peak. Per run the runtime's
counts (advice calls per kind, steps applied, bytes prefetched, time in advice calls, the schedule
thread's CPU) go to runs/NN-objtier-dynamic-I.dynamic.txt; summary.json's "dynamic" holds
the schedule's make-up and the medians of those counts.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from objtier.tiers.spool import Spool

ARM = "objtier-dynamic"
RESERVE = 0.1            # share of the mlock limit never locked (plan --reserve)
WINDOW_MS = 0.0          # steps at the phase switches only: a sampled profile has too few
                         # samples per page for windows inside a phase
MIN_ACCESSES = 1.0       # a sampled access stands for many: one is enough to lock a page
COUNTS = ("steps_applied", "steps_skipped", "actions_dropped", "calls_mlock", "calls_munlock",
          "calls_pageout", "calls_cold", "calls_willneed", "calls_failed", "willneed_bytes",
          "advice_ns", "thread_cpu_ns", "locked_peak_bytes", "objects_matched", "guard_passes",
          "guard_bytes")


ONLINE_ARM = "objtier-online"
ONLINE_COUNTS = ("ticks", "windows", "calls_mlock", "calls_munlock", "calls_cold",
                 "calls_pageout", "calls_willneed", "calls_failed", "bytes_locked",
                 "bytes_unlocked", "locked_peak_bytes", "actions_dropped", "lead_changes",
                 "advice_ns", "thread_cpu_ns", "switch_ticks", "recalls", "guard_passes",
                 "guard_bytes")


@dataclass
class DynamicArm:
    plan: dict[str, Any]              # {"version": 2, "dynamic": section}
    env: dict[str, str]               # the runtime's settings for the arm's runs
    stats_path: Path                  # where the runtime writes its counts at exit
    runs: list[dict[str, float]] = field(default_factory=list)
    arm: str = ARM                    # objtier-dynamic, or objtier-online (prepare_online)
    spool: Spool | None = None        # the tmpfs directory stats_path is in, if any

    def close(self) -> None:
        """After the last run: the spool's leftovers go to their place, the spool away."""
        if self.spool is not None:
            self.spool.land()

    def collect(self, order: int, repeat: int, runs_dir: Path) -> dict[str, float]:
        """After one run of the arm: its counts (kept next to its output)."""
        from objtier.record.dynamic_run import read_stats

        stats = read_stats(self.stats_path) or {}
        if self.stats_path.exists():
            target = runs_dir / f"{order:02d}-{self.arm}-{repeat}.dynamic.txt"
            target.write_text(self.stats_path.read_text())
            target.chmod(0o600)
            self.stats_path.unlink()
        self.runs.append(stats)
        return stats

    def summary(self) -> dict[str, Any]:
        section = self.plan["dynamic"]
        online = self.arm == ONLINE_ARM
        keys = ONLINE_COUNTS if online else COUNTS
        med = {k: statistics.median(r.get(k, 0.0) for r in self.runs) for k in keys
               if self.runs}
        calls = [sum(r.get(k, 0.0) for k in keys if k.startswith("calls_")
                     and k != "calls_failed") for r in self.runs]
        common = {"lock_bytes": section["lock_bytes"], "runs_with_counts": len(self.runs),
                  "median": med,
                  "median_advice_calls": statistics.median(calls) if calls else 0}
        if online:
            return {"schedule": "online", "period_ms": section["period_ms"], **common}
        return {"schedule": section.get("mode", ""),
                "simulated_swap_ins": section.get("simulated_swap_ins", {}),
                "steps": len(section["steps"]),
                "actions": sum(len(s["actions"]) for s in section["steps"]), **common}


def planned_peak(plan: dict[str, Any]) -> int:
    """The most bytes the static plan keeps fast at once: its largest phase's fast bytes (the
    whole program's entries count in every phase that has no entry for the same object)."""
    per: dict[str, dict[tuple, int]] = {}
    for e in plan.get("entries", []):
        key = (e.get("context_key"), e.get("occurrence"), e.get("size_min"), e.get("size_max"))
        per.setdefault(str(e.get("phase", "*")), {})[key] = int(e.get("fast_bytes") or 0)
    root = per.get("*", {})
    return max([sum({**root, **own}.values()) for own in per.values()] or [0])


def _bounded_by_static_plan(directory: Path, limit: int, page_bytes: int
                            ) -> tuple[dict[str, Any], int]:
    """The static arm's plan (DIR/plan.json) and the most a moving placement may lock: what
    that plan keeps fast at its peak, at most the limit less RESERVE, whole pages, >= 1 page."""
    static_plan = json.loads((directory / "plan.json").read_text())
    lock = min(int(limit * (1.0 - RESERVE)), planned_peak(static_plan))
    return static_plan, max(lock // page_bytes * page_bytes, page_bytes)


def prepare(profile: Path, limit: int, page_bytes: int, directory: Path, advice_rate: int,
            say: Callable[[str], None]) -> DynamicArm:
    """Learn the schedule from `profile` for an mlock limit of `limit` bytes; write
    DIR/plan-dynamic.json and the runtime's text form. The static arm's plan (DIR/plan.json,
    written before) bounds it: the schedule locks no more than that plan keeps fast at its
    peak (the plan's margin was left for the pages it does not lock: a schedule locking 7.9
    of BC's 10.75 MiB was OOM-killed in every run where the plan, locking 2.5 MiB, lived),
    and it is auto's fallback: a candidate that does not simulate 5 % fewer swap-ins than
    that plan run as a schedule (from a count of 400 or more) loses to it, and the arm then
    runs the plan itself, with no schedule (and no advice counts)."""
    from objtier.outputs import write_private
    from objtier.plan.dynamic_file import SECTION_VERSION
    from objtier.record import enforce
    from objtier.record.dynamic_run import schedule_env
    from objtier.record.launch import runtime_env
    from objtier.sim.dynamic import section_from_trace
    from objtier.trace import open_trace

    trace = open_trace(profile)
    static_plan, lock = _bounded_by_static_plan(directory, limit, page_bytes)
    section = section_from_trace(trace, lock, page_bytes, WINDOW_MS, MIN_ACCESSES,
                                 fast_bytes=limit, advice_rate=advice_rate,
                                 static_plan=static_plan)
    plan = {"version": SECTION_VERSION, "entries": [], "dynamic": section}
    write_private(directory / "plan-dynamic.json", json.dumps(plan, indent=1) + "\n",
                  "dynamic plan")
    actions = sum(len(s["actions"]) for s in section["steps"])
    say(f"dynamic schedule ({section.get('mode', '')}): {len(section['steps'])} steps, "
        f"{actions} actions on {len(section['objects'])} objects, at most "
        f"{lock >> 20} MiB locked")
    dyn_dir = directory / "dynamic"
    dyn_dir.mkdir(mode=0o700, exist_ok=True)
    if section.get("mode") == "plan":
        # the fallback runs the static plan itself (its locks at each allocation, as the
        # static arm, without its PLACEMENT trace): a schedule locking the same pages from
        # its thread was slower with the same faults (docs/benchmarks.md)
        say("dynamic arm: no schedule simulated the margin below the static plan: the arm "
            "runs that plan")
        run = enforce.PlanRun(directory / "plan.txt", limit, enforce.plan_min_size(static_plan),
                              large_folios=bool(static_plan.get("large_folios")))
        return DynamicArm(plan, runtime_env(run.settings()), dyn_dir / "dynamic-stats.txt")
    spool = Spool(dyn_dir)   # the counts are written at exit inside the cgroup (tiers.spool)
    schedule, stats = schedule_env(plan, spool.path, advice_rate)
    env = runtime_env({"OBJTIER_SAMPLER": "none",
                       "OBJTIER_MIN_SIZE": str(enforce.plan_min_size(plan)),
                       "OBJTIER_MLOCK_LIMIT": str(limit), **schedule})
    return DynamicArm(plan, env, stats, spool=spool)


def prepare_online(limit: int, page_bytes: int, directory: Path, advice_rate: int,
                   period_ms: int, say: Callable[[str], None],
                   phase_memory: bool = True) -> DynamicArm:
    """The arm objtier-online: the runtime's online placement (schedule online) locking at
    most what the static arm's plan (DIR/plan.json, written before) keeps fast at its peak,
    as a schedule learned ahead would (prepare); DIR/plan-online.json holds its plan."""
    from objtier.outputs import write_private
    from objtier.plan.dynamic_file import SECTION_VERSION, online_section
    from objtier.record import enforce
    from objtier.record.dynamic_run import schedule_env
    from objtier.record.launch import runtime_env

    static_plan, lock = _bounded_by_static_plan(directory, limit, page_bytes)
    section = online_section(lock, page_bytes, period_ms, advice_rate, phase_memory)
    plan = {"version": SECTION_VERSION, "entries": [], "dynamic": section}
    write_private(directory / "plan-online.json", json.dumps(plan, indent=1) + "\n",
                  "online plan")
    say(f"online placement: every {period_ms} ms"
        f"{' and at phase switches (phase memory)' if phase_memory else ''}, at most "
        f"{lock >> 20} MiB locked")
    online_dir = directory / "online"
    online_dir.mkdir(mode=0o700, exist_ok=True)
    spool = Spool(online_dir)   # the counts are written at exit inside the cgroup (tiers.spool)
    settings, stats = schedule_env(plan, spool.path, advice_rate)
    env = runtime_env({"OBJTIER_MIN_SIZE": str(enforce.plan_min_size(static_plan)),
                       **settings})
    return DynamicArm(plan, env, stats, arm=ONLINE_ARM, spool=spool)


def summary_line(summary: dict[str, Any]) -> str:
    """One line of what the dynamic arm did, from summary()."""
    from objtier.record.dynamic_run import guard_text

    med = summary.get("median", {})
    guard = guard_text(med)
    if summary.get("schedule") == "online":
        switches = (f" ({med['switch_ticks']:,.0f} ticks at phase switches, "
                    f"{med.get('recalls', 0):,.0f} into a phase seen before)"
                    if med.get("switch_ticks") else "")
        return (f"{ONLINE_ARM}: every {summary['period_ms']} ms{switches}; per run (median) "
                f"{summary['median_advice_calls']:,.0f} advice calls, "
                f"{med.get('bytes_locked', 0) / 2**20:.1f} MiB locked and "
                f"{med.get('bytes_unlocked', 0) / 2**20:.1f} MiB unlocked in all, "
                f"{med.get('lead_changes', 0):,.0f} changes of the most-locked object, "
                f"{med.get('advice_ns', 0) / 1e6:.1f} ms in advice calls, "
                f"{med.get('thread_cpu_ns', 0) / 1e6:.1f} ms CPU in the placement's thread, "
                f"{med.get('actions_dropped', 0):,.0f} actions dropped for the call budget"
                f"{guard}")
    return (f"objtier-dynamic: schedule {summary['schedule']}, {summary['steps']} steps, "
            f"{summary['actions']} actions; per run (median) "
            f"{summary['median_advice_calls']:,.0f} advice calls, "
            f"{med.get('willneed_bytes', 0) / 2**20:.1f} MiB prefetched, "
            f"{med.get('advice_ns', 0) / 1e6:.1f} ms in advice calls, "
            f"{med.get('thread_cpu_ns', 0) / 1e6:.1f} ms CPU in the schedule's thread, "
            f"{med.get('actions_dropped', 0):,.0f} actions dropped for the call budget{guard}")
