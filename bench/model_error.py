"""The kernel model's error over a suite: predicted vs measured swap-ins per (program, local,
arm), from the summary.json files `objtier compare --tier swap` wrote.

    .venv/bin/python bench/model_error.py DIR [DIR ...]    # compare output directories,
                                                           # searched for */summary.json

Prints one markdown table (program, local, arm, predicted, measured, error) and the share of
cells within +-25 % (issue goal: >= 80 %). Figures are estimated (the model) beside measured
(the cgroup's anonymous refaults, pages).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

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
    args = parser.parse_args(argv)
    rows = []
    for d in args.dirs:
        for path in sorted(d.rglob("summary.json")):
            try:
                rows += cells(json.loads(path.read_text()))
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
