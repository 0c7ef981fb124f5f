"""`objtier simulate`: replay a trace against tiering policies and cost presets."""

from __future__ import annotations

import argparse
import sys

from objtier import bounds as B
from objtier.errors import UsageError

# driver settings: (lowest, highest[, lowest excluded]) of their numbers; swap_reserve's
# [0, 1) is checked by the simulator (objtier.sim.run)
DRIVER_BOUNDS = {"bin_ms": (0, B.INTERVAL_MS_MAX, True), "period": (1, B.COUNT_MAX),
                 "scale": (1, B.COUNT_MAX), "chunk": (1, B.COUNT_MAX)}

NAME = "simulate"
HELP = "simulate kernel tiering policies and objtier plans on a recorded trace"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from objtier.sim.run import POLICIES

    parser.add_argument("trace", help="recording directory (run.otr/) or one .otr file")
    parser.add_argument("--fast", required=True, metavar="SIZE|PCT",
                        help="fast-tier capacity: a size (8G, 512M) or a percentage of the peak "
                             "live footprint (50%%)")
    parser.add_argument("--preset", default="cxl", metavar="NAME|FILE.toml",
                        help="cost preset: optane, cxl, remote-numa, hbm, zram, nvme, rdma, or a "
                             "TOML file (default: cxl)")
    parser.add_argument("--policy", default="first-touch,numab2,tpp,memtis,hemem,object,spill,"
                        "oracle", metavar="LIST",
                        help=f"comma-separated policies among {', '.join(POLICIES)}")
    parser.add_argument("--plan", metavar="plan.json",
                        help="objtier plan for the object and phases policies (default: "
                             "planned from this trace)")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="policy parameter (numab2.hot_threshold_ms=500, or bare to apply "
                             "to every policy that has it) or driver setting: page=4K|2M, "
                             "bin_ms=100, period=N (weight of samples without one), scale=N "
                             "(multiply every weight), expand=0|1 (fault sampler: replay its "
                             "estimated touches, default 1), seed=N, chunk=N, swap=0|1 (slow "
                             "tier is swap; default from the preset), swap_reserve=0.1")
    parser.add_argument("-o", "--output", metavar="DIR",
                        help="write simulate*.csv and simulate-*.png into DIR")


def _params(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--param {item!r}: expected KEY=VALUE")
        key, value = key.strip(), value.strip()
        bound = DRIVER_BOUNDS.get(key)
        if bound is not None:
            B.parse_float(value, f"--param {key}", *bound)
        elif key not in ("page", "swap"):  # those two are words (4K|2M, 0|1), checked later
            try:
                float(value)
            except ValueError:
                raise UsageError(f"--param {key}: {value!r} is not a number") from None
            B.parse_float(value, f"--param {key}")  # finite: nan and inf are refused
        out[key] = value
    return out


def model_line(path: str, fast: str) -> str | None:
    """The kernel model's swap-tier prediction for this recording, with --fast as the memory
    limit (objtier.model; docs/model.md); None when the recording has no scan windows."""
    from pathlib import Path

    from objtier import plan as planner
    from objtier.plan.pipeline import (ModelMemory, make_plan, other_bytes, read_recordings,
                                  recorded_footprint)

    profile = read_recordings([Path(path)])
    if not profile.traces or not profile.traces[0].windows.num_rows:
        return None
    foot = recorded_footprint(profile) or profile.footprint_bytes()
    local = planner.parse_budget(fast, foot).bytes
    made = make_plan(profile, "auto", planner.Budget(local, fast, None, foot),
                     memory=ModelMemory(local, other_bytes(foot, profile.objects, profile.traces),
                                        footprint_bytes=foot))
    c = made.choice
    if c is None:
        return f"kernel model not used: {made.model_note}"
    locked = (f", {c.placement.used_bytes / 2**20:.1f} MiB locked" if c.placement is not None
              else "")
    return (f"kernel model (swap tier, LRU; estimated): in {local / 2**20:.1f} MiB of memory, "
            f"{c.nothing.swapins:,.0f} swap-ins with nothing locked, {c.chosen.swapins:,.0f} "
            f"with its plan ('{c.name}'{locked}); `compare --tier swap` measures both")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from objtier.outputs import make_private_dir, private_umask
    from objtier.sim import load_preset, simulate
    from objtier.sim.output import print_table, write_csv, write_plots
    from objtier.trace import open_trace

    policies = [p.strip() for p in args.policy.split(",") if p.strip()]
    if not policies:
        raise UsageError("--policy: no policy given")
    if len(set(policies)) != len(policies):
        raise UsageError("--policy: a policy is listed twice")
    model = load_preset(args.preset)
    out = make_private_dir(args.output, exist_ok=True) if args.output else None
    plan_doc = None
    if args.plan:
        from objtier.plan import load_plan

        plan_doc = load_plan(args.plan)
    params = _params(args.param)
    trace = open_trace(args.trace)
    console = Console(stderr=True)
    sim = simulate(trace, policies, args.fast, model, params, plan_doc,
                   progress=lambda p: console.print(f"[dim]simulated {p}[/dim]"))
    # a pipe or file gets the full table rather than the 80-column default
    print_table(sim, Console() if sys.stdout.isatty() else Console(width=160))
    line = model_line(args.trace, args.fast)
    if line:
        console.print(line)
    for note in sim.notes:
        console.print(f"[yellow]note:[/yellow] {note}")
    for warning in sim.warnings:   # the samples cannot support the answer (sim.scaling)
        console.print(f"[bold yellow]warning:[/bold yellow] {warning}")
    if out is not None:
        with private_umask():
            paths = write_csv(sim, out) + write_plots(sim, out)
        console.print("wrote " + ", ".join(str(p) for p in paths))
    return 0
