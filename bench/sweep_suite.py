"""`objtier sweep --suite` on project workloads with one knob: a Table-I-style ranking, and
the sweep's own overhead per run.

    .venv/bin/python bench/sweep_suite.py [--knob local] [--levels 100,90,80,70,60,50]
        [--repeat 3] [--timeout 60] [--program-threads 2] [-o /tmp/sweep-bench/local]
    .venv/bin/python bench/sweep_suite.py --knob bandit --levels 0,25,50,75,100 \
        --program-threads 1 -o /tmp/sweep-bench/bandit
    .venv/bin/python bench/sweep_suite.py --only stream,ptrchase,kmeans --repeat 10 \
        --calibration CAL/calibration.json     # thresholds in GB/s and ns too

Runs `objtier sweep --suite` over stream, ptrchase, kmeans, gups, bfs and cc (the graph kernels
load one Kronecker graph written once by graphgen, `--graph-scale`, so that generation is not
part of every run; `--only` picks programs) at sizes whose runs stay short under swap (local needs root: memory cgroup + zram, stat-flush reader at 10 ms), then prints
the ranked table (suite.md) and, per program, its footprint, runs, and the sweep's own time
per run (`overhead_s` in sweep.csv: the knob's set-up and read-back around the run, FoM
parsing, the run appended to sweep.csv) [ms].
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

from objtier import workloads

REPO = Path(__file__).resolve().parent.parent
BIN = REPO / "src" / "objtier" / "_native" / "bin"
OBJTIER = REPO / ".venv" / "bin" / "objtier"

SUITE = list(workloads.suite("sweep-suite", bin_dir=BIN).items())  # {t}, {graph} filled below


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default="/tmp/sweep-bench/local")
    parser.add_argument("--knob", default="local")
    parser.add_argument("--program-threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--levels", default="100,90,80,70,60,50")
    parser.add_argument("--timeout", default="60")
    parser.add_argument("--graph-scale", type=int, default=17)
    parser.add_argument("--only", default=",".join(name for name, _ in SUITE))
    parser.add_argument("--calibration", metavar="FILE",
                        help="a calibration.json of the same knob and levels (`objtier sweep "
                        "--calibrate`): each program's thresholds also in GB/s and ns")
    args = parser.parse_args()
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    chosen = [(name, cmd) for name, cmd in SUITE if name in args.only.split(",")]
    graph = out.parent / f"kron{args.graph_scale}.graph"
    if any("{graph}" in cmd for _, cmd in chosen) and not graph.exists():
        subprocess.run([str(BIN / "graphgen"), "-g", str(args.graph_scale), "-o", str(graph)],
                       check=True, capture_output=True)
    suite = out.parent / f"{out.name}.suite.txt"
    suite.write_text("".join(
        f"{name}: {' '.join(c.replace('{t}', str(args.program_threads)).replace('{graph}', str(graph)) for c in cmd)}\n"
        for name, cmd in chosen))
    command = [str(OBJTIER), "sweep", "--suite", str(suite), "--knob",
               f"{args.knob}={args.levels}",
               "--repeat", str(args.repeat), "--timeout", args.timeout, "-q", "-o", str(out),
               "--force"]
    calibration = None
    if args.calibration:
        from objtier.sweep.calibrate import in_units, load_calibration

        calibration = load_calibration(Path(args.calibration))
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
        footprint = doc["config"].get("footprint_bytes")
        print(f"{sub.name}: " + (f"footprint {footprint >> 20} MiB, " if footprint else "")
              + f"{len(runs)} runs, sum of run walls {sum(walls):.1f} s, sweep overhead per run "
              f"median {statistics.median(over):.1f} ms, max {max(over):.1f} ms")
        cells = []
        for level in doc["levels"]:
            took = [v for v in level.get("measured", {}).get("bandit_gbps", []) if v]
            perf = level["performance"]
            cells.append(f"{level['label']}: {'-' if perf is None else f'{100 * perf:.0f}%'}"
                         + (f" (bandit {statistics.median(took):.1f} GB/s)" if took else ""))
        print("    median FoM / baseline: " + ", ".join(cells))
        if calibration:
            units = in_units(doc["thresholds"], calibration, doc["series"][0]["threads"]
                             or args.program_threads)
            print("    thresholds in units: " + ", ".join(
                f"T{p}: " + ("not reached" if u["level"] is None else
                             f"{u['level']:g} = {u['gbps']} GB/s, {u['ns']} ns")
                for p, u in units.items()))
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
