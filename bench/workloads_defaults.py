"""Figures of merit of every workload at its default size, medians of interleaved repeats.

Also measures kmeans --padded against the unpadded (false-sharing) default in the same run,
interleaved, and reports the ratio of medians. Usage:

    .venv/bin/python bench/workloads_defaults.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics

from objtier import workloads
from objtier.workloads import run_workload

CASES = [(workloads.program_of(name), args)
         for name, args in workloads.arguments("defaults").items()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    values: dict[str, list[float]] = {}
    units: dict[str, str] = {}
    for _ in range(args.repeats):
        for name, extra in CASES:  # interleaved: one run of every case per round
            _, fom = run_workload(name, extra, timeout=600)
            key = " ".join([name, *extra])
            values.setdefault(key, []).append(fom.value)
            units[key] = fom.unit
    print(f"machine: {platform.node()} {platform.machine()}, {platform.release()}; "
          f"date {datetime.date.today()}; repeats {args.repeats}")
    for key, vals in values.items():
        print(f"{key:18s} median {statistics.median(vals):12.6g} {units[key]:10s} "
              f"min {min(vals):.6g} max {max(vals):.6g}")
    ratio = statistics.median(values["kmeans --padded"]) / statistics.median(values["kmeans"])
    print(f"kmeans --padded / unpadded (median Mpoints/s): {ratio:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
