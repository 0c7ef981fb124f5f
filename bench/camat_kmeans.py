#!/usr/bin/env python3
"""The K-means false-sharing case: predicted (C-AMAT model) vs measured speedup of padding the
per-thread centre counts (kmeans_regions, update_centers_len).

    .venv/bin/python bench/camat_kmeans.py [--threads 2] [--repeat 7]

Predicted: kmeans_regions built with `objtier cc`, recorded with the ordered access stream
(2 threads, -n 20000 -i 2), model run on the unpadded and the padded stream; speedup = model
cycles unpadded / padded (simulated), and the update_centers_len terms of both.
Measured: the gcc-built kmeans_regions (-n 200000 -i 10), unpadded and padded runs interleaved,
median wall time of each; speedup = median unpadded / median padded (real).
"""

from __future__ import annotations

import argparse
import json
import os
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
                            "--regions", "--stream", "6000000", "-o", str(d), "--", str(exe),
                            *MODEL_ARGS, *extra], check=True, env=env, stdout=subprocess.DEVNULL)
            doc = json.loads((d / "camat.json").read_text())
            region = next(r for r in doc["regions"] if r["region"] == "update_centers_len")
            l1 = next(lv for lv in region["levels"] if lv["level"] == "L1")
            out[variant] = {"cycles": doc["cycles"], "l1_camat": doc["levels"][0]["camat"],
                            "region_l1_camat": l1["camat"], "region_C_M": l1["C_M"],
                            "false_sharing": region["false_sharing_misses"],
                            "region_accesses": region["accesses"],
                            "region_active_share": region["l1_active_share"]}
    out["speedup"] = out["unpadded"]["cycles"] / out["padded"]["cycles"]
    return out


def measured(threads: int, repeat: int) -> dict:
    exe = REPO / "src" / "objtier" / "_native" / "bin" / "kmeans_regions"
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    times = {"unpadded": [], "padded": []}
    cpu = {"unpadded": [], "padded": []}
    for _ in range(repeat):
        for variant, extra in (("unpadded", []), ("padded", ["--padded"])):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.monotonic()
            subprocess.run([str(exe), *RUN_ARGS, *extra], check=True, env=env,
                           stdout=subprocess.DEVNULL)
            times[variant].append(time.monotonic() - t)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[variant].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    med = {k: statistics.median(v) for k, v in times.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    return {"median_s": med, "median_cpu_s": med_cpu, "runs": times, "cpu": cpu,
            "speedup": med["unpadded"] / med["padded"],
            "cpu_ratio": med_cpu["unpadded"] / med_cpu["padded"]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--preset", default="skylake")
    args = p.parse_args()
    pred = predicted(args.threads, args.preset)
    print("predicted (simulated):", json.dumps(pred, indent=1))
    meas = measured(args.threads, args.repeat)
    print("measured (real):", json.dumps(meas, indent=1))
    print(f"\nspeedup of padding: predicted {pred['speedup']:.3f}x, measured {meas['speedup']:.3f}x "
          f"wall, {meas['cpu_ratio']:.3f}x CPU time (median of {args.repeat} interleaved runs, "
          f"{args.threads} threads)")


if __name__ == "__main__":
    main()
