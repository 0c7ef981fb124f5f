"""The kernel model's error over a suite: predicted vs measured swap-ins per (program, local,
arm), from the summary.json files `objtier compare --tier swap` wrote.

    .venv/bin/python bench/model_error.py DIR [DIR ...]    # compare output directories,
                                                           # searched for */summary.json

Prints one markdown table (program, local, arm, predicted, measured, error) and the share of
cells within +-25 % (issue goal: >= 80 %). Figures are estimated (the model) beside measured
(the cgroup's anonymous refaults, pages). Also writes a results file to bench/results/
(objtier.bench_results; --results-dir, --no-results): every cell, and the share within per
directory given.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from objtier import bench_results

WITHIN = 0.25


def cells(summary: dict) -> list[dict]:
    """One row per arm of one compare's model check (none without a check)."""
    check = summary.get("model_check")
    if not check:
        return []
    program = Path(summary["command"][-1] if summary["command"][0].endswith("python")
                   else summary["command"][0]).name
    local = summary["local"]["given"]
    rows = []
    for arm, row in check["arms"].items():
        measured = row.get("measured_swapins")
        if measured is None:
            continue
        err = row.get("swapin_error")
        rows.append({"program": program, "local": local, "arm": arm,
                     "predicted": row["predicted_swapins"], "measured": measured,
                     "error": err, "within": not row.get("off")})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+", type=Path)
    bench_results.add_arguments(parser)
    args = parser.parse_args(argv)
    rows, dates = [], []
    for d in args.dirs:
        for path in sorted(d.rglob("summary.json")):
            try:
                summary = json.loads(path.read_text())
                found = cells(summary)
                for row in found:
                    row["dir"] = str(d)
                rows += found
                if found and summary.get("machine", {}).get("date"):
                    dates.append(summary["machine"]["date"])
            except (OSError, ValueError, KeyError) as error:
                print(f"model_error: skipping {path}: {error}", file=sys.stderr)
    if not rows:
        print("model_error: no compare summary with a model check found", file=sys.stderr)
        return 2
    print("| program | local | arm | predicted (est.) | measured | error |")
    print("|---|---|---|---:|---:|---:|")
    for r in rows:
        err = "–" if r["error"] is None else f"{100 * r['error']:+.0f} %"
        print(f"| {r['program']} | {r['local']} | {r['arm']} | {r['predicted']:,} | "
              f"{r['measured']:,.0f} | {err}{'' if r['within'] else ' (off)'} |")
    inside = sum(r["within"] for r in rows)
    print(f"\n{inside} of {len(rows)} cells within +-{100 * WITHIN:.0f} % "
          f"(or {500} swap-ins) of the measurement")
    bench_results.save(args, lambda: results_record(rows, args.dirs, sorted(dates), argv))
    return 0


def results_record(rows: list[dict], dirs: list[Path], dates: list[str],
                   argv: list[str] | None) -> dict:
    """The results file: every cell; within ±25 % per directory given and in all."""
    per = {str(d): (sum(r["within"] for r in rows if r["dir"] == str(d)),
                    sum(1 for r in rows if r["dir"] == str(d))) for d in dirs}
    inside = sum(r["within"] for r in rows)
    figure = (f"within ±{100 * WITHIN:.0f} %: {inside} of {len(rows)} cells; "
              + ", ".join(f"{Path(d).name} {k} of {n}" for d, (k, n) in per.items()))
    if bench_results.words(figure) > bench_results.MAX_WORDS:
        figure = f"within ±{100 * WITHIN:.0f} %: {inside} of {len(rows)} cells"
    worst = max((r for r in rows if r["error"] is not None), key=lambda r: abs(r["error"]),
                default=None)
    finding = ("" if worst is None else
               f"largest error {100 * worst['error']:+.0f} % ({worst['program']} at "
               f"{worst['local']}, {worst['arm']} arm)")
    share = inside / len(rows)
    return bench_results.make(
        "model_error", "prediction",
        title="kernel model's predicted swap-ins vs measured, per program, local size and arm, "
              f"over {', '.join(Path(d).name for d in dirs)}",
        kind="estimated vs real", command=bench_results.script_command(
            sys.argv[1:] if argv is None else argv, "bench/model_error.py"),
        figure=figure, finding=finding or "no cell with an error",
        goal=f"≥ 80 % of cells within ±25 %: {'met' if share >= 0.8 else 'not met'}",
        medians={"cells": rows}, ratios={"within": {d: list(v) for d, v in per.items()},
                                         "within_all": [inside, len(rows)]},
        raw=None, date=dates[0] if dates else None, load_=None, commit_=None,
        note="cells: the model's prediction (estimated) against the compares' medians (real); "
             "date, machine and commit are the compares' (raw runs in their own results files)")


if __name__ == "__main__":
    sys.exit(main())
