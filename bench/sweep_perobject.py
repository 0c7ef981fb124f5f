"""`objtier sweep --per-object` on project workloads, and how well the per-object table
predicts combined placements (predicted vs measured).

    .venv/bin/python bench/sweep_perobject.py [-o /tmp/sweep-perobject] [--repeat 3]
        [--workloads stream,kmeans] [--pairs 4] [--program-threads 1]

Per workload (needs root: memory cgroup + zram, the runtime enforcing plans):
  1. record it (`objtier record --rate 20000`);
  2. the per-object sweep (objtier.sweep.perobject.run_per_object): all fast, each object
     with >= 1 % of the accesses alone slow, and every pair of the --pairs most accessed
     objects slow together, `repeat` interleaved rounds;
  3. combined placements: every set of two or more measured objects slow, the rest fast (up
     to 4 measured objects; with more, each prefix of the curve's order: the k objects with the
     most loss per byte fast, the others slow, k = 0 .. n-2), run that placement the same way (its own all-fast arm, interleaved) and compare
     its measured FoM ratio with the predictions of the additive, multiplicative and pairwise
     models (objtier.sweep.interaction). A check whose slow set is itself a measured pair is
     marked: the pairwise model saw that pair (in other runs) and is left out of its error.
Prints a Markdown table per workload; everything is written under the output directory.
"""

from __future__ import annotations

import argparse
import itertools
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

MAX_SUBSET_OBJECTS = 4     # up to 4 measured objects: check every slow set of 2 or more (11)

WORKLOADS = workloads.suite("sweep", bin_dir=BIN)  # {graph} and {t} filled in per run


def ratio_cell(row: dict) -> str:
    """An arm's FoM ratio, or its bound ("≥ Nx slower") / "killed" when it has none."""
    if row.get("median_ratio") is not None:
        return f"{row['median_ratio']:.3f}"
    if row.get("slower_at_least") is not None:
        return f"≥ {row['slower_at_least']:.3g}× slower"
    return row.get("result") or "no result"


def ci_cell(row: dict) -> str:
    ci = row.get("ci") or [None, None]
    return "–" if ci[0] is None or ci[1] is None else f"{ci[0]:.4g}..{ci[1]:.4g}"

def short(label: str) -> str:
    return label.split(" <- ")[-1]


def fmt(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def main() -> int:
    from objtier.sweep.fom import FomSource
    from objtier.sweep.interaction import MODELS, compare_models, pair_terms
    from objtier.sweep.perobject import (Arm, PerObjectSettings, load_objects, pair_table,
                                         ratios, run_arms, run_per_object)

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default="/tmp/sweep-perobject")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--graph-scale", type=int, default=17)
    parser.add_argument("--program-threads", type=int, default=1,
                        help="threads of each program (1: with 2 threads on a loaded 2-CPU "
                        "machine a thread waits at every barrier for the other to be scheduled)")
    parser.add_argument("--reuse", action="store_true",
                        help="take each workload's recording and per-object table from an "
                        "earlier run in the same -o; run only the combined placements")
    parser.add_argument("--pairs", type=int, default=4,
                        help="pair arms among this many most accessed objects (4)")
    args = parser.parse_args()
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    graph = out / f"kron{args.graph_scale}.graph"
    fom = FomSource("line")
    print(f"# {' '.join(sys.argv)}\n# {platform.node()}, "
          f"{_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC, repeat {args.repeat}\n")
    for name in args.workloads.split(","):
        command = [c.replace("{graph}", str(graph)).replace("{t}", str(args.program_threads))
                   for c in WORKLOADS[name]]
        if str(graph) in command and not graph.exists():
            subprocess.run([str(BIN / "graphgen"), "-g", str(args.graph_scale), "-o",
                            str(graph)], check=True, capture_output=True)
        recording = out / f"{name}.otr"
        earlier = out / f"{name}-objects" / "perobject.json"
        if args.reuse and earlier.exists():
            doc = json.loads(earlier.read_text())
            print(f"(the per-object table of {earlier}: {doc['machine'].get('date', '')})\n")
        else:
            subprocess.run([str(OBJTIER), "record", "-q", "-f", "--rate", "20000", "-o",
                            str(recording), "--", *command], check=True, capture_output=True)
            settings = PerObjectSettings(recording=recording, repeat=args.repeat,
                                         timeout_s=args.timeout,
                                         output=out / f"{name}-objects", force=True,
                                         pairs=args.pairs)
            doc = run_per_object(command, settings, fom, lambda text: None)
        print(f"## {name}: `{' '.join(Path(c).name if i == 0 else c for i, c in enumerate(command))}`"
              f", footprint {doc['footprint_bytes'] >> 20} MiB\n")
        print("| object | size MiB | accesses % | FoM ratio (only it slow) | 95% CI of its median FoM | loss |")
        print("|---|---|---|---|---|---|")
        for row in doc["objects"]:
            print(f"| {row['object']} | {row['size'] / 2**20:.1f} | "
                  f"{100 * row['access_share']:.1f} | {ratio_cell(row)} | {ci_cell(row)} | "
                  f"{row['loss']:.3g}{' (bound)' if row.get('loss_is_bound') else ''} |")
        print(f"\ncurve (predicted, {doc['model']} model): " + ", ".join(
            f"{100 * p['fast_fraction']:.0f}% fast -> {p['predicted_fom']:.3f}"
            for p in doc["curve"]) + "\n")
        objects, page = load_objects(recording)
        by_label = {row["object"]: row for row in doc["objects"]}
        losses = {label: row["loss"] for label, row in by_label.items()}
        terms = pair_terms(losses, pair_table(doc["pairs"]))
        if doc["pairs"]:
            print("| pair slow (the rest fast) | measured FoM ratio | interaction w = loss(pair) - sum of single losses |")
            print("|---|---|---|")
            for pair in doc["pairs"]:
                w = terms.get(frozenset(pair["objects"]))
                print(f"| {' + '.join(short(o) for o in pair['objects'])} | "
                      f"{ratio_cell(pair)} | {w:+.3g} |")
            print()
        order = [p["added"] for p in doc["curve"][1:]]      # labels, most loss per byte first
        rows_of = {str(objects.label[r]): int(r) for r in np.flatnonzero(objects.plannable)}
        if len(order) <= MAX_SUBSET_OBJECTS:       # every set of two or more slow objects
            combos = [list(c) for n in range(len(order), 1, -1)
                      for c in itertools.combinations(order, n)]
        else:                                      # the curve's prefixes
            combos = [order[k:] for k in range(0, len(order) - 1)]
        if not combos:
            print("(fewer than two measured objects: no combined placement to check)\n")
            continue
        arms = [Arm(0, "all fast", kind="all fast")] + [
            Arm(i, f"slow: {', '.join(slow)}", tuple(rows_of[label] for label in slow),
                sum(by_label[label]["size"] for label in slow), kind="set")
            for i, slow in enumerate(combos, 1)]
        check = PerObjectSettings(recording=recording, repeat=args.repeat,
                                  timeout_s=args.timeout, output=out / f"{name}-combined",
                                  force=True)
        run_arms(command, objects, page, arms, check, fom, lambda text: None,
                 lambda i, n, s: None)
        measured = {r["object"]: r["median_ratio"] for r in ratios(arms, True)}
        result = compare_models([{"slow": slow, "measured": measured[arm.label]}
                                 for slow, arm in zip(combos, arms[1:])], losses, terms)
        print("| objects slow (the rest fast) | additive | multiplicative | pairwise | "
              "measured (real) |")
        print("|---|---|---|---|---|")
        for row in result["checks"]:
            print(f"| {len(row['slow'])} ({', '.join(short(s) for s in row['slow'])})"
                  f"{' (a measured pair)' if row['in_sample'] else ''} | "
                  + " | ".join(f"{row[m]:.3f}" for m in MODELS)
                  + f" | {fmt(row['measured'])} |")
        print("\nmean |measured - predicted| over checks that are not a measured pair: "
              + ", ".join(f"{m} {fmt(v['mean_abs_error'])} ({v['checks']})"
                          for m, v in result["models"].items()) + "\n")
        (out / f"{name}-check.json").write_text(json.dumps(
            {"pairs": doc["pairs"], "singles": doc["objects"], **result}, indent=1,
            default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
