"""Accuracy of sampled object hotness against the exact profile, and the cost of exact tracing.

For each workload: build an instrumented copy with `objtier cc -O2 -fopenmp` from workloads/
sources (gemm: bench/gemm.c, a naive GEMM), record it REPEATS times with each sampler compared
(`objtier record --sampler pageout`, `--sampler fault` and `--sampler perf`; the
instrumentation callbacks are inert then) and with the trace sampler (exact loads, stores and
LLC-model misses per object; LLC model of this machine, or the workload's own in
TRACE_SETTINGS). Objects are matched by (allocation context key, occurrence, size), which is
stable because all runs use the same binary. The sampled recordings of a workload in
SAMPLED_ARGS run more repetitions of the same kernel than its exact recording, so that the
samplers see it for seconds; the objects, and each object's share of the accesses, are the
same. Each sampled recording is scored against the first exact recording on two exact
metrics, loads and LLC-model misses (what leaves the caches, what the planner reads for a
traced recording), by objtier.analysis.accuracy.score_tables; reported per workload, sampler
and metric as the median (and range) over the sampled recordings:

  sampled    sum of the sampled accesses (sample weights, or the watching samplers' estimated
             touches) over the objects, in one recording
  spearman   rank correlation (scipy.stats.spearmanr) of sampled accesses vs the exact metric,
             over objects holding >= 1% of the exact loads or of the exact misses (nan when
             fewer than two such objects or when their sampled or exact counts are all equal)
  top-k      share of the k objects first by sampled accesses that are among the k first by
             the exact metric, ties with the exact k-th included (k = a third of the scored
             objects, at least 1)
  regret     exact metric that a plan from the sampled accesses leaves in slow memory minus
             what a plan from the exact metric leaves there, as a share of the metric's total;
             both plans: objtier.plan.spill at 50% of the footprint
  first      the object with the most sampled accesses: its share of the sampled accesses, of
             the exact loads and of the exact misses
  slowdown   median wall time of the traced run / the gcc-built binary without objtier, and of
             the instrumented binary with the runtime inert / the gcc-built binary

With the perf sampler and no PEBS/IBS the samples are software page-fault events, i.e. mostly
first touches of pages, so its weights follow footprint, not accesses.

With the pageout sampler on a machine without swap, `objtier record` adds a temporary zram swap
device for each recording (root).

Usage: python bench/exact_accuracy.py [--repeats N] [--only bfs,gemm] [--samplers pageout,fault,perf]
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

from objtier import workloads
from objtier.analysis.accuracy import METRICS, sampled_on_exact, score_tables
from objtier.analysis.objects import object_table
from objtier.native import NATIVE_DIR
from objtier.objects_view import objects_view
from objtier.trace import open_trace

REPO = Path(__file__).resolve().parent.parent

WL = REPO / "workloads"
# Sizes that trace in seconds on 2 cores (the registry's "trace" size), plus a matrix product:
# 3 x 512 KiB matrices, one thread: A and B take n^3 loads each, B nearly all the misses.
WORKLOADS = {  # name: (sources, arguments)
    **{name: (workloads.SOURCES[name], args) for name, args in workloads.arguments("trace").items()},
    "gemm": ([str(REPO / "bench" / "gemm.c")], ["-n", "256", "-r", "1"]),
}
# the exact recording's LLC model where this machine's would hold the whole working set
TRACE_SETTINGS = {"gemm": {"OBJTIER_LLC_BYTES": "256K"}}
# arguments of the sampled recordings where they differ: the same kernel repeated (gemm: 16
# multiplications, about 2 s uninstrumented on the 2-core VM, against 1 traced)
SAMPLED_ARGS = {"gemm": ["-n", "256", "-r", "16"]}
METRIC_NAMES = {"loads": "loads", "llc_misses": "misses"}
OBJTIER = [sys.executable, "-m", "objtier"]


def clean_env(**settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBJTIER_")}
    env.update({k: str(v) for k, v in settings.items()})
    return env


def source_paths(sources: list[str]) -> list[str]:
    """Paths of a workload's sources; workloads/ ones (relative) with the common wl.c."""
    paths = [str(WL / s) for s in sources]
    return paths + [str(WL / "common/wl.c")] if any(not Path(s).is_absolute()
                                                    for s in sources) else paths


def build(name: str, sources: list[str], out: Path) -> Path:
    exe = out / name
    cmd = [*OBJTIER, "cc", "-std=gnu11", "-O2", "-fopenmp", f"-I{WL / 'common'}",
           f"-I{WL / 'graph'}", f"-I{NATIVE_DIR / 'include'}", *source_paths(sources),
           "-lm", "-o", str(exe)]
    subprocess.run(cmd, check=True)
    return exe


def plain_binary(name: str, sources: list[str], out: Path) -> Path:
    """The gcc-built binary without objtier: the native build's, else built here (-O2)."""
    exe = NATIVE_DIR / "bin" / name
    if exe.exists():
        return exe
    exe = out / f"{name}-plain"
    subprocess.run(["gcc", "-std=gnu11", "-O2", "-fopenmp", f"-I{WL / 'common'}",
                    *source_paths(sources), "-lm", "-o", str(exe)], check=True)
    return exe


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def first_object(exact_t, sampled_t) -> dict[str, float]:
    """Shares [0..1] of the object with the most sampled accesses: of the sampled accesses,
    of the exact loads, of the exact LLC-model misses."""
    got, _ = sampled_on_exact(exact_t, sampled_t)
    if not got.sum():
        return {"sampled": float("nan"), **{m: float("nan") for m in METRICS}}
    top = int(np.argmax(got))
    shares = {"sampled": float(got[top] / got.sum())}
    for m in METRICS:
        counts = exact_t.column(m).to_numpy().astype(np.float64)
        shares[m] = float(counts[top] / counts.sum()) if counts.sum() else float("nan")
    return shares


EXACT_LLC_MODELS = (None, "4M")   # exact recordings: this machine's LLC model, and 4 MiB
EXACT_ATTEMPTS = 5                # the traced 2-thread bfs crashes now and then (SIGSEGV)


def exact_object_tables(name: str, exe: Path, args: list[str], work: Path,
                        failures: list[str]) -> dict[str, object]:
    """Object tables of exact recordings (the trace sampler) of `exe args`, one per LLC model
    of EXACT_LLC_MODELS ("machine" for this machine's), each recorded into
    work/<name>-exact-<model>.otr; a crashed run is run again (up to EXACT_ATTEMPTS times) and
    noted in failures. The recordings are left in work."""
    import shutil

    tables = {}
    for llc in EXACT_LLC_MODELS:
        out = work / f"{name}-exact-{llc or 'machine'}.otr"
        env = clean_env(OBJTIER_OUTPUT=out, OBJTIER_SAMPLER="trace",
                        **({"OBJTIER_LLC_BYTES": llc} if llc else {}))
        for attempt in range(EXACT_ATTEMPTS):
            shutil.rmtree(out, ignore_errors=True)
            if subprocess.run([str(exe), *args], env=env,
                              stdout=subprocess.DEVNULL).returncode == 0:
                break
            failures.append(f"exact {name} (LLC {llc or 'machine'})")
            print(f"  {failures[-1]} failed (attempt {attempt + 1})", flush=True)
        else:
            raise SystemExit(f"{name}: no exact recording")
        tables[llc or "machine"] = objects_view(open_trace(out), labels=False).table
    return tables


def median_range(values: list[float]) -> tuple[float, float, float]:
    ok = [v for v in values if not np.isnan(v)]
    if not ok:
        return float("nan"), float("nan"), float("nan")
    return statistics.median(ok), min(ok), max(ok)


def one(name: str, work: Path, repeats: int, samplers: list[str]) -> dict:
    sources, args = WORKLOADS[name]
    sampled_args = SAMPLED_ARGS.get(name, args)
    exe = build(name, sources, work)
    plain = [str(plain_binary(name, sources, work)), *args]
    t_plain = statistics.median(timed(plain, clean_env()) for _ in range(repeats))
    t_inert = statistics.median(timed([str(exe), *args], clean_env()) for _ in range(repeats))
    traces = []
    for i in range(repeats):
        out = work / f"{name}-exact{i}.otr"
        traces.append(timed([str(exe), *args],
                            clean_env(OBJTIER_OUTPUT=out, OBJTIER_SAMPLER="trace",
                                      **TRACE_SETTINGS.get(name, {}))))
    t_trace = statistics.median(traces)

    exact_t = objects_view(open_trace(work / f"{name}-exact0.otr"), labels=False).table
    loads = exact_t.column("loads").to_numpy().astype(np.float64)
    misses = exact_t.column("llc_misses").to_numpy().astype(np.float64)
    hot = (loads >= 0.01 * loads.sum()) | (misses >= 0.01 * misses.sum())
    row = {"workload": name, "args": " ".join(args), "sampled_args": " ".join(sampled_args),
           "objects": int(len(misses)), "hot_objects": int(hot.sum()),
           "loads": float(loads.sum()), "misses": float(misses.sum()),
           "t_plain": t_plain, "t_inert": t_inert, "t_trace": t_trace,
           "slowdown_trace": t_trace / t_plain, "slowdown_inert": t_inert / t_plain,
           "samplers": {}}
    for sampler in samplers:
        runs = []
        for i in range(repeats):
            out = work / f"{name}-{sampler}{i}.otr"
            t = time.perf_counter()
            subprocess.run([*OBJTIER, "record", "-q", "-f", "--sampler", sampler, "-o",
                            str(out), "--", str(exe), *sampled_args], check=True,
                           stdout=subprocess.DEVNULL, env=clean_env())
            wall = time.perf_counter() - t
            sampled_t = object_table(open_trace(out), labels=False)
            scores = score_tables(exact_t, sampled_t)
            got, matched = sampled_on_exact(exact_t, sampled_t)
            runs.append({"samples": float(got.sum()), "matched": matched, "wall": wall,
                         "scores": scores, "first": first_object(exact_t, sampled_t)})
        summary = {"runs": runs, "samples": statistics.median(r["samples"] for r in runs),
                   "wall": statistics.median(r["wall"] for r in runs)}
        for m in METRICS:
            for field in ("spearman", "overlap", "regret"):
                summary[f"{field}_{m}"] = median_range(
                    [getattr(r["scores"][m], field) for r in runs])
            summary[f"first_{m}"] = median_range([r["first"][m] for r in runs])
        summary["first_sampled"] = median_range([r["first"]["sampled"] for r in runs])
        summary["top_k"] = runs[0]["scores"]["llc_misses"].top_k
        row["samplers"][sampler] = summary
    return row


def fmt_range(values: tuple[float, float, float], percent: bool = False,
              short: bool = False) -> str:
    """Median (range); short: the median alone."""
    mid, lo, hi = values
    if np.isnan(mid):
        return "n/a"
    if percent:
        return f"{100 * mid:.0f}%" if short else f"{100 * mid:.1f}% ({100 * lo:.1f}–{100 * hi:.1f})"
    return f"{mid:.2f}" if short else f"{mid:.3f} ({lo:.2f}–{hi:.2f})"


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
            print(f"{name:9s} objects {r['objects']:3d} scored {r['hot_objects']:2d} loads "
                  f"{r['loads']:.3g} misses {r['misses']:.3g} plain {r['t_plain']:.2f}s inert "
                  f"{r['t_inert']:.2f}s ({r['slowdown_inert']:.1f}x) trace {r['t_trace']:.2f}s "
                  f"({r['slowdown_trace']:.1f}x)", flush=True)
            for sampler, s in r["samplers"].items():
                for x in s["runs"]:
                    per = " ".join(
                        f"{METRIC_NAMES[m]}: rho {x['scores'][m].spearman:.3f} "
                        f"top{x['scores'][m].top_k} {x['scores'][m].overlap:.2f} "
                        f"regret {100 * x['scores'][m].regret:.1f}%;" for m in METRICS)
                    f = x["first"]
                    print(f"  {sampler:7s} [{x['samples']:.0f} sampled, {x['matched']} matched, "
                          f"{x['wall']:.2f}s] {per} first: {100 * f['sampled']:.0f}% of sampled, "
                          f"{100 * f['loads']:.0f}% of loads, {100 * f['llc_misses']:.0f}% of "
                          "misses", flush=True)
    if args.markdown:
        print("\n| workload | sampler | objects (scored) | Spearman vs loads | Spearman vs "
              "misses | top-k vs loads | top-k vs misses | regret on loads | regret on misses "
              "| sampled first: share of sampled / loads / misses | instrumented, inert | "
              "traced |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            args_text = r["args"] if r["args"] == r["sampled_args"] else (
                f"{r['args']} (sampled: {r['sampled_args']})")
            for sampler, s in r["samplers"].items():
                first = " / ".join(fmt_range(s[f"first_{m}"], percent=True, short=True)
                                   for m in ("sampled", *METRICS))
                print(f"| {r['workload']} {args_text} | {sampler} | {r['objects']} "
                      f"({r['hot_objects']}) | {fmt_range(s['spearman_loads'])} | "
                      f"{fmt_range(s['spearman_llc_misses'])} | "
                      f"{fmt_range(s['overlap_loads'], short=True)} | "
                      f"{fmt_range(s['overlap_llc_misses'], short=True)} (k={s['top_k']}) | "
                      f"{fmt_range(s['regret_loads'], percent=True)} | "
                      f"{fmt_range(s['regret_llc_misses'], percent=True)} | {first} | "
                      f"{r['slowdown_inert']:.1f}x | {r['slowdown_trace']:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
