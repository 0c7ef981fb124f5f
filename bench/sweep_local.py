"""`objtier sweep --knob local` on project workloads: a Table-I-style ranking, and the
sweep's own overhead per run.

    .venv/bin/python bench/sweep_local.py [-o bench-out/sweep-local] [--repeat 3]
        [--levels 100,90,80,70,60,50] [--timeout 60]

Runs `objtier sweep --suite` (root: memory cgroup + zram, stat-flush reader at 10 ms) over
stream, ptrchase and kmeans at sizes whose runs stay short under swap, then prints the ranked
table (suite.md) and, per program, the overhead: elapsed wall time of its sweep less the
footprint run and the runs' own wall times, per run [ms] (cgroup limit write, memory.stat
reads, FoM parsing, the result files rewritten after every run).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = REPO / "src" / "objtier" / "_native" / "bin"
OBJTIER = REPO / ".venv" / "bin" / "objtier"

SUITE = [
    ("stream", [str(BIN / "stream"), "-s", "1500000", "-n", "4", "-t", "2"]),
    ("ptrchase", [str(BIN / "ptrchase"), "-s", "48M", "-n", "300000", "-t", "2"]),
    ("kmeans", [str(BIN / "kmeans"), "-n", "250000", "-d", "34", "-i", "6", "-t", "2"]),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default="bench-out/sweep-local")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--levels", default="100,90,80,70,60,50")
    parser.add_argument("--timeout", default="60")
    args = parser.parse_args()
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    suite = out.parent / f"{out.name}.suite.txt"
    suite.write_text("".join(f"{name}: {' '.join(cmd)}\n" for name, cmd in SUITE))
    command = [str(OBJTIER), "sweep", "--suite", str(suite), "--knob", f"local={args.levels}",
               "--repeat", str(args.repeat), "--timeout", args.timeout, "-q", "-o", str(out),
               "--force"]
    started = time.monotonic()
    run = subprocess.run(command)
    elapsed = time.monotonic() - started
    print(f"\n# {' '.join(command)}\n# {elapsed:.0f} s, {platform.node()}, "
          f"{_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC\n")
    print((out / "suite.md").read_text())
    for sub in sorted(p for p in out.iterdir() if p.is_dir()):
        doc = json.loads((sub / "sweep.json").read_text())
        runs = [run for level in doc["levels"] for run in level["fom"]]
        import csv
        import statistics

        with open(sub / "sweep.csv") as f:
            rows = list(csv.DictReader(f))
        walls = [float(r["wall_s"]) for r in rows if r["wall_s"]]
        over = [1000 * float(r["overhead_s"]) for r in rows if r["overhead_s"]]
        print(f"{sub.name}: footprint {doc['config']['footprint_bytes'] >> 20} MiB, "
              f"{len(runs)} runs, sum of run walls {sum(walls):.1f} s, sweep overhead per run "
              f"median {statistics.median(over):.1f} ms, max {max(over):.1f} ms")
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
