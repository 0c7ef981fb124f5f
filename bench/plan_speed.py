"""Planning time for 10k objects per algorithm (medians of repeats).

    .venv/bin/python bench/plan_speed.py [--objects 10000] [--repeat 5]

Synthetic profile: sizes log-uniform in [64 B, 4 MiB], accesses Pareto-distributed (a few hot
objects), 20% of objects with no samples, 500 contexts; budget 50% of the summed sizes. `exact`
is timed twice: on that instance (too large: it falls back to rank, and the time includes the
check) and with a 16 MiB budget (4096 pages), where it runs the dynamic programme.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from objtier.plan import (build_plan, exact, halving, object_table, parse_budget, plan_phases,
                          rank, spill, to_text, write_plan)


def profile(n: int, seed: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    size = np.exp(rng.uniform(np.log(64), np.log(4 << 20), n)).astype(np.int64)
    accesses = (rng.pareto(1.2, n) * 100.0) * (rng.random(n) > 0.2)
    context = rng.integers(0, 500, n)
    occurrence = np.zeros(n, dtype=np.int64)
    for c in np.unique(context):  # n-th object of each context
        rows = np.flatnonzero(context == c)
        occurrence[rows] = np.arange(len(rows))
    return {"object": np.arange(n), "context_key": [f"{c * 2654435761:016x}"[-16:] for c in context],
            "occurrence": occurrence, "size": size, "accesses": accesses,
            "label": [f"main > build > alloc_{c}" for c in context]}


def phases(n: int, count: int = 20, seed: int = 2) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    names = [f"p{i}" for i in range(count)]
    table = {"phase": names, "parent": [None] * count,
             "start_ns": np.arange(count) * 10**9, "end_ns": np.arange(count) * 10**9 + 5 * 10**8}
    rows = rng.integers(0, n, n * 2)
    acc = {"phase": [names[i] for i in rng.integers(0, count, len(rows))], "object": rows,
           "accesses": rng.pareto(1.2, len(rows)) * 10.0}
    return table, acc


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    profile_raw = profile(args.objects)
    objects = object_table(profile_raw)
    budget = parse_budget("50%", int(objects.size.sum()))
    small = 4096 * 4096
    ptable, pacc = phases(args.objects)
    cases = {
        "validate object table": lambda: object_table(profile_raw),
        "rank": lambda: rank(objects, budget.bytes),
        "spill": lambda: spill(objects, budget.bytes),
        "halving": lambda: halving(objects, budget.bytes),
        "exact (falls back to rank)": lambda: exact(objects, budget.bytes),
        "exact (DP, 4096-page budget)": lambda: exact(objects, small),
        "phases: 20 phases x halving": lambda: plan_phases(objects, ptable, pacc, halving,
                                                           budget.bytes, min_duration_ns=0,
                                                           similarity=1.0),
    }
    placement = halving(objects, budget.bytes)
    with tempfile.TemporaryDirectory() as tmp:
        def write():
            plan = build_plan(objects, placement, budget, None)
            write_plan(plan, Path(tmp) / "plan.json")
            to_text(plan)
        cases["plan file (JSON + text)"] = write
        print(f"# {platform.node()} {platform.machine()} python {platform.python_version()}, "
              f"{args.objects} objects, budget {budget.bytes >> 20} MiB, median of {args.repeat}")
        for name, fn in cases.items():
            print(f"{name:32s} {median_ms(fn, args.repeat):9.1f} ms")
    dp = exact(objects, small)
    print(f"# exact DP cells: {args.objects} objects x 4097 pages; warnings: {list(dp.warnings)}")
    print(f"# fallback warning: {exact(objects, budget.bytes).warnings[0]}")


if __name__ == "__main__":
    main()
