"""Overhead of `objtier record` (default sampler and rate) on the workloads.

For each workload: --repeat interleaved pairs (plain, recorded). Reports the median wall time of
each, their ratio, the median of the workload's own timed region (FOM time) and its ratio, the
samples the recording captured, samples per second and trace bytes per sample. Graph workloads
load a graph file written beforehand, so generation is not in the measurement.

    .venv/bin/python bench/record_overhead.py [--repeat 5] [--scale 18] [--only bfs,cc]
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from objtier.native import binary  # noqa: E402
from objtier.trace import open_trace  # noqa: E402
from objtier.workloads import parse_fom  # noqa: E402

OBJTIER = REPO / ".venv" / "bin" / "objtier"


def workloads(graph: Path) -> dict[str, list[str]]:
    return {
        "bfs": [str(binary("bfs")), "-f", str(graph), "-n", "16"],
        "bc": [str(binary("bc")), "-f", str(graph), "-i", "4"],
        "cc": [str(binary("cc")), "-f", str(graph), "-n", "8"],
        "stream": [str(binary("stream")), "-s", "20000000"],
        "gups": [str(binary("gups"))],
        "kmeans": [str(binary("kmeans"))],
    }


def timed(command: list[str]) -> tuple[float, float]:
    started = time.monotonic()
    run = subprocess.run(command, capture_output=True, text=True)
    wall = time.monotonic() - started
    if run.returncode != 0:
        raise SystemExit(f"failed: {' '.join(command)}\n{run.stderr}")
    return wall, parse_fom(run.stdout).seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--scale", type=int, default=18)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="objtier-bench-"))
    graph = work / f"kron{args.scale}.graph"
    subprocess.run([str(binary("graphgen")), "-g", str(args.scale), "-o", str(graph)],
                   check=True, capture_output=True)
    rows = []
    for name, command in workloads(graph).items():
        if args.only and name not in args.only.split(","):
            continue
        plain, traced, plain_fom, traced_fom, samples, size = [], [], [], [], [], []
        for i in range(args.repeat):
            wall, fom = timed(command)
            plain.append(wall)
            plain_fom.append(fom)
            out = work / f"{name}-{i}.otr"
            wall, fom = timed([str(OBJTIER), "record", "-q", "-o", str(out), "--", *command])
            traced.append(wall)
            traced_fom.append(fom)
            trace = open_trace(out)
            samples.append(trace.samples.num_rows)
            size.append(sum(f.stat().st_size for f in out.glob("proc-*.otr")))
        p, t = statistics.median(plain), statistics.median(traced)
        pf, tf = statistics.median(plain_fom), statistics.median(traced_fom)
        s = statistics.median(samples)
        rows.append((name, p, t, t / p, pf, tf, tf / pf, s, s / t, statistics.median(size) / max(s, 1)))
        print(f"{name}: wall {p:.3f}s -> {t:.3f}s ({t / p:.3f}x), timed region {pf:.3f}s -> "
              f"{tf:.3f}s ({tf / pf:.3f}x), {s:.0f} samples", flush=True)
    today = datetime.date.today().isoformat()
    print(f"\n{platform.node()}, {today}, {args.repeat} interleaved pairs, medians\n")
    print("| workload | plain wall (s) | recorded wall (s) | ratio | timed region ratio | "
          "samples | samples/s | bytes/sample |")
    print("|---|---|---|---|---|---|---|---|")
    for name, p, t, r, pf, tf, rf, s, rate, bps in rows:
        print(f"| {name} | {p:.3f} | {t:.3f} | {r:.3f} | {rf:.3f} | {s:.0f} | {rate:.0f} | "
              f"{bps:.1f} |")


if __name__ == "__main__":
    main()
