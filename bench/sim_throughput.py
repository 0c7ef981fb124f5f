"""Simulator throughput: trace events per second on one core, numab2 and object (static).

A synthetic event stream (no trace file): 512 objects totalling 1 GiB, 20 million samples over
20 s of trace time, 80% of them to the first 10% of the objects, fast tier at 50%. Reported:
the C core alone (pre-merged chunks fed to sim_feed) and end to end (chunk merging in numpy
included). Median of 3 repeats; wall time and the CPU time of the simulating thread (the
machine is shared: CPU time is the per-core figure, wall time includes waiting for a core).

    .venv/bin/python bench/sim_throughput.py [--samples N] [--repeats R]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np

from objtier.sim.engine import EV_ACCESS, EV_ALLOC, EVENT, Simulator
from objtier.sim.events import EventSource


def build(samples: int, objects: int = 512, total: int = 1 << 30, seed: int = 1) -> EventSource:
    rng = np.random.default_rng(seed)
    size = np.full(objects, total // objects, dtype=np.uint64)
    addr = (np.uint64(0x7f0000000000) + np.arange(objects, dtype=np.uint64)
            * np.uint64(4 << 20)).astype(np.uint64)
    start = 1_000_000_000
    alloc = np.zeros(objects, dtype=EVENT)
    alloc["time_ns"] = start + np.arange(objects)
    alloc["addr"], alloc["size"] = addr, size
    alloc["obj"] = np.arange(objects)
    alloc["type"] = EV_ALLOC
    hot = rng.random(samples) < 0.8
    obj = np.where(hot, rng.integers(0, objects // 10, samples), rng.integers(0, objects, samples))
    ev = np.zeros(samples, dtype=EVENT)
    ev["time_ns"] = start + 1_000_000 + np.sort(rng.integers(0, 20_000_000_000, samples))
    ev["addr"] = addr[obj] + rng.integers(0, total // objects, samples).astype(np.uint64)
    ev["size"] = 1
    ev["obj"] = obj  # the driver maps samples to objects (events.from_tables)
    ev["type"] = EV_ACCESS
    return EventSource(objects=objects, start_ns=start, end_ns=int(ev["time_ns"][-1]),
                       alloc_ev=alloc, free_ev=np.zeros(0, dtype=EVENT), sample_ev=ev,
                       size=size.astype(np.int64), alloc_ns=alloc["time_ns"].astype(np.int64),
                       free_ns=np.full(objects, -1, np.int64), pid=np.zeros(objects, np.uint32),
                       addr=addr)


def run_once(src: EventSource, policy: str, chunks: list[np.ndarray] | None
             ) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this thread) for one run."""
    fast = (1 << 30) // 2
    native = "static" if policy == "object" else policy
    with Simulator(native, fast, src.start_ns, 100_000_000, 12, src.objects) as s:
        if policy == "object":
            fb = np.zeros(src.objects, dtype=np.uint64)
            fb[: src.objects // 10] = src.size[: src.objects // 10]
            s.set_placement(fb)
        t0, c0 = time.perf_counter(), time.thread_time()
        for chunk in (chunks if chunks is not None else src.chunks()):
            s.feed(chunk)
        s.finish(src.end_ns + 1)
        return time.perf_counter() - t0, time.thread_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=20_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    src = build(args.samples)
    chunks = list(src.chunks())
    events = src.events
    print(f"machine: {platform.node()} {platform.processor() or platform.machine()}, "
          f"date {time.strftime('%Y-%m-%d')}, load average {os.getloadavg()[0]:.1f}, "
          f"events {events:,} (1 GiB of 512 objects)")
    for policy in ("numab2", "object"):
        for label, ch in (("core", chunks), ("end-to-end", None)):
            runs = [run_once(src, policy, ch) for _ in range(args.repeats)]
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            print(f"{policy:8s} {label:11s} median wall {wall:.3f} s "
                  f"{events / wall / 1e6:.1f} M events/s, CPU {cpu:.3f} s "
                  f"{events / cpu / 1e6:.1f} M events/s per core  (wall runs: "
                  + ", ".join(f"{r[0]:.3f}" for r in runs) + ")")


if __name__ == "__main__":
    main()
