#!/usr/bin/env python3
"""Real programs plain and under `objtier record --sampler fault`: same output, and the cost.

    bench/fault_transparency.py [--lines 3000000] [--rounds 3] [-o results.json]

Runs GNU `sort -n` on a generated file of LINES random integers, plain and under record,
interleaved (plain, record, plain, record, ...) so that both see the same machine load.
Each round checks that the recorded run's exit status and output (SHA-256) equal the plain
run's. Prints the median wall times, their ratio, and the samples, objects and windows of
the last recording. Wall times are real (this machine), not emulated; on a shared machine
they are noisy, which is why the ratio is taken within rounds and the median reported.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from objtier.trace import open_trace


def number_file(path: Path, lines: int) -> None:
    values = np.random.default_rng(7).integers(-10**9, 10**9, size=lines)
    path.write_text("\n".join(map(str, values.tolist())) + "\n")


def timed(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    run = subprocess.run(cmd, capture_output=True)
    return time.perf_counter() - start, run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=3_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("-o", "--output", type=Path, default=None)
    args = parser.parse_args()
    sort = shutil.which("sort")
    if sort is None:
        print("GNU sort is not installed", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        numbers = work / "numbers.txt"
        number_file(numbers, args.lines)
        plain_s, rec_s, ratios = [], [], []
        identical = True
        for i in range(args.rounds):
            t_plain, plain = timed([sort, "-n", str(numbers)])
            out = work / f"rec{i}"
            t_rec, rec = timed([sys.executable, "-m", "objtier", "record", "--sampler", "fault",
                                "-q", "-o", str(out), "--", sort, "-n", str(numbers)])
            same = (plain.returncode == rec.returncode and
                    hashlib.sha256(plain.stdout).digest() == hashlib.sha256(rec.stdout).digest())
            identical &= same
            plain_s.append(t_plain)
            rec_s.append(t_rec)
            ratios.append(t_rec / t_plain)
            print(f"round {i}: plain {t_plain:.2f} s, record {t_rec:.2f} s, "
                  f"identical {same}", flush=True)
        trace = open_trace(out)
        stats = trace.sampler_stats.to_pylist()
        result = {
            "machine": platform.node(), "kernel": platform.release(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "program": f"sort -n, {args.lines} lines", "rounds": args.rounds,
            "identical_output_every_round": identical,
            "median_plain_s": statistics.median(plain_s),
            "median_record_s": statistics.median(rec_s),
            "median_ratio": statistics.median(ratios),
            "objects": trace.allocations.num_rows, "samples": trace.samples.num_rows,
            "windows": sum(s["windows"] for s in stats),
        }
    print(json.dumps(result, indent=2))
    if args.output:
        args.output.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if identical else 2


if __name__ == "__main__":
    sys.exit(main())
