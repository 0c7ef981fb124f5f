"""Dynamic placement on the real swap tier: the fair kernel baseline, a static plan and the
dynamic schedule, interleaved, under one memory cgroup with zram.

    .venv/bin/python bench/swap_dynamic.py [--workload alternating|bfs_urand|cc_urand|...]
        [--local 50%] [--repeat 3] [--scale 17] [--trials bfs=4,cc=1] [--advice-rate 2000]
        [--schedule auto|hot|nextuse|static] [--min-gain 0.05]
        [-o bench-out/swap-dynamic]

The program is built with `objtier cc` (so that the exact recording and the measured runs have
the same allocation contexts) and recorded once with the trace sampler; `objtier plan` makes a
static plan (spill, the best static plan of the simulator's graph runs) and a dynamic one
(`--dynamic`, schedule auto: the best of hot, next-use, static and their per-phase stitching,
simulated on the recording; where it keeps the static candidate, the spill plan itself, which
the dynamic arm then runs as the static arm does)
for the budget; the schedule's time offsets are scaled to the measured run's clock (the plain
run's wall time over the recording's, then a calibration run of the dynamic arm under the
cgroup, not counted). Local memory = the given share of the traced peak live footprint
plus --slack-mib (8 MiB) for what the trace does not see (text, stack, runtime). Arms, interleaved per repeat:
kernel (the program alone, with compare's stat-flush reader: the fair baseline), static (the
runtime enforcing the spill plan) and dynamic (the runtime running the schedule). Per run:
wall time, the cgroup's major faults and anonymous refaults (its swap-ins), exit status, and
for dynamic the runtime's advice counts. Prints medians; writes runs.csv. Needs root, clang.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(REPO))

MIB = 1 << 20
SLACK = 8 * MIB


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="alternating")
    parser.add_argument("--alternating-args", default="64,4,10,4096")
    parser.add_argument("--local", default="50%")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scale", type=int, default=17)
    parser.add_argument("--trials", default="bfs=4,cc=1")
    parser.add_argument("--advice-rate", type=int, default=2000)
    parser.add_argument("--schedule", default="auto",
                        choices=("auto", "hot", "nextuse", "static"),
                        help="plan --dynamic --schedule")
    parser.add_argument("--slack-mib", type=float, default=SLACK / MIB,
                        help="cgroup limit = budget + this (what the trace does not see; 8)")
    parser.add_argument("--max-calls", type=int, default=0,
                        help="plan --dynamic --max-calls (auto: schedules over it left out)")
    parser.add_argument("--min-gain", type=float, default=None,
                        help="plan --dynamic --min-gain (auto: the share of the static "
                        "schedule's simulated swap-ins another must save; 0.05)")
    parser.add_argument("--window-ms", type=float, default=0.0,
                        help="plan --dynamic --window-ms (0: the schedule auto picks)")
    parser.add_argument("--no-calibrate", dest="calibrate", action="store_false",
                        help="no calibration run of the dynamic arm before the measured ones")
    parser.add_argument("-o", "--output", default=str(REPO / "bench-out" / "swap-dynamic"))
    args = parser.parse_args()

    from exact_setup import TRIAL_OPTION, build_exact, record_exact

    from objtier.record import enforce
    from objtier.experiments.compare_swap import one_run
    from objtier.record.dynamic_run import read_stats, schedule_env
    from objtier.native import NATIVE_DIR
    from objtier.plan import load_plan, to_text
    from objtier.plan import peak_live_bytes
    from objtier.record.launch import runtime_env
    from objtier.sim.events import from_trace
    from objtier.tiers.spool import tmpfs_base
    from objtier.tiers.statflush import DEFAULT_PERIOD_MS
    from objtier.tiers.swap import SwapTier
    from objtier.trace import open_trace

    out = Path(args.output) / f"{args.workload}-{args.local.rstrip('%')}"
    out.mkdir(parents=True, exist_ok=True)
    if args.workload == "alternating":
        kernel, run_args = "alternating", args.alternating_args.split(",")
    else:
        from compare_swap import make_graphs

        kernel, kind = args.workload.split("_")
        trials = dict(item.split("=") for item in args.trials.split(","))
        make_graphs(args.scale, out.parent / "graphs", NATIVE_DIR / "bin")
        run_args = ["-f", str(out.parent / "graphs" / f"{kind}{args.scale}.csr"),
                    TRIAL_OPTION[kernel], trials[kernel], "-t", "1"]
    exe = build_exact(kernel, out.parent / "bin")
    trace_dir = out / "exact.otr"
    record_exact(exe, run_args, trace_dir)
    trace = open_trace(trace_dir)
    source = from_trace(trace)
    footprint = peak_live_bytes(source.size, source.alloc_ns, source.free_ns)
    share = float(args.local.rstrip("%")) / 100
    budget = int(footprint * share) // 4096 * 4096
    local = budget + int(args.slack_mib * MIB)
    plans = {}
    for name, extra in (("static", ["--algo", "spill", "--no-backfill"]),
                        ("dynamic", ["--algo", "spill", "--no-backfill",
                                     "--dynamic", "--window-ms", str(args.window_ms),
                                     "--schedule", args.schedule,
                                     "--max-calls", str(args.max_calls),
                                     *(["--min-gain", str(args.min_gain)]
                                       if args.min_gain is not None else [])])):
        path = out / (f"plan-{name}.json" if name == "static" else
                      f"plan-dynamic-{args.schedule}-{args.window_ms:g}"
                      f"{f'-c{args.max_calls}' if args.max_calls else ''}"
                      f"{f'-g{args.min_gain:g}' if args.min_gain is not None else ''}.json")
        if not path.exists():   # made once per recording (auto simulates its candidates)
            subprocess.run([PY, "-m", "objtier", "plan", str(trace_dir), "--fast", str(budget),
                            *extra, "-o", str(path)], check=True, stdout=subprocess.DEVNULL)
        plans[name] = load_plan(path)
    (out / "plan-static.txt").write_text(to_text(plans["static"]))
    # schedule auto may keep the static plan itself (no dynamic section, the same spill
    # plan as the static arm's): the dynamic arm then runs it as the static arm does
    fallback = "dynamic" not in plans["dynamic"]
    section = plans["dynamic"].get("dynamic") or {
        "mode": "static plan", "steps": [], "window_ms": 0,
        "simulated_swap_ins": plans["dynamic"]["dynamic_choice"]["simulated_swap_ins"]}
    min_size = str(enforce.plan_min_size(plans["dynamic"]))
    base = {"OBJTIER_SAMPLER": "none", "OBJTIER_MIN_SIZE": min_size,
            "OBJTIER_MLOCK_LIMIT": str(budget)}
    command = [str(exe), *run_args]
    # the schedule's offsets are in recorded time: scaled to this run's clock, first by the
    # plain run's wall time over the recording's, then by a calibration run's under the cgroup
    traced_s = (int(source.end_ns) - int(source.start_ns)) / 1e9
    plain = subprocess.run(["/usr/bin/time", "-f", "%e", *command], capture_output=True,
                           text=True, check=True)
    section["clock_scale"] = min(max(float(plain.stderr.split()[-1]) / traced_s, 1e-6), 1e6)

    # the runtime writes its counts at exit inside the cgroup: on tmpfs (objtier.tiers.spool)
    side = tempfile.TemporaryDirectory(prefix="objtier-spool-", dir=tmpfs_base())

    def dynamic_env() -> tuple[dict, Path]:
        if fallback:
            (out / "plan-dynamic.txt").write_text(to_text(plans["dynamic"]))
            return runtime_env({**base, "OBJTIER_PLAN": str((out / "plan-dynamic.txt")
                                                             .resolve())}), out / "none"
        schedule, stats = schedule_env(plans["dynamic"], out, args.advice_rate)
        stats = Path(side.name) / stats.name
        schedule["OBJTIER_DYNAMIC_STATS"] = str(stats)
        return runtime_env({**base, **schedule}), stats

    envs = {
        "kernel": None,
        "static": runtime_env({**base, "OBJTIER_PLAN": str((out / "plan-static.txt").resolve())}),
    }
    envs["dynamic"], stats_path = dynamic_env()
    runs = out / "runs"
    runs.mkdir(exist_ok=True)
    rows = []
    print(f"footprint {footprint / MIB:.1f} MiB, budget {budget / MIB:.1f} MiB, cgroup "
          f"{local / MIB:.1f} MiB; schedule {section.get('mode')}, {len(section['steps'])} "
          f"steps; recorded {traced_s:.2f} s, plain run scale {section['clock_scale']:.4f}",
          file=sys.stderr)
    with SwapTier(local) as tier:
        if args.calibrate and section.get("window_ms"):
            r = one_run(tier, "calibrate", 0, 0, command, envs["dynamic"], 1800.0, runs,
                        plans["static"], None, DEFAULT_PERIOD_MS)
            if r.returncode == 0:
                section["clock_scale"] = min(max(r.wall_s / traced_s, 1e-6), 1e6)
                envs["dynamic"], stats_path = dynamic_env()
            print(f"calibration run: {r.wall_s:.2f} s, scale {section['clock_scale']:.4f}",
                  file=sys.stderr)
        for i in range(1, args.repeat + 1):
            for config in ("kernel", "static", "dynamic"):
                order = len(rows) + 1
                print(f"run {order}: {config} #{i}", file=sys.stderr, flush=True)
                r = one_run(tier, config, i, order, command, envs[config], 1800.0, runs,
                            plans["static"], None, DEFAULT_PERIOD_MS)
                row = {"config": config, "repeat": i, "order": order, "rc": r.returncode,
                       "wall_s": r.wall_s, "majfault": r.memcg_pgmajfault,
                       "refault_anon": r.memcg_refault_anon, "oom": r.memcg_oom_kills}
                if config == "dynamic":
                    stats = read_stats(stats_path) or {}
                    stats_path.unlink(missing_ok=True)
                    row.update({k: stats.get(k) for k in (
                        "steps_applied", "calls_mlock", "calls_munlock", "calls_pageout",
                        "calls_cold", "calls_willneed", "calls_failed", "actions_dropped",
                        "objects_matched", "willneed_bytes", "advice_ns", "thread_cpu_ns",
                        "actions_deferred", "actions_absent", "guard_passes",
                        "guard_bytes")})
                rows.append(row)
    # the finished runs' output less its timings (numbers with a decimal point)
    outputs = {re.sub(r"\d+\.\d+", "T",
                      (runs / f"{r['order']:02d}-{r['config']}-{r['repeat']}.out").read_text())
               for r in rows if r["rc"] == 0}
    with open(out / "runs.csv", "w", newline="") as f:
        keys = sorted({k for r in rows for k in r}, key=lambda k: list(rows[-1]).index(k)
                      if k in rows[-1] else 99)
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    med = {}
    for config in ("kernel", "static", "dynamic"):
        rs = [r for r in rows if r["config"] == config]
        ok = [r for r in rs if r["rc"] == 0]
        med[config] = {
            "ok": f"{len(ok)}/{len(rs)}",
            "wall_s": statistics.median(r["wall_s"] for r in ok) if ok else float("nan"),
            "majfault": statistics.median(r["majfault"] or 0 for r in ok) if ok else 0,
            "refault": statistics.median(r["refault_anon"] or 0 for r in ok) if ok else 0,
        }
    dyn = [r for r in rows if r["config"] == "dynamic"]
    calls = statistics.median(sum((r.get(k) or 0) for k in (
        "calls_mlock", "calls_munlock", "calls_pageout", "calls_cold", "calls_willneed"))
        for r in dyn) if dyn else 0
    k = med["kernel"]["wall_s"]
    print("| arm | runs ok | wall s (median) | vs kernel | major faults | anon refaults |")
    print("|---|---|---|---|---|---|")
    for config, m in med.items():
        print(f"| {config} | {m['ok']} | {m['wall_s']:.2f} | {k / m['wall_s']:.2f}× | "
              f"{m['majfault']:,.0f} | {m['refault']:,.0f} |")
    over = {k: statistics.median((r.get(k) or 0) for r in dyn) if dyn else 0
            for k in ("willneed_bytes", "advice_ns", "thread_cpu_ns")}
    print(f"dynamic: median {calls:,.0f} advice calls per run, "
          f"{over['willneed_bytes'] / MIB:.1f} MiB prefetched, {over['advice_ns'] / 1e6:.0f} ms "
          f"in advice calls, {over['thread_cpu_ns'] / 1e6:.0f} ms CPU in the schedule's thread; "
          f"schedule {section.get('mode')} (clock scale {section['clock_scale']:.4f}); "
          f"outputs identical: {len(outputs) == 1}")
    (out / "summary.json").write_text(json.dumps({"medians": med, "advice_calls": calls,
                                                  "overhead": over,
                                                  "schedule": section.get("mode"),
                                                  "simulated_swap_ins":
                                                  section.get("simulated_swap_ins"),
                                                  "clock_scale": section["clock_scale"],
                                                  "outputs_identical": len(outputs) == 1,
                                                  "footprint": footprint, "budget": budget,
                                                  "local": local}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
