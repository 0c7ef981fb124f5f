"""A plan ranked by measured sensitivity (`plan --sensitivity`) against one ranked by sampled
accesses, at the same fast budget, on the real swap tier.

    .venv/bin/python bench/sweep_sensitivity_plan.py --from /tmp/sweep-perobject \
        --workload bfs --fast 15M [--repeat 5]

Reads what bench/sweep_perobject.py left in --from: the recording NAME.otr and the per-object
table NAME-objects/sensitivity.csv. Then:
  1. `objtier plan NAME.otr --fast F --algo rank --no-backfill` with and without
     `--sensitivity`: the fast objects of each plan;
  2. runs, with the per-object sweep's machinery (objtier.sweep.perobject.run_arms: the fast
     objects mlocked by the runtime, the others MADV_COLD, zram, stat-flush reader), in
     interleaved rounds: all fast, the sampled plan, the measured plan. Both plans run under
     one cgroup limit: the larger (--limit max) or smaller (min) fast set's live peak + what
     lies outside the objects + the runtime's 4 MiB unlocked room (with max, the other plan
     gets the difference as unlocked room; with min, the runtime locks of the larger set only
     what fits 4 MiB under the limit);
  3. prints each plan's fast objects, its median FoM ratio to all fast, and the additive
     model's prediction for it from the per-object table.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np

from objtier import workloads

REPO = Path(__file__).resolve().parent.parent
BIN = REPO / "src" / "objtier" / "_native" / "bin"
OBJTIER = REPO / ".venv" / "bin" / "objtier"


def main() -> int:
    from objtier.plan import load_plan
    from objtier.plan.sensitivity import read_sensitivity
    from objtier.sweep.fom import FomSource
    from objtier.sweep.perobject import (Arm, PerObjectSettings, candidate_rows, live_peak,
                                         load_objects, ratios, run_arms)

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", default="/tmp/sweep-perobject")
    parser.add_argument("--workload", default="bfs")
    parser.add_argument("--fast", default="15M")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--graph-scale", type=int, default=17)
    parser.add_argument("--limit", choices=["max", "min"], default="max",
                        help="one cgroup limit for both plans from the larger (max) or the "
                        "smaller (min) fast set: with min, the runtime locks only what fits "
                        "4 MiB under the limit")
    args = parser.parse_args()
    source = Path(args.source)
    graph = source / f"kron{args.graph_scale}.graph"
    command = workloads.suite("sweep", [args.workload], graph=graph, bin_dir=BIN)[args.workload]
    recording = source / f"{args.workload}.otr"
    table = source / f"{args.workload}-objects" / "sensitivity.csv"
    out = source / f"{args.workload}-plans-{args.fast}-{args.limit}"
    out.mkdir(exist_ok=True)
    print(f"# {' '.join(sys.argv)}\n# {platform.node()}, "
          f"{_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC, repeat {args.repeat}\n")
    objects, page = load_objects(recording)
    measured = read_sensitivity(table)
    loss = {(str(k), int(o)): float(v) for k, o, v in
            zip(measured.context_key, measured.occurrence, measured.loss)}
    row_of = {(str(objects.context_key[r]), int(objects.occurrence[r])): int(r)
              for r in np.flatnonzero(objects.plannable)}
    arms = [Arm(0, "all fast")]
    plans = {}
    for name, extra in (("sampled", []), ("measured", ["--sensitivity", str(table)])):
        path = out / f"plan-{name}.json"
        subprocess.run([str(OBJTIER), "plan", str(recording), "--fast", args.fast, "--algo",
                        "rank", "--no-backfill", "-o", str(path), *extra], check=True,
                       capture_output=True)
        fast = {(e["context_key"], int(e["occurrence"])) for e in load_plan(path)["entries"]
                if e["tier"] == "fast"}
        # slow: every measured candidate (>= 1 % of the accesses) the plan leaves slow; the
        # objects under 1 % stay fast in every arm, as in the per-object sweep
        slow = tuple(int(r) for r in candidate_rows(objects)
                     if (str(objects.context_key[r]), int(objects.occurrence[r])) not in fast)
        plans[name] = (fast, slow)
        arms.append(Arm(len(arms), f"{name} plan", slow, int(objects.size[list(slow)].sum())))
    # one cgroup limit for both plans (the larger fast set's live peak + what lies outside
    # the objects + 4 MiB): the smaller fast set gets the difference as unlocked room, where
    # the kernel keeps whichever pages are hot
    plannable = np.flatnonzero(objects.plannable)
    peaks = {arm.index: live_peak(objects, np.setdiff1d(plannable, np.asarray(
        arm.slow_rows, dtype=np.int64))) for arm in arms[1:]}
    pick = max if args.limit == "max" else min
    for arm in arms[1:]:
        arm.room_bytes = pick(peaks.values()) - peaks[arm.index]
    settings = PerObjectSettings(recording=recording, repeat=args.repeat,
                                 timeout_s=args.timeout, output=out / "runs", force=True)
    run_arms(command, objects, page, arms, settings, FomSource("line"), lambda text: None,
             lambda i, n, s: None)
    result = {r["object"]: r for r in ratios(arms, True)}
    print(f"## {args.workload}, --fast {args.fast}: `{' '.join(Path(command[0]).name if i == 0 else c for i, c in enumerate(command))}`\n")
    print("| plan (rank, no backfill) | fast objects | slow MiB | predicted ratio (additive) "
          "| measured median ratio | 95% CI of its median FoM | runs failed |")
    print("|---|---|---|---|---|---|---|")
    report = {}
    all_fast = [v for v in arms[0].foms if v is not None]
    for name, (fast, slow) in plans.items():
        arm = result[f"{name} plan"]
        slow_keys = [(str(objects.context_key[r]), int(objects.occurrence[r])) for r in slow]
        predicted = 1.0 / (1.0 + sum(max(0.0, loss.get(k, 0.0)) for k in slow_keys))
        labels = ", ".join(str(objects.label[row_of[k]]).split(" <- ")[-1]
                           for k in sorted(fast) if k in row_of) or "none"
        measured = ("–" if arm["median_ratio"] is None else f"{arm['median_ratio']:.3f}")
        ci = arm.get("ci") or [None, None]
        interval = "–" if None in ci else f"{ci[0]:.4g}..{ci[1]:.4g}"
        print(f"| {name} | {labels} | {arm['size'] / 2**20:.1f} | {predicted:.3f} | "
              f"{measured} | {interval} | {arm['failed']} |")
        report[name] = {"fast": sorted(map(list, fast)), "predicted": predicted,
                        "measured": arm["median_ratio"], "ci": arm["ci"],
                        "foms": arms[1 if name == "sampled" else 2].foms}
    print(f"\nall fast: median {np.median(all_fast):.4g} over {len(all_fast)} runs")
    (out / "result.json").write_text(json.dumps({"all_fast": arms[0].foms, **report}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
