"""Accuracy of sampled object hotness against the exact profile, and the cost of exact tracing.

For each workload: build an instrumented copy with `objtier cc -O2 -fopenmp` from workloads/
sources, record it once with the fault sampler (`objtier record --sampler fault`; the
instrumentation callbacks are inert then) and once with the trace sampler (exact counts, LLC
model of this machine). Objects are matched by (allocation context key, occurrence), which is
stable because both runs use the same binary. Reported per workload:

  spearman   rank correlation (scipy.stats.spearmanr) of sampled accesses vs exact LLC-model
             misses, over objects holding >= 1% of the exact misses
  regret     1 - (exact misses in fast memory with a plan from sampled data) / (with a plan
             from exact data); both plans: objtier.plan.rank at 50% of the footprint
  slowdown   wall time of the traced run / the gcc-built binary without objtier, and of the
             instrumented binary with the runtime inert / the gcc-built binary

Usage: python bench/exact_accuracy.py [--repeats N] [--only bfs,cc] [--markdown]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from objtier.analysis.objects import object_table  # noqa: E402
from objtier.exact.tree import exact_object_table  # noqa: E402
from objtier.native import NATIVE_DIR  # noqa: E402
from objtier.plan import rank  # noqa: E402
from objtier.trace import open_trace  # noqa: E402

WL = REPO / "workloads"
GRAPH = ["graph/graph_gen.c", "graph/graph_io.c"]
WORKLOADS = {  # name: (sources, arguments) — sizes that trace in seconds on 2 cores
    "bfs": (["graph/bfs.c", *GRAPH], ["-g", "17", "-n", "4", "-t", "2"]),
    "bc": (["graph/bc.c", *GRAPH], ["-g", "15", "-i", "2", "-n", "1", "-t", "2"]),
    "cc": (["graph/cc.c", *GRAPH], ["-g", "17", "-n", "2", "-t", "2"]),
    "stream": (["stream/stream.c"], ["-s", "2000000", "-n", "4", "-t", "2"]),
    "ptrchase": (["ptrchase/ptrchase.c"], ["-s", "64M", "-n", "1000000", "-t", "2"]),
    "gups": (["gups/gups.c"], ["-l", "22", "-t", "2"]),
    "kmeans": (["kmeans/kmeans.c"], ["-n", "200000", "-i", "5", "-t", "2"]),
}
OBJTIER = [sys.executable, "-m", "objtier"]


def clean_env(**settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBJTIER_")}
    env.update({k: str(v) for k, v in settings.items()})
    return env


def build(name: str, sources: list[str], out: Path) -> Path:
    exe = out / name
    cmd = [*OBJTIER, "cc", "-std=gnu11", "-O2", "-fopenmp", f"-I{WL / 'common'}",
           f"-I{WL / 'graph'}", *[str(WL / s) for s in sources], str(WL / "common/wl.c"),
           "-lm", "-o", str(exe)]
    subprocess.run(cmd, check=True)
    return exe


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def captured(table, placement, exact: np.ndarray) -> float:
    """Exact misses served from the fast tier under a placement (split objects pro rata)."""
    size = table.column("size").to_numpy().astype(np.float64)
    fast = np.where(placement.tier == "fast", 1.0,
                    np.where(placement.tier == "split",
                             placement.fast_bytes / np.maximum(size, 1.0), 0.0))
    return float((fast * exact).sum())


def one(name: str, work: Path, repeats: int) -> dict:
    sources, args = WORKLOADS[name]
    exe = build(name, sources, work)
    plain = [str(NATIVE_DIR / "bin" / name), *args]
    t_plain = statistics.median(timed(plain, clean_env()) for _ in range(repeats))
    t_inert = statistics.median(timed([str(exe), *args], clean_env()) for _ in range(repeats))
    traces = []
    for i in range(repeats):
        out = work / f"{name}-exact{i}.otr"
        traces.append(timed([str(exe), *args],
                            clean_env(OBJTIER_OUTPUT=out, OBJTIER_SAMPLER="trace")))
    t_trace = statistics.median(traces)
    fault = work / f"{name}-fault.otr"
    subprocess.run([*OBJTIER, "record", "-q", "-f", "--sampler", "fault", "-o", str(fault),
                    "--", str(exe), *args], check=True, stdout=subprocess.DEVNULL,
                   env=clean_env())

    exact_t = exact_object_table(open_trace(work / f"{name}-exact0.otr"), labels=False)
    fault_t = object_table(open_trace(fault), labels=False)
    key = lambda t: list(zip(t.column("context_key").to_pylist(),  # noqa: E731
                             t.column("occurrence").to_pylist()))
    sampled_of = dict(zip(key(fault_t), fault_t.column("accesses").to_numpy().tolist()))
    exact = exact_t.column("accesses").to_numpy().astype(np.float64)
    sampled = np.array([sampled_of.get(k, 0.0) for k in key(exact_t)])
    total = exact.sum()
    big = exact >= 0.01 * total
    rho = float(spearmanr(sampled[big], exact[big]).statistic) if big.sum() >= 2 else float("nan")

    footprint = int(exact_t.column("size").to_numpy().sum())
    budget = footprint // 2
    with_sampled = exact_t.set_column(exact_t.schema.get_field_index("accesses"), "accesses",
                                      __import__("pyarrow").array(sampled))
    best = captured(exact_t, rank(exact_t, budget), exact)
    got = captured(exact_t, rank(with_sampled, budget), exact)
    regret = 1.0 - got / best if best > 0 else 0.0
    return {"workload": name, "objects": int(len(exact)), "hot_objects": int(big.sum()),
            "matched": int(sum(k in sampled_of for k in key(exact_t))),
            "spearman": rho, "regret": regret, "t_plain": t_plain, "t_inert": t_inert,
            "t_trace": t_trace, "slowdown_trace": t_trace / t_plain,
            "slowdown_inert": t_inert / t_plain}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    names = [n for n in WORKLOADS if not args.only or n in args.only.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="objtier-exact-") as tmp:
        for name in names:
            rows.append(one(name, Path(tmp), args.repeats))
            r = rows[-1]
            print(f"{name:9s} objects {r['objects']:3d} hot {r['hot_objects']:2d} matched "
                  f"{r['matched']:3d} spearman {r['spearman']:6.3f} regret "
                  f"{100 * r['regret']:5.1f}% plain {r['t_plain']:.2f}s inert "
                  f"{r['t_inert']:.2f}s ({r['slowdown_inert']:.1f}x) trace {r['t_trace']:.2f}s "
                  f"({r['slowdown_trace']:.1f}x)", flush=True)
    if args.markdown:
        print("\n| workload | objects (≥1% of misses) | Spearman | regret | instrumented, inert | traced |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['workload']} | {r['objects']} ({r['hot_objects']}) | "
                  f"{r['spearman']:.3f} | {100 * r['regret']:.1f}% | "
                  f"{r['slowdown_inert']:.1f}x | {r['slowdown_trace']:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
