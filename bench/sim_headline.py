"""Simulator headline table: graph kernels under kernel tiering vs objtier's object plans.

For BFS, BC and CC on a Kronecker and a uniform random graph: record the run with
`objtier record` (the fault sampler on machines without a PMU), plan with objtier.plan from
the recording's object table (objtier.analysis.objects.object_table; the simulator's own table
when that module is missing) with `rank` (whole objects: the `object` policy) and `spill`, and
simulate first-touch, numab2, tpp, object, spill and the oracle with the fast tier at 50% and
70% of the peak live footprint, under the optane and cxl presets.

Scaling: the fault sampler gives every sample weight 1 (a first touch in a window), so a
sample is scaled to stand for accesses = (edges the kernel traversed) / (samples): one memory
access per traversed edge, the order of a graph kernel's DRAM traffic. The figure of merit
line gives the edges (MTEPS or MEdges/s times its time).

    .venv/bin/python bench/sim_headline.py [--workdir DIR] [--out results.json] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from objtier import plan
from objtier.native import NATIVE_DIR
from objtier.sim import load_preset, simulate
from objtier.sim.events import from_trace
from objtier.sim.run import footprint_bytes
from objtier.trace import open_trace
from objtier.workloads import parse_fom

# workload, graph flag, arguments: sized so that a recording takes about 10 s here
RUNS = [
    ("bfs", "kron", ["-g", "20", "-n", "8"]),
    ("bfs", "urand", ["-u", "20", "-n", "8"]),
    ("bc", "kron", ["-g", "18", "-i", "4"]),
    ("bc", "urand", ["-u", "18", "-i", "4"]),
    ("cc", "kron", ["-g", "20", "-n", "4"]),
    ("cc", "urand", ["-u", "20", "-n", "4"]),
]
PRESETS = ("optane", "cxl")
FRACTIONS = (50, 70)
KERNEL = ["first-touch", "numab2", "tpp", "oracle"]


def record(name: str, args: list[str], out: Path, rate: int) -> tuple[Path, float, float]:
    """Record one run; (trace path, edges traversed, seconds the recording took)."""
    exe = NATIVE_DIR / "bin" / name
    objtier = Path(sys.executable).with_name("objtier")
    t0 = time.perf_counter()
    proc = subprocess.run([str(objtier), "record", "-f", "-q", "--rate", str(rate), "-o",
                           str(out), "--", str(exe), *args], capture_output=True, text=True)
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"recording {name} failed: {proc.stderr.strip()[-400:]}")
    fom = parse_fom(proc.stdout)
    return out, fom.value * 1e6 * fom.seconds, took


def planner_table(trace):
    """The object table the planner reads: the analysis module's, or the simulator's own."""
    try:
        from objtier.analysis.objects import object_table
    except ImportError:
        object_table = None
    if object_table is not None:
        return plan.object_table(object_table(trace)), "objtier.analysis.objects"
    from objtier.sim import placement as P

    src = from_trace(trace)
    _, acc = P.object_accesses(trace, src)
    return plan.object_table(P.planner_table(trace, src, acc)), "objtier.sim.placement"


def plan_doc(objects, algorithm: str, capacity: int, footprint: int) -> dict:
    placement = plan.ALGORITHMS[algorithm](objects, capacity_bytes=capacity, page_bytes=4096)
    budget = plan.parse_budget(str(capacity), footprint)
    return plan.build_plan(objects, placement, budget, binary=None)


def simulate_trace(trace, scale: int, fraction: int, preset: str, objects) -> dict:
    footprint = footprint_bytes(from_trace(trace))
    fast = int(footprint * fraction / 100) >> 12 << 12
    params = {"scale": str(scale)}
    model = load_preset(preset)
    out = {}
    sim = simulate(trace, KERNEL, fast, model, params)
    for r in sim.results:
        out[r.policy] = r
    for name, algorithm in (("object", "rank"), ("spill", "spill")):
        doc = plan_doc(objects, algorithm, fast, footprint)
        r = simulate(trace, ["object"], fast, model, params, plan_doc=doc).results[0]
        out[name] = r
    base = out["first-touch"].stall["total_ns"]
    row = {"fast_bytes": fast, "footprint_bytes": footprint}
    for name, r in out.items():
        c = r.counters
        acc = c["fast_loads"] + c["fast_stores"] + c["slow_loads"] + c["slow_stores"]
        row[name] = {"stall_s": r.stall["total_ns"] / 1e9,
                     "speedup": base / r.stall["total_ns"] if r.stall["total_ns"] else None,
                     "fast_share": (c["fast_loads"] + c["fast_stores"]) / acc if acc else None,
                     "promoted": c["pgpromote_success"], "demoted": c["pgdemote_kswapd"],
                     "hint_faults": c["numa_hint_faults"],
                     "migration_s": r.stall["migration_ns"] / 1e9,
                     "hint_fault_s": r.stall["hint_fault_ns"] / 1e9}
    return row


def markdown(results: list[dict]) -> str:
    head = ("| kernel | graph | fast | preset | first-touch | numab2 | tpp | object | spill | "
            "oracle | best objtier vs best kernel policy |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|\n")
    lines = []
    for r in results:
        s = {k: r[k]["stall_s"] for k in ("first-touch", "numab2", "tpp", "object", "spill",
                                          "oracle")}
        ours = min(s["object"], s["spill"])
        kernel = min(s["numab2"], s["tpp"])
        delta = 100 * (1 - ours / kernel)
        cell = lambda k: f"{s[k]:.3g} s ({100 * r[k]['fast_share']:.0f}%)"  # noqa: E731
        lines.append(f"| {r['kernel']} | {r['graph']} | {r['fraction']}% | {r['preset']} | "
                     + " | ".join(cell(k) for k in ("first-touch", "numab2", "tpp", "object",
                                                    "spill", "oracle"))
                     + f" | {delta:+.0f}% |")
    return head + "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", default="/tmp/objtier-headline")
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    ap.add_argument("--rate", type=int, default=20000, help="objtier record --rate")
    ap.add_argument("--reuse", action="store_true", help="reuse recordings in --workdir")
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, date "
          f"{time.strftime('%Y-%m-%d')}, load average {os.getloadavg()[0]:.1f}", flush=True)
    results = []
    for name, graph, wargs in RUNS:
        path = work / f"{name}-{graph}.otr"
        meta = work / f"{name}-{graph}.json"
        if args.reuse and meta.exists():
            info = json.loads(meta.read_text())
        else:
            _, edges, took = record(name, wargs, path, args.rate)
            info = {"edges": edges, "record_s": took, "args": wargs}
            meta.write_text(json.dumps(info))
        trace = open_trace(path)
        samples = trace.samples.num_rows
        scale = max(1, int(round(info["edges"] / max(samples, 1))))
        objects, source = planner_table(trace)
        print(f"{name} {graph} {' '.join(wargs)}: recorded in {info['record_s']:.1f} s, "
              f"{samples} samples, {trace.allocations.num_rows} objects, "
              f"{info['edges']:.3g} edges -> {scale} accesses per sample; table from {source}",
              flush=True)
        for preset in PRESETS:
            for fraction in FRACTIONS:
                row = simulate_trace(trace, scale, fraction, preset, objects)
                row.update(kernel=name, graph=graph, preset=preset, fraction=fraction,
                           scale=scale, samples=samples)
                results.append(row)
    print(markdown(results))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1, default=float))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
