"""`objtier sweep --per-object` on project workloads, and how well the per-object table
predicts combined placements (predicted vs measured).

    .venv/bin/python bench/sweep_perobject.py [-o /tmp/sweep-perobject] [--repeat 3]
        [--workloads stream,kmeans]

Per workload (needs root: memory cgroup + zram, the runtime enforcing plans):
  1. record it (`objtier record --rate 20000`);
  2. the per-object sweep (objtier.sweep.perobject.run_per_object): all fast, and each object
     with >= 1 % of the accesses alone slow, `repeat` interleaved rounds;
  3. combined placements: for each prefix of the curve's order (the k objects with the most
     loss per byte fast, the other measured ones slow; k = 0 .. n-2, so at least two objects are
     slow), run that placement the same way (its own all-fast arm, interleaved) and compare
     its measured FoM ratio with the additive prediction 1 / (1 + sum of the slow ones' loss).
Prints a Markdown table per workload; everything is written under the output directory.
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

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
BIN = REPO / "src" / "objtier" / "_native" / "bin"
OBJTIER = REPO / ".venv" / "bin" / "objtier"

WORKLOADS = {
    "stream": [str(BIN / "stream"), "-s", "1500000", "-n", "4", "-t", "2"],
    "kmeans": [str(BIN / "kmeans"), "-n", "250000", "-d", "34", "-i", "6", "-t", "2"],
    # loads a graph written once by graphgen: generation's temporaries (the largest objects
    # of a run that generates its graph) are then not in the recording
    "bfs": [str(BIN / "bfs"), "-f", "{graph}", "-n", "4", "-t", "2"],
}


def main() -> int:
    from objtier.sweep.fom import FomSource
    from objtier.sweep.perobject import (Arm, PerObjectSettings, load_objects, ratios,
                                         run_arms, run_per_object)

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default="/tmp/sweep-perobject")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--graph-scale", type=int, default=17)
    args = parser.parse_args()
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    graph = out / f"kron{args.graph_scale}.graph"
    fom = FomSource("line")
    print(f"# {' '.join(sys.argv)}\n# {platform.node()}, "
          f"{_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC, repeat {args.repeat}\n")
    for name in args.workloads.split(","):
        command = [c.replace("{graph}", str(graph)) for c in WORKLOADS[name]]
        if str(graph) in command and not graph.exists():
            subprocess.run([str(BIN / "graphgen"), "-g", str(args.graph_scale), "-o",
                            str(graph)], check=True, capture_output=True)
        recording = out / f"{name}.otr"
        subprocess.run([str(OBJTIER), "record", "-q", "-f", "--rate", "20000", "-o",
                        str(recording), "--", *command], check=True, capture_output=True)
        settings = PerObjectSettings(recording=recording, repeat=args.repeat,
                                     timeout_s=args.timeout, output=out / f"{name}-objects",
                                     force=True)
        doc = run_per_object(command, settings, fom, lambda text: None)
        print(f"## {name}: `{' '.join(Path(c).name if i == 0 else c for i, c in enumerate(command))}`"
              f", footprint {doc['footprint_bytes'] >> 20} MiB\n")
        print("| object | size MiB | accesses % | FoM ratio (only it slow) | 95% CI of its median FoM | loss |")
        print("|---|---|---|---|---|---|")
        for row in doc["objects"]:
            ci = row["ci"]
            print(f"| {row['object']} | {row['size'] / 2**20:.1f} | "
                  f"{100 * row['access_share']:.1f} | {row['median_ratio']:.3f} | "
                  f"{ci[0]:.4g}..{ci[1]:.4g} | {row['loss']:.3g} |")
        print("\ncurve (predicted): " + ", ".join(
            f"{100 * p['fast_fraction']:.0f}% fast -> {p['predicted_fom']:.3f}"
            for p in doc["curve"]) + "\n")
        objects, page = load_objects(recording)
        by_label = {row["object"]: row for row in doc["objects"]}

        def predict(slow: list[str]) -> float:
            """The curve's additive model: a negative loss (faster when slow: noise) is 0."""
            return 1.0 / (1.0 + sum(max(0.0, by_label[label]["loss"]) for label in slow))
        order = [p["added"] for p in doc["curve"][1:]]      # labels, most loss per byte first
        rows_of = {str(objects.label[r]): int(r) for r in np.flatnonzero(objects.plannable)}
        combos = []
        for k in range(0, max(0, len(order) - 1)):
            slow = order[k:]
            if len(slow) < 2:
                continue
            combos.append((k, slow))
        if not combos:
            print("(fewer than two measured objects: no combined placement to check)\n")
            continue
        arms = [Arm(0, "all fast")] + [
            Arm(i, f"fast: {', '.join(order[:k]) or 'none'}",
                tuple(rows_of[label] for label in slow),
                sum(by_label[label]["size"] for label in slow))
            for i, (k, slow) in enumerate(combos, 1)]
        check = PerObjectSettings(recording=recording, repeat=args.repeat,
                                  timeout_s=args.timeout, output=out / f"{name}-combined",
                                  force=True)
        run_arms(command, objects, page, arms, check, fom, lambda text: None,
                 lambda i, n, s: None)
        measured = ratios(arms, True)
        print("| objects slow | predicted FoM ratio (additive) | measured FoM ratio | error |")
        print("|---|---|---|---|")
        for (k, slow), arm in zip(combos, arms[1:]):
            predicted = predict(slow)
            got = next(r for r in measured if r["object"] == arm.label)["median_ratio"]
            print(f"| {len(slow)} ({', '.join(s.split(' <- ')[-1] for s in slow)}) | "
                  f"{predicted:.3f} | {got:.3f} | {got - predicted:+.3f} |")
        print()
        (out / f"{name}-check.json").write_text(json.dumps(
            {"combos": [{"slow": slow, "predicted": predict(slow),
                "measured": next(r for r in measured if r["object"] == arm.label)[
                    "median_ratio"]} for (k, slow), arm in zip(combos, arms[1:])]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
