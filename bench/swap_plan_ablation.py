"""Which part of a swap-tier plan costs or buys swap-ins: a `compare` plan, the same plan with
some objects' locks taken out, and no lock at all, run in turn under `objtier run --local`.

    .venv/bin/python bench/swap_plan_ablation.py COMPARE_DIR [--drop KEY[,KEY...]]
        [--drop-split] [--repeat 3] [-o bench-out/ablation/NAME.csv]

COMPARE_DIR is the output of `objtier compare --tier swap` (its plan.json and summary.json: the
command, the local bytes and the mlock margin the plan was made for). Arms, in turn per repeat:
`as-is` (the plan), `dropped` (the objects whose context key starts with one of KEY, and with
--drop-split every split or "pages" object, set slow) and `none` (every object slow: the
runtime with nothing locked, i.e. kernel reclaim plus the pressure guard). Every run has
`run`'s stat-flush reader. Per run: wall time, exit status and the major faults of the program
(getrusage of the children; the program's swap-ins from zram), which unlike the wall time do
not depend on the machine's load. Prints one line per run and the medians; writes a CSV.
Needs root.
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OBJTIER = [sys.executable, "-m", "objtier"]


def variant(plan: dict, unlock) -> dict:
    """The plan with every entry for which unlock(entry) holds set slow."""
    out = json.loads(json.dumps(plan))
    for entry in out["entries"]:
        if unlock(entry):
            entry["tier"], entry["fast_bytes"] = "slow", 0
            entry.pop("ranges", None)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("compare_dir")
    parser.add_argument("--drop", default="", help="context-key prefixes, comma-separated")
    parser.add_argument("--drop-split", action="store_true",
                        help="also take out every split or pages object's fast part")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("-o", "--output", default=None)
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    src = Path(args.compare_dir)
    try:
        summary = json.loads((src / "summary.json").read_text())
        plan = json.loads((src / "plan.json").read_text())
    except (OSError, ValueError) as error:
        parser.error(f"{src} is no compare output: {error}")
    keys = tuple(k for k in args.drop.split(",") if k)
    if not keys and not args.drop_split:
        parser.error("say what to take out: --drop KEY and/or --drop-split")
    local = summary["local"]["bytes"]
    margin = summary["local"]["margin_bytes"]
    command = summary["command"]
    arms = {
        "as-is": plan,
        "dropped": variant(plan, lambda e: e["context_key"].startswith(keys) or (
            args.drop_split and e["tier"] in ("split", "pages"))),
        "none": variant(plan, lambda e: True),
    }
    rows = []
    with tempfile.TemporaryDirectory(prefix="ablation-") as scratch:
        paths = {}
        for name, document in arms.items():
            paths[name] = Path(scratch) / f"{name}.json"
            paths[name].write_text(json.dumps(document))
        for i in range(1, args.repeat + 1):
            for name, path in paths.items():
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.monotonic()
                run = subprocess.run([*OBJTIER, "run", "-q", "--plan", str(path), "--local",
                                      f"{local // 1024}K", "--mlock-margin",
                                      f"{margin // 1024}K", "--", *command],
                                     capture_output=True, text=True, cwd=REPO)
                wall = time.monotonic() - start
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                row = {"arm": name, "repeat": i, "wall_s": round(wall, 3),
                       "major_faults": after.ru_majflt - before.ru_majflt,
                       "returncode": run.returncode}
                rows.append(row)
                print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    for name in arms:
        mine = [r for r in rows if r["arm"] == name]
        print(f"median {name}: {statistics.median(r['wall_s'] for r in mine):.2f} s, "
              f"{statistics.median(r['major_faults'] for r in mine):.0f} major faults, "
              f"{sum(r['returncode'] == 0 for r in mine)}/{len(mine)} finished")
    if args.output:
        out = Path(args.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
