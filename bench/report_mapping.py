"""Mapping throughput: samples/s of the sample -> object interval join, one core.

    python bench/report_mapping.py [--samples 50000000] [--objects 10000] [--repeats 5]

Prints the median of the repeats for: index build (ranges + tables) and lookup.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from objtier.analysis.mapping import ObjectIndex
from report_synthetic import synthetic_tables  # bench/report_synthetic.py, next to this script


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=50_000_000)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    allocations, frees, samples = synthetic_tables(args.objects, args.samples)
    pid = samples.column("pid").to_numpy()
    addr = samples.column("addr").to_numpy()
    t = samples.column("time_ns").to_numpy()
    builds, lookups, cpus, mapped = [], [], [], None
    for _ in range(args.repeats):
        start = time.perf_counter()
        index = ObjectIndex(allocations, frees)
        built = time.perf_counter()
        cpu = time.process_time()
        mapped = index.lookup(pid, addr, t)
        cpus.append(time.process_time() - cpu)
        done = time.perf_counter()
        builds.append(built - start)
        lookups.append(done - built)
        del mapped
    mapped = index.lookup(pid, addr, t)
    build, lookup = statistics.median(builds), statistics.median(lookups)
    cpu = statistics.median(cpus)
    print(f"machine: {os.uname().nodename} {os.cpu_count()} cpus; samples {args.samples:,}, "
          f"objects {args.objects:,}, repeats {args.repeats}")
    print(f"index build  median {build * 1e3:8.1f} ms")
    print(f"lookup       median {lookup:8.3f} s  = {args.samples / lookup / 1e6:6.1f} M samples/s")
    print(f"lookup cpu   median {cpu:8.3f} s  = {args.samples / cpu / 1e6:6.1f} M samples/s")
    print(f"end to end   median {build + lookup:8.3f} s  = "
          f"{args.samples / (build + lookup) / 1e6:6.1f} M samples/s")
    print(f"unmapped samples: {int((mapped < 0).sum()):,} ({(mapped < 0).mean():.1%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
