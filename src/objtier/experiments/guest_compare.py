"""The swap-tier comparison in the QEMU guest: the modern kernel baselines (MGLRU, DAMON_RECLAIM,
pressure-driven memory.reclaim) and objtier, interleaved, under one cgroup v2 limit.

    1. footprint: one unlimited run in the guest (a cgroup with memory.max = max): the cgroup's
                  peak less the file page cache still charged at its end
    2. profile:   recordings on the host of the same binary with the same arguments (the guest
                  runs the host's userland, so allocation contexts match); the plan is made on
                  the host for local = PCT of the guest footprint (compare's planner and fitted
                  margin)
    3. runs:      `repeat` rounds; each round runs every arm once, the arms' order rotated by
                  one per round (interleaved: drift of the shared host falls on every arm)
    4. results:   DIR/runs.csv (one row per run), DIR/summary.json (per arm: survival k of n,
                  medians of time and swap-ins, ratio of medians to the kernel arm's)

All times are the guest's clock (emulated: TCG, CPU speed emulated for every arm alike).
"""
from __future__ import annotations

import csv
import json
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from objtier.errors import ObjtierError, UsageError
from objtier.experiments.guest_swap import GuestRun, GuestSwapSettings, GuestSwapTier

MIN_FOOTPRINT_BYTES = 16 << 20


@dataclass
class GuestCompareSettings:
    locals: tuple[str, ...] = ("50%",)
    repeat: int = 3
    arms: tuple[str, ...] = ("kernel", "damon-reclaim", "psi-reclaim", "objtier")
    env: dict[str, str] = field(default_factory=lambda: {"OMP_NUM_THREADS": "1"})
    profiles: int | None = None      # host recordings for the plan (None: compare's default)
    swap: GuestSwapSettings = field(default_factory=GuestSwapSettings)
    algo: str = "auto"               # the planner (auto: the kernel model chooses)


def _median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarize(rows: list[GuestRun]) -> dict[str, Any]:
    """Per local size and arm: survival, medians; ratios only between arms that all survived."""
    out: dict[str, Any] = {}
    for local in dict.fromkeys(r.local_bytes for r in rows):
        mine = [r for r in rows if r.local_bytes == local]
        per: dict[str, Any] = {}
        for arm in dict.fromkeys(r.arm for r in mine):
            runs = [r for r in mine if r.arm == arm]
            ok = [r for r in runs if r.survived]
            per[arm] = {"runs": len(runs), "survived": len(ok),
                        "oom_kills": sum(r.oom_kills for r in runs),
                        "timeouts": sum(r.timed_out for r in runs),
                        "wall_s": _median([r.wall_s for r in ok]),
                        "wall_range_s": ([round(min(r.wall_s for r in ok), 2),
                                          round(max(r.wall_s for r in ok), 2)] if ok else None),
                        "swapins": _median([r.refault_anon for r in ok]),
                        "pswpin": _median([r.vmstat.get("pswpin") for r in ok]),
                        "pswpout": _median([r.vmstat.get("pswpout") for r in ok]),
                        "sys_s": _median([r.sys_s for r in ok])}
        base = per.get("kernel")
        for arm, s in per.items():
            alive = base and base["survived"] == base["runs"] and s["survived"] == s["runs"]
            s["speedup_vs_kernel"] = (round(base["wall_s"] / s["wall_s"], 3)
                                      if alive and s["wall_s"] else None)
        out[str(local)] = per
    return out


def write_rows(rows: list[GuestRun], path: Path) -> None:
    flat = []
    for r in rows:
        d = asdict(r)
        d.update({f"vm_{k}": v for k, v in d.pop("vmstat").items()})
        d.update({f"side_{k}": v for k, v in d.pop("sidecar").items()})
        d.update({f"damon_{k}": v for k, v in d.pop("damon").items()})
        d["survived"] = r.survived
        flat.append(d)
    keys = list(dict.fromkeys(k for d in flat for k in d))
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows(flat)


def rows_from_csv(path: Path) -> list[GuestRun]:
    """The rows write_rows wrote (the counters this summary uses; prefixed columns back into
    their dicts)."""
    rows = []
    with open(path, newline="") as fh:
        for d in csv.DictReader(fh):
            num = lambda v: None if v in ("", None) else float(v) if "." in v else int(v)  # noqa: E731
            rows.append(GuestRun(
                arm=d["arm"], repeat=int(d["repeat"]), order=int(d["order"]),
                local_bytes=int(d["local_bytes"]), status=int(d["status"]),
                timed_out=d["timed_out"] == "True", wall_s=float(d["wall_s"]),
                user_s=float(d["user_s"]), sys_s=float(d["sys_s"]), oom_kills=int(d["oom_kills"]),
                refault_anon=num(d["refault_anon"]), memcg_pswpin=num(d["memcg_pswpin"]),
                memcg_pswpout=num(d["memcg_pswpout"]), peak_bytes=num(d["peak_bytes"]),
                file_bytes=num(d["file_bytes"]),
                vmstat={k[3:]: num(v) for k, v in d.items() if k.startswith("vm_") and v},
                sidecar={k[5:]: v for k, v in d.items() if k.startswith("side_")},
                damon={k[6:]: v for k, v in d.items() if k.startswith("damon_")}))
    return rows


def acts(plan: dict[str, Any]) -> bool:
    """The plan changes what the guest's kernel does: something locked, or sites kept in
    arenas of their own (enforcement.acts without large folios: the guest arms use none)."""
    from objtier import enforcement as enforce

    return enforce.locks_something(plan) or bool(plan.get("sites"))


def run_guest_compare(tb, command: list[str], output: Path, settings: GuestCompareSettings,
                      say: Callable[[str], None] = lambda text: None,
                      on_row: Callable[[GuestRun], None] = lambda row: None) -> dict[str, Any]:
    """The whole experiment for one program; see the module docstring. output: a new directory
    inside the project tree (the guest writes there)."""
    from objtier import enforcement as enforce
    from objtier.experiments.compare_swap import CompareSettings, plan_profile, record_profile
    from objtier.outputs import make_private_dir
    from objtier.record.launch import runtime_env
    from objtier.testbed.visible import check_guest_command

    if settings.repeat < 1:
        raise UsageError(f"repeat must be at least 1, got {settings.repeat}")
    command = check_guest_command(command, tb.repo)   # one line, not a failed guest run
    if output.exists() and any(output.iterdir()):
        raise UsageError(f"{output} exists and is not empty; choose another output directory")
    make_private_dir(output)
    rows: list[GuestRun] = []
    notes: list[str] = []
    with GuestSwapTier(tb, output / "guest", settings.swap, list(settings.arms), say) as tier:
        say("unlimited run in the guest (footprint)")
        free = tier.run("kernel", command, settings.env, 0, output / "guest" / "unlimited")
        if not free.survived:
            raise ObjtierError(f"the program failed unlimited in the guest (status "
                               f"{free.status}); see {output / 'guest' / 'unlimited.err'}")
        footprint = (free.peak_bytes or 0) - min(free.file_bytes or 0, free.peak_bytes or 0)
        if footprint < MIN_FOOTPRINT_BYTES:
            raise UsageError(f"footprint too small to limit: {footprint >> 20} MiB")
        say(f"footprint {footprint >> 20} MiB, unlimited {free.wall_s:.1f} s (guest clock)")
        plans: dict[str, tuple[dict, int, Path]] = {}
        if any(a.startswith("objtier") for a in settings.arms):
            base = CompareSettings(output=output, profiles=settings.profiles)
            # the guest's footprint decides, as compare's does on the host, whether the
            # later profiles watch the small-block sites (Boost PageRank's adjacency lists)
            profiles = record_profile(command, base, say, footprint)
            for local in settings.locals:
                local_bytes = enforce.parse_local(local, footprint)
                pdir = output / f"plan-{local.rstrip('%')}"
                pdir.mkdir(mode=0o700)
                plan, limit, margin = plan_profile(
                    profiles, command, CompareSettings(output=pdir, local=local,
                                                       algo=settings.algo),
                    footprint, local_bytes)
                plans[local] = (plan, limit, pdir)
                say(f"plan for {local}: mlock limit {limit >> 20} MiB (margin {margin >> 20} MiB)")
                if not acts(plan):
                    say(f"the plan for {local} locks nothing: the objtier arms run the program "
                        f"without the runtime")

        def recheck(local: str, local_bytes: int, kernel: GuestRun) -> None:
            """As compare does on the host: where the first kernel run shows the model off
            (model.check), fit it to that run and plan again before any objtier run (MGLRU
            keeps more than the model's LRU: BFS at 50 %, 75 k predicted, 17 k measured)."""
            from objtier.model.check import is_off

            plan, _, pdir = plans[local]
            model = plan.get("model") or {}
            measured = kernel.refault_anon
            if (not model.get("chosen") or not kernel.survived or not measured
                    or "calibration" in model
                    or not is_off(model["predicted_swapins"]["kernel"], measured)):
                return
            plan, limit, margin = plan_profile(
                profiles, command, CompareSettings(output=pdir, local=local,
                                                   algo=settings.algo),
                footprint, local_bytes, calibrate_to=float(measured))
            plans[local] = (plan, limit, pdir)
            why = plan["model"].get("why_not")
            say(f"model checked on kernel run 1 ({measured:,} swap-ins measured, "
                f"{model['predicted_swapins']['kernel']:,} predicted): "
                + (why if why else f"plan '{plan['model']['chosen']}', mlock limit "
                   f"{limit >> 20} MiB (margin {margin >> 20} MiB)"))

        runs = output / "runs"
        runs.mkdir(mode=0o700)
        arms = list(settings.arms)
        for local in settings.locals:
            local_bytes = enforce.parse_local(local, footprint)
            for i in range(1, settings.repeat + 1):
                k = (i - 1) % len(arms)
                for arm in arms[k:] + arms[:k]:
                    order = len(rows) + 1
                    stem = runs / f"{order:03d}-{local.rstrip('%')}-{arm}-{i}"
                    env = dict(settings.env)
                    trace_dir = None
                    if arm.startswith("objtier") and acts(plans[local][0]):
                        plan, limit, pdir = plans[local]
                        trace_dir = stem.with_suffix(".otr")
                        trace_dir.mkdir(mode=0o700)
                        env = runtime_env(enforce.PlanRun(
                            pdir / "plan.txt", limit, enforce.plan_min_size(plan),
                            output=trace_dir, pressure_guard=arm == "objtier",
                            large_folios=False).settings(), base=env)
                        env["OBJTIER_LOG"] = "1"   # the runtime says what the guard did
                    say(f"run {order}: {arm} at {local} #{i}")
                    t0 = time.monotonic()
                    row = tier.run(arm, command, env, local_bytes, stem, i, order)
                    row.sidecar["host_s"] = round(time.monotonic() - t0, 3)
                    if trace_dir is not None:
                        found = enforce.read_enforcement(plans[local][0], trace_dir)
                        if found:
                            row.sidecar.update(objects_matched=found.matched,
                                               placement_actions=found.actions,
                                               locked_bytes=found.locked_bytes,
                                               cold_bytes=found.cold_bytes)
                        err = stem.with_suffix(".err").read_text(errors="replace")
                        guard = [ln for ln in err.splitlines() if "at its limit" in ln]
                        row.sidecar["guard"] = guard[-1].strip() if guard else ""
                    rows.append(row)
                    on_row(row)
                    if arm == "kernel" and i == 1 and local in plans and settings.algo == "auto":
                        recheck(local, local_bytes, row)
                write_rows(rows, output / "runs.csv")
        summary = {"command": command, "footprint_bytes": footprint,
                   "date": time.strftime("%Y-%m-%d", time.gmtime()),
                   "unlimited_wall_s": free.wall_s, "guest_kernel": tier.kernel,
                   "lru_gen": tier.lru_gen, "guest_clock_rate": tier.clock_rate,
                   "swap": f"zram {settings.swap.zram_mib} MiB",
                   "clock": "guest (emulated, TCG)", "settings": asdict(settings),
                   "locals": {loc: enforce.parse_local(loc, footprint) for loc in settings.locals},
                   "arms": summarize(rows), "notes": notes}
    (output / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    return summary
