#!/usr/bin/env python3
"""Xmem(X %) on the project's workloads: main memory as a local buffer of X % of the footprint
in front of a far level, the seed's disaggregated-memory slowdown table.

    .venv/bin/python bench/camat_xmem.py sim  [--percents 100,50,25] [--stream N]
    .venv/bin/python bench/camat_xmem.py swap [--percents 50,25] [--repeat R]   (root)

sim:  each workload is built with `objtier cc`, its first N accesses are recorded in order, and
      the C-AMAT model (preset "small": footprints of a few MiB against a 256 KiB LLC, the
      seed's ratio of footprint to cache) runs with no far level (Lmem) and with the buffer at each X %, filled by
      page LRU or object-first (the densest objects in memory accesses pinned, the rest LRU).
      Slowdown = model cycles at Xmem(X) / model cycles at Lmem (simulated, exact stream).
swap: the gcc-built workloads run under the real swap tier (memory cgroup limit = X % of the
      peak RSS measured in the Lmem run, zram behind it), R runs interleaved per setting;
      slowdown = median wall time / median Lmem wall time, with major faults (real, measured).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from objtier import workloads

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / "src" / "objtier" / "_native" / "bin"
WL = REPO / "workloads"


def sim(args) -> None:
    from objtier.camat.analyze import run_model
    from objtier.camat.model import hierarchy
    from objtier.camat.stream import load_stream
    from objtier.trace import open_trace

    hier = hierarchy(args.preset)
    percents = [float(p) for p in args.percents.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, run_args in workloads.arguments("camat-trace").items():
            exe = Path(tmp) / name
            subprocess.run([sys.executable, "-m", "objtier", "cc", "-O2", "-fopenmp", "-o",
                            str(exe), *(str(WL / src) for src in workloads.SOURCES[name]),
                            str(WL / "common" / "wl.c"), "-lm"], check=True)
            rec = Path(tmp) / f"{name}.otr"
            env = dict(os.environ, OBJTIER_OUTPUT=str(rec), OBJTIER_SAMPLER="trace",
                       OBJTIER_TRACE_STREAM=str(args.stream), OBJTIER_MIN_SIZE="4096")
            subprocess.run([str(exe), *run_args], check=True, env=env, stdout=subprocess.DEVNULL)
            stream = load_stream(open_trace(rec))
            base, _ = run_model(stream, hier)
            row = {"workload": name, "accesses": len(stream.accesses),
                   "footprint_pages": stream.footprint_pages, "lmem_cycles": base.cycles,
                   "lmem_l1_camat": float(base.totals[0]["active_cycles"]
                                          / max(base.totals[0]["accesses"], 1))}
            for pct in percents:
                for fill in ("lru", "objects"):
                    counts, params = run_model(stream, hier, pct, fill)
                    row[f"x{pct:g}_{fill}"] = counts.cycles / base.cycles
                    row[f"x{pct:g}_{fill}_l1_camat"] = float(
                        counts.totals[0]["active_cycles"] / max(counts.totals[0]["accesses"], 1))
                    row[f"x{pct:g}_{fill}_local_mr"] = float(
                        counts.totals[3]["misses"] / max(counts.totals[3]["accesses"], 1))
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(f"\npreset {hier.name}, far {hier.far_cycles} cycles, {hier.far_mshrs} far fetch per "
          f"core; slowdown = model cycles / Lmem model cycles (simulated)")
    head = ["workload", "accesses"] + [f"Xmem({p:g}) {f}" for p in percents for f in ("lru", "objects")]
    print(" | ".join(head))
    for r in rows:
        print(" | ".join([r["workload"], str(r["accesses"])] +
                         [f"{r[f'x{p:g}_{f}']:.2f}x (MR {r[f'x{p:g}_{f}_local_mr']:.2f})"
                          for p in percents for f in ("lru", "objects")]))


def _timed(cmd, preexec=None) -> tuple[float | None, int, int]:
    """(wall seconds or None when the run failed, major faults, peak RSS bytes) of one run;
    wait4 gives this child's own resource use."""
    t = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=preexec)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:  # e.g. killed by the kernel's OOM killer under the limit
        return None, proc.returncode, 0
    return wall, usage.ru_majflt, usage.ru_maxrss * 1024


def swap(args) -> None:
    from objtier.tiers.swap import SwapTier

    percents = [float(p) for p in args.percents.split(",")]
    print("workload | Lmem s | " + " | ".join(f"Xmem({p:g}) slowdown, major faults"
                                             for p in percents))
    for name, run_args in workloads.arguments("camat-swap").items():
        if args.workloads and name not in args.workloads.split(","):
            continue
        cmd = [str(BIN / name), *run_args]
        lmem = []
        rss = 0
        for _ in range(args.repeat):
            wall, _, peak = _timed(cmd)
            if wall is None:
                raise SystemExit(f"{name} failed without a memory limit")
            lmem.append(wall)
            rss = max(rss, peak)
        cells = []
        for pct in percents:
            local = max(int(rss * pct / 100), 16 << 20)
            walls, faults = [], []
            with SwapTier(local, swap="zram", name=f"objtier-camat-{os.getpid()}") as tier:
                killed = 0
                for _ in range(args.repeat):
                    base, _, _ = _timed(cmd)  # interleaved Lmem run in the same window
                    if base is not None:
                        lmem.append(base)
                    wall, majflt, _ = _timed(cmd, tier.preexec)
                    if wall is None:
                        killed += 1
                        continue
                    walls.append(wall)
                    faults.append(majflt)
            cells.append((statistics.median(walls) if walls else None,
                          statistics.median(faults) if faults else None, killed))
        ref = statistics.median(lmem)
        print(f"{name} (peak RSS {rss >> 20} MiB) | {ref:.2f} | " +
              " | ".join(f"{w / ref:.2f}x, {f:.0f} major faults" if w is not None else
                         "all runs killed" for w, f, k in cells) +
              "".join(f" ({k} of {args.repeat} runs killed at one setting)" for *_, k in cells
                      if k), flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("sim")
    s.add_argument("--percents", default="100,50,25")
    s.add_argument("--stream", type=int, default=6_000_000)
    # a small hierarchy keeps footprint >> LLC, as the seed's 23 GB runs had on 15 MB
    s.add_argument("--preset", default="small")
    w = sub.add_parser("swap")
    w.add_argument("--percents", default="50,25")
    w.add_argument("--repeat", type=int, default=3)
    w.add_argument("--workloads", help="comma-separated subset (default: all)")
    args = p.parse_args()
    sim(args) if args.mode == "sim" else swap(args)


if __name__ == "__main__":
    main()
