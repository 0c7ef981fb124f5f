"""The runtime's pressure guard on the swap tier: what it costs and what it saves.

    .venv/bin/python bench/swap_guard.py DIR [DIR ...] [--repeat 2] [--configs LIST]
        [-o bench-out/guard]

Each DIR is the output of an earlier `objtier compare --tier swap` (summary.json, plan.txt,
plan.json). Its command, local memory size, mlock limit and plan are reused as they are, so
nothing is profiled or planned again and the three configurations differ only in the runtime:

    baseline   no runtime: kernel reclaim alone
    guard      the plan enforced, pressure guard on (the default of `objtier run`)
    no-guard   the plan enforced, `--no-guard` (OBJTIER_PRESSURE_MS=0)
    guard-2    the guard keeping 2 % of the limit inactive instead of 12 (OBJTIER_INACTIVE_PCT=2)
    guard-idle the guard thread watching but never advising (OBJTIER_INACTIVE_PCT=0)
    guard-100ms, guard-1s  the guard looking every 100 ms or 1 s instead of 10 ms
                           (OBJTIER_PRESSURE_MS)

(--configs picks and orders them; default the first three) run alternately (baseline, guard,
no-guard, baseline, ...) for --repeat rounds under one memory
cgroup limited to the comparison's local size, with a new zram device behind it. Needs root.
Writes <out>/<name>/runs.csv and prints a Markdown table: per workload and configuration, runs
finished of runs started, OOM kills, and the medians over finished runs of wall time and of the
cgroup's swap-ins (workingset_refault_anon deltas; pswpin is system-wide).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

# configuration -> (the guard on, extra runtime settings); baseline runs without the runtime
CONFIGS = {"baseline": (None, {}), "guard": (True, {}), "no-guard": (False, {}),
           "guard-2": (True, {"OBJTIER_INACTIVE_PCT": "2"}),
           "guard-idle": (True, {"OBJTIER_INACTIVE_PCT": "0"}),
           "guard-100ms": (True, {"OBJTIER_PRESSURE_MS": "100"}),
           "guard-1s": (True, {"OBJTIER_PRESSURE_MS": "1000"})}
DEFAULT_CONFIGS = "baseline,guard,no-guard"


def load_comparison(path: Path) -> dict:
    summary = json.loads((path / "summary.json").read_text())
    return {"name": path.name, "command": summary["command"],
            "local": int(summary["local"]["bytes"]),
            "mlock_limit": int(summary["local"]["mlock_limit_bytes"]),
            "plan_text": path / "plan.txt", "plan": json.loads((path / "plan.json").read_text()),
            "timeout": max(300.0, 100 * float(summary["unlimited"]["wall_s"]))}


def run_one(cmp: dict, repeat: int, out: Path, configs: list[str]) -> list:
    from objtier.record import enforce
    from objtier.experiments.compare_swap import one_run
    from objtier.experiments.results import write_csv
    from objtier.record.launch import runtime_env
    from objtier.tiers.swap import SwapTier

    runs_dir = out / cmp["name"]
    runs_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    with SwapTier(cmp["local"], swap="zram") as tier:
        for i in range(1, repeat + 1):
            for config in configs:
                order = len(rows) + 1
                env = trace_dir = None
                guard, extra = CONFIGS[config]
                if guard is not None:
                    trace_dir = runs_dir / f"{order:02d}-{config}-{i}.otr"
                    trace_dir.mkdir(exist_ok=True)
                    settings = enforce.PlanRun(
                        cmp["plan_text"], cmp["mlock_limit"], enforce.plan_min_size(cmp["plan"]),
                        output=trace_dir, pressure_guard=guard)
                    env = runtime_env({**settings.settings(), **extra})
                row = one_run(tier, config, i, order, cmp["command"], env, cmp["timeout"],
                              runs_dir, cmp["plan"], trace_dir)
                print(f"  {cmp['name']} {config} #{i}: rc {row.returncode}, "
                      f"{row.wall_s:.1f} s, swap-ins {row.memcg_refault_anon}", file=sys.stderr)
                rows.append(row)
    write_csv(rows, runs_dir / "runs.csv")
    return rows


def summarize(name: str, rows: list, configs: list[str]) -> list[str]:
    cells = []
    for config in configs:
        mine = [r for r in rows if r.config == config]
        done = [r for r in mine if r.ok]
        ooms = sum(r.oom_killed for r in mine)
        wall = f"{statistics.median(r.wall_s for r in done):.1f}" if done else "-"
        swapins = [r.memcg_refault_anon for r in done if r.memcg_refault_anon is not None]
        swap = f"{statistics.median(swapins) / 1e6:.2f}M" if swapins else "-"
        cells.append(f"{len(done)}/{len(mine)} ({ooms} OOM) | {wall} | {swap}")
    return [f"| {name} | " + " | ".join(cells) + " |"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dirs", nargs="+", type=Path, help="`objtier compare` output directories")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--configs", default=DEFAULT_CONFIGS,
                        help=f"comma-separated, of {', '.join(CONFIGS)} "
                        f"(default {DEFAULT_CONFIGS})")
    parser.add_argument("-o", "--output", type=Path, default=REPO / "bench-out" / "guard")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("swap_guard: needs root (memory cgroup, zram)")
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown or not configs:
        sys.exit(f"swap_guard: unknown configuration(s) {', '.join(unknown) or '(none)'}; "
                 f"choose from {', '.join(CONFIGS)}")
    comparisons = [load_comparison(d) for d in args.dirs]
    table = ["| workload | " + " | ".join(f"{c}: done (OOM) | wall s | swap-ins" for c in configs)
             + " |", "|---" * (1 + 3 * len(configs)) + "|"]
    for cmp in comparisons:
        table += summarize(cmp["name"], run_one(cmp, args.repeat, args.output, configs), configs)
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"{when}, {platform.node()}, kernel {platform.release()}, {os.cpu_count()} CPUs, "
          f"{args.repeat} round(s), order {', '.join(configs)}")
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
