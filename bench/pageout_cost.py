"""What a pager that evicts one page per fault pays: single-page MADV_PAGEOUT (and
process_madvise, MADV_COLD) while the program runs, from the program's CPU and from another.

    .venv/bin/python bench/pageout_cost.py [--repeat 5] [-o bench-out/pageout-cost]

Builds bench/pageout_cost.c with cc, creates a zram swap device for the duration (removed on
exit, error and Ctrl-C: objtier.tiers.swap.ZramSwap), and runs each configuration --repeat
times, interleaved: the adviser kept to CPU 0; a worker thread of the same process touching
random pages of the 32 MiB buffer kept to CPU 1 (another CPU), to CPU 0 (the adviser's) or
absent. Prints the median microseconds of wall time per advised page and writes results.json.
Real measurements, exact timings of this machine. Needs root and two CPUs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CONFIGS = (  # (label, mode, pages per call, worker CPU (-1 none), adviser CPU)
    ("pageout, program idle", "pageout", 1, -1, 0),
    ("pageout, program on another CPU", "pageout", 1, 1, 0),
    ("pageout, program on the adviser's CPU", "pageout", 1, 0, 0),
    ("process_madvise 64 pages/call, program on another CPU", "vector", 64, 1, 0),
    ("cold, program on another CPU", "cold", 1, 1, 0),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("-o", "--output", default=str(REPO / "bench-out" / "pageout-cost"))
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if (os.cpu_count() or 1) < 2:
        sys.exit("pageout_cost: needs two CPUs")

    from objtier.restore import Restorer
    from objtier.tiers.swap import ZramSwap

    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "pageout_cost"
        subprocess.run(["cc", "-O2", "-o", str(exe), str(REPO / "bench" / "pageout_cost.c"),
                        "-lpthread"], check=True)
        times: dict[str, list[float]] = {c[0]: [] for c in CONFIGS}
        with Restorer() as restorer:
            ZramSwap(256 << 20, restorer)
            for _ in range(args.repeat):
                for label, mode, vec, worker, adviser in CONFIGS:
                    r = subprocess.run([str(exe), mode, str(vec), str(worker), str(adviser)],
                                       capture_output=True, text=True, check=True)
                    times[label].append(float(r.stdout))
    med = {k: statistics.median(v) for k, v in times.items()}
    idle = med[CONFIGS[0][0]]
    print(f"machine {platform.node()}, {os.cpu_count()} CPUs, kernel {platform.release()}, "
          f"{date.today()}; {args.repeat} runs each; real, exact timings")
    print("| configuration | µs per page (median) | vs idle |")
    print("|---|---|---|")
    for label, value in med.items():
        print(f"| {label} | {value:.2f} | {value / idle:.1f}× |")
    (out / "results.json").write_text(json.dumps({"runs": times, "medians": med}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
