"""Accuracy of sampled object hotness against the exact profile, and the cost of exact tracing.

For each workload: build an instrumented copy with `objtier cc -O2 -fopenmp` from workloads/
sources, record it REPEATS times with each sampler compared (`objtier record --sampler pageout`,
`--sampler fault` and `--sampler perf`; the instrumentation callbacks are inert then) and with the trace sampler
(exact counts, LLC model of this machine). Objects are matched by (allocation context key,
occurrence), which is stable because all runs use the same binary. Reported per workload and
sampler, as the median (and range) over the sampled recordings, each against the first exact
recording:

  sampled    sum of the sampled accesses (sample weights: 1 per fault sample, the period per
             perf sample) over the objects, in one recording
  spearman   rank correlation (scipy.stats.spearmanr) of sampled accesses vs exact LLC-model
             misses, over objects holding >= 1% of the exact misses (nan when fewer than two
             such objects or when their sampled or exact counts are all equal)
  regret     1 - (exact misses in fast memory with a plan from sampled data) / (with a plan
             from exact data); both plans: objtier.plan.rank at 50% of the footprint
  slowdown   median wall time of the traced run / the gcc-built binary without objtier, and of
             the instrumented binary with the runtime inert / the gcc-built binary

With the perf sampler and no PEBS/IBS the samples are software page-fault events, i.e. mostly
first touches of pages, so its weights follow footprint, not accesses.

With the pageout sampler on a machine without swap, `objtier record` adds a temporary zram swap
device for each recording (root).

Usage: python bench/exact_accuracy.py [--repeats N] [--only bfs,cc] [--samplers pageout,fault,perf]
                                      [--markdown]
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
import pyarrow as pa
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
# Sizes that trace in seconds on 2 cores; trial/iteration counts long enough that the
# fault sampler (passes of ~250 ms) makes several passes over the kernels' objects.
WORKLOADS = {  # name: (sources, arguments)
    "bfs": (["graph/bfs.c", *GRAPH], ["-g", "17", "-n", "4", "-t", "2"]),
    "bc": (["graph/bc.c", *GRAPH], ["-g", "15", "-i", "16", "-n", "4", "-t", "2"]),
    "cc": (["graph/cc.c", *GRAPH], ["-g", "17", "-n", "2", "-t", "2"]),
    "stream": (["stream/stream.c"], ["-s", "2000000", "-n", "16", "-t", "2"]),
    "ptrchase": (["ptrchase/ptrchase.c"], ["-s", "64M", "-n", "1000000", "-t", "2"]),
    "gups": (["gups/gups.c"], ["-l", "22", "-t", "2"]),
    "kmeans": (["kmeans/kmeans.c"], ["-n", "200000", "-i", "15", "-t", "2"]),
}
OBJTIER = [sys.executable, "-m", "objtier"]


def clean_env(**settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBJTIER_")}
    env.update({k: str(v) for k, v in settings.items()})
    return env


def build(name: str, sources: list[str], out: Path) -> Path:
    exe = out / name
    cmd = [*OBJTIER, "cc", "-std=gnu11", "-O2", "-fopenmp", f"-I{WL / 'common'}",
           f"-I{WL / 'graph'}", f"-I{NATIVE_DIR / 'include'}",
           *[str(WL / s) for s in sources], str(WL / "common/wl.c"),
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


def sampled_accesses(path: Path, keys: list) -> tuple[np.ndarray, int, int]:
    """Sampled accesses aligned with the exact table's keys; (values, samples, matched)."""
    table = object_table(open_trace(path), labels=False)
    of = dict(zip(key(table), table.column("accesses").to_numpy().tolist()))
    values = np.array([of.get(k, 0.0) for k in keys], dtype=np.float64)
    return values, int(values.sum()), int(sum(k in of for k in keys))


def key(table) -> list:
    return list(zip(table.column("context_key").to_pylist(),
                    table.column("occurrence").to_pylist()))


def score(exact_t, exact: np.ndarray, sampled: np.ndarray) -> tuple[float, float]:
    """(Spearman over objects with >= 1% of the exact misses, regret of the sampled plan)."""
    big = exact >= 0.01 * exact.sum()
    rho = float("nan")
    if big.sum() >= 2 and np.ptp(sampled[big]) > 0 and np.ptp(exact[big]) > 0:
        rho = float(spearmanr(sampled[big], exact[big]).statistic)
    budget = int(exact_t.column("size").to_numpy().sum()) // 2
    with_sampled = exact_t.set_column(exact_t.schema.get_field_index("accesses"), "accesses",
                                      pa.array(sampled))
    best = captured(exact_t, rank(exact_t, budget), exact)
    got = captured(exact_t, rank(with_sampled, budget), exact)
    return rho, (1.0 - got / best if best > 0 else 0.0)


def median_range(values: list[float]) -> tuple[float, float, float]:
    ok = [v for v in values if not np.isnan(v)]
    if not ok:
        return float("nan"), float("nan"), float("nan")
    return statistics.median(ok), min(ok), max(ok)


def one(name: str, work: Path, repeats: int, samplers: list[str]) -> dict:
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

    exact_t = exact_object_table(open_trace(work / f"{name}-exact0.otr"), labels=False)
    keys = key(exact_t)
    exact = exact_t.column("accesses").to_numpy().astype(np.float64)
    row = {"workload": name, "args": " ".join(args), "objects": int(len(exact)),
           "hot_objects": int((exact >= 0.01 * exact.sum()).sum()), "t_plain": t_plain,
           "t_inert": t_inert, "t_trace": t_trace, "slowdown_trace": t_trace / t_plain,
           "slowdown_inert": t_inert / t_plain, "samplers": {}}
    for sampler in samplers:
        runs = []
        for i in range(repeats):
            out = work / f"{name}-{sampler}{i}.otr"
            t = time.perf_counter()
            subprocess.run([*OBJTIER, "record", "-q", "-f", "--sampler", sampler, "-o",
                            str(out), "--", str(exe), *args], check=True,
                           stdout=subprocess.DEVNULL, env=clean_env())
            wall = time.perf_counter() - t
            sampled, samples, matched = sampled_accesses(out, keys)
            rho, regret = score(exact_t, exact, sampled)
            runs.append({"samples": samples, "matched": matched, "spearman": rho,
                         "regret": regret, "wall": wall})
        row["samplers"][sampler] = {
            "runs": runs,
            "samples": statistics.median(r["samples"] for r in runs),
            "spearman": median_range([r["spearman"] for r in runs]),
            "regret": median_range([r["regret"] for r in runs]),
            "wall": statistics.median(r["wall"] for r in runs)}
    return row


def fmt_range(values: tuple[float, float, float], percent: bool = False) -> str:
    mid, lo, hi = values
    if np.isnan(mid):
        return "n/a"
    if percent:
        return f"{100 * mid:.1f}% ({100 * lo:.1f}–{100 * hi:.1f})"
    return f"{mid:.3f} ({lo:.2f}–{hi:.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="")
    parser.add_argument("--samplers", default="pageout,fault,perf")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    names = [n for n in WORKLOADS if not args.only or n in args.only.split(",")]
    samplers = args.samplers.split(",")
    rows = []
    with tempfile.TemporaryDirectory(prefix="objtier-exact-") as tmp:
        for name in names:
            rows.append(one(name, Path(tmp), args.repeats, samplers))
            r = rows[-1]
            print(f"{name:9s} objects {r['objects']:3d} hot {r['hot_objects']:2d} plain "
                  f"{r['t_plain']:.2f}s inert {r['t_inert']:.2f}s ({r['slowdown_inert']:.1f}x) "
                  f"trace {r['t_trace']:.2f}s ({r['slowdown_trace']:.1f}x)", flush=True)
            for sampler, s in r["samplers"].items():
                runs = " ".join(f"[{x['samples']} sampled, {x['matched']} matched, "
                                f"rho {x['spearman']:.3f}, regret {100 * x['regret']:.1f}%, "
                                f"{x['wall']:.2f}s]" for x in s["runs"])
                print(f"  {sampler:5s} {runs}", flush=True)
    if args.markdown:
        print("\n| workload | sampler | objects (≥1% of misses) | sampled accesses on objects | "
              "Spearman | regret | instrumented, inert | traced |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            for sampler, s in r["samplers"].items():
                print(f"| {r['workload']} {r['args']} | {sampler} | {r['objects']} "
                      f"({r['hot_objects']}) | {s['samples']:.0f} | {fmt_range(s['spearman'])} | "
                      f"{fmt_range(s['regret'], percent=True)} | {r['slowdown_inert']:.1f}x | "
                      f"{r['slowdown_trace']:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
