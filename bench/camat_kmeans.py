#!/usr/bin/env python3
"""The K-means false-sharing case: predicted (C-AMAT model) vs measured speedup of padding the
per-thread centre counts (kmeans_regions, update_centers_len).

    .venv/bin/python bench/camat_kmeans.py [--threads 2] [--repeat 7]

Predicted: kmeans_regions built with `objtier cc`, recorded with the ordered access stream
(2 threads, -n 20000 -i 2), model run on the unpadded and the padded stream; speedup = model
cycles unpadded / padded (simulated), and the update_centers_len terms of both.
Also predicted for the assignment step alone (the regions of the timed loop: their L1 active
cycles, unpadded / padded), since the recorded stream starts with the single-threaded set-up.
Measured: the gcc-built kmeans_regions (-n 200000 -i 10), unpadded and padded runs interleaved,
median wall time of each; speedup = median unpadded / median padded (real). Also the timed
loop's own time (the workload's FOM line), CPU time, and the same with 1 thread as a control
(padding cannot matter with one thread: its ratio is this machine's noise floor).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = [REPO / "workloads" / "kmeans" / "kmeans_regions.c", REPO / "workloads" / "common" / "wl.c"]
MODEL_ARGS = ["-n", "20000", "-i", "2"]
# the timed assignment step: the per-area functions and the OpenMP body that calls them
STEP_REGIONS = ("find_nearest_point", "update_membership", "update_centers_len",
                "update_new_centers")
RUN_ARGS = ["-n", "200000", "-i", "10"]


def predicted(threads: int, preset: str) -> dict:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "kmeans_regions"
        subprocess.run([sys.executable, "-m", "objtier", "cc", "-O2", "-fopenmp", "-o", str(exe),
                        *map(str, SOURCES), "-lm"], check=True)
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        for variant, extra in (("unpadded", []), ("padded", ["--padded"])):
            d = Path(tmp) / variant
            subprocess.run([sys.executable, "-m", "objtier", "camat", "--preset", preset,
                            "--regions", "--window", "0", "--stream", "6000000", "-o", str(d), "--", str(exe),
                            *MODEL_ARGS, *extra], check=True, env=env, stdout=subprocess.DEVNULL)
            doc = json.loads((d / "camat.json").read_text())
            region = next(r for r in doc["regions"] if r["region"] == "update_centers_len")
            l1 = next(lv for lv in region["levels"] if lv["level"] == "L1")
            out[variant] = {"cycles": doc["cycles"], "l1_camat": doc["levels"][0]["camat"],
                            "region_l1_camat": l1["camat"], "region_C_M": l1["C_M"],
                            "false_sharing": region["false_sharing_misses"],
                            "region_accesses": region["accesses"],
                            "region_active_share": region["l1_active_share"],
                            "step_active": sum(r["l1_active_share"] for r in doc["regions"]
                                               if r["region"] in STEP_REGIONS
                                               or "_omp_fn" in r["region"])}
    out["speedup"] = out["unpadded"]["cycles"] / out["padded"]["cycles"]
    out["step_speedup"] = out["unpadded"]["step_active"] / out["padded"]["step_active"]
    return out


def measured(threads: int, repeat: int) -> dict:
    exe = REPO / "src" / "objtier" / "_native" / "bin" / "kmeans_regions"
    variants = [(f"{v}-{t}t", t, extra) for t in sorted({threads, 1}, reverse=True)
                for v, extra in (("unpadded", []), ("padded", ["--padded"]))]
    wall = {v: [] for v, _, _ in variants}
    loop = {v: [] for v, _, _ in variants}
    cpu = {v: [] for v, _, _ in variants}
    for _ in range(repeat):
        for variant, t_count, extra in variants:
            env = dict(os.environ, OMP_NUM_THREADS=str(t_count))
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.monotonic()
            run = subprocess.run([str(exe), *RUN_ARGS, *extra], check=True, env=env,
                                 capture_output=True, text=True)
            wall[variant].append(time.monotonic() - t)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[variant].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            loop[variant].append(float(re.search(r"time=([0-9.]+)", run.stdout).group(1)))
    out: dict = {"runs": {"wall": wall, "loop": loop, "cpu": cpu}}
    for what, table in (("wall", wall), ("loop", loop), ("cpu", cpu)):
        med = {k: statistics.median(v) for k, v in table.items()}
        out[f"median_{what}_s"] = med
        for t_count in sorted({threads, 1}):
            out[f"{what}_ratio_{t_count}t"] = med[f"unpadded-{t_count}t"] / med[f"padded-{t_count}t"]
    out["speedup"] = out[f"wall_ratio_{threads}t"]
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--preset", default="skylake")
    p.add_argument("--measure-only", action="store_true", help="skip the model")
    args = p.parse_args()
    if args.measure_only:
        print("measured (real):", json.dumps(measured(args.threads, args.repeat), indent=1))
        return
    pred = predicted(args.threads, args.preset)
    print("predicted (simulated):", json.dumps(pred, indent=1))
    meas = measured(args.threads, args.repeat)
    print("measured (real):", json.dumps(meas, indent=1))
    t = args.threads
    print(f"\nspeedup of padding (unpadded / padded), {t} threads, median of {args.repeat} "
          f"interleaved runs:\n"
          f"  predicted (simulated): whole recorded stream {pred['speedup']:.3f}x, assignment "
          f"step {pred['step_speedup']:.3f}x\n"
          f"  measured (real): wall {meas[f'wall_ratio_{t}t']:.3f}x, timed loop "
          f"{meas[f'loop_ratio_{t}t']:.3f}x, CPU {meas[f'cpu_ratio_{t}t']:.3f}x\n"
          f"  control, 1 thread (real): wall {meas['wall_ratio_1t']:.3f}x, timed loop "
          f"{meas['loop_ratio_1t']:.3f}x, CPU {meas['cpu_ratio_1t']:.3f}x")


if __name__ == "__main__":
    main()
