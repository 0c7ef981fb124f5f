"""perf as a source: how perf-sourced recordings rank objects against an exact trace, and what
`--with-perf` costs.

Per workload (bfs from workloads/graph, cg: bench/cg.c, the C twin of the scipy CG program):
build an instrumented copy with `objtier cc -O2 -fopenmp` (bench/exact_accuracy.py's build),
take one exact recording (OBJTIER_SAMPLER=trace: loads and LLC-model misses per object), then
REPEATS rounds, interleaved, of: the binary alone (runtime inert), `objtier record` (its
default sampler) and `objtier record --with-perf` (perf record -d beside it: on a machine
without perf mem, major faults under the pageout sampler). Each --with-perf recording is
scored (objtier.analysis.accuracy.score_tables) with perf's samples per object as the sampled
accesses ("perf"), and with the same recording's objects table as objects/plan rank it
("table": the pageout windows' estimated touches when there are windows); the plain record
run is scored as "record". Exact references: this machine's LLC model (on the development VM
300 MiB, so its misses are first touches of lines) and a 4 MiB one (exact_accuracy.EXACT_LLC_MODELS). Wall times are of the whole command; the overhead of --with-perf
is its median wall over the plain record's median wall (same rounds).

With --scipy-cg it also times the scipy CG program (bench/third_party/programs/cg.py under
build/third-party/venv; no exact trace is possible for it) alone, under record and under
record --with-perf, and prints the rank correlation of perf's samples per object with the
recording's own table (not an exact reference).

Usage: python bench/perf_source_accuracy.py [--repeats 3] [--only bfs,cg] [--scipy-cg]
    [--results-dir bench/results] [--no-results]

Also writes a results file (objtier.bench_results): every round's Spearman and wall times.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from scipy.stats import spearmanr

from exact_accuracy import (EXACT_ATTEMPTS, OBJTIER, REPO, WORKLOADS,  # bench/, beside this
                            build, clean_env, exact_object_tables, median_range, timed)

from objtier import bench_results
from objtier.analysis.accuracy import METRICS, sampled_on_exact, score_tables
from objtier.analysis.objects import object_table
from objtier.trace import open_trace

BENCH = Path(__file__).resolve().parent

CASES = {  # name: (sources, exact arguments, sampled arguments)
    "bfs": (WORKLOADS["bfs"][0], WORKLOADS["bfs"][1], WORKLOADS["bfs"][1]),
    "cg": ([str(BENCH / "cg.c")], ["-n", "100000", "-i", "25"], ["-n", "100000", "-i", "200"]),
}
SCIPY_CG = REPO / "bench" / "third_party" / "programs" / "cg.py"
VENV_PYTHON = REPO / "build" / "third-party" / "venv" / "bin" / "python"


def with_accesses(table: pa.Table, values: np.ndarray) -> pa.Table:
    return table.set_column(table.schema.get_field_index("accesses"), "accesses",
                            pa.array(values.astype(np.float64)))


def perf_table(trace) -> pa.Table:
    """The objects table with perf's samples (their weights) per object as the accesses."""
    from objtier.analysis.mapping import sample_objects

    table = object_table(trace, labels=False)
    mapped = sample_objects(trace)                  # trace.samples: perf's
    weight = trace.samples.column("weight").to_numpy().astype(np.float64)
    weight[weight == 0] = 1.0
    hit = mapped >= 0
    return with_accesses(table, np.bincount(mapped[hit], weights=weight[hit],
                                            minlength=table.num_rows))


FAILURES: list[str] = []    # runs that crashed and were run again


CPU: dict[str, list[float]] = {}   # "record" / "with-perf" -> CPU seconds of each run


def record(out: Path, command: list[str], *extra: str) -> float:
    """Wall seconds of one `objtier record`; its CPU seconds (record, runtime, program and
    perf: all are waited-for descendants) go to CPU."""
    for attempt in range(EXACT_ATTEMPTS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run([*OBJTIER, "record", "-q", "-f", *extra, "-o", str(out), "--",
                               *command], stdout=subprocess.DEVNULL, env=clean_env())
        wall = time.perf_counter() - start
        if done.returncode == 0 and not open_trace(out).runtime_samples.num_rows:
            FAILURES.append(f"record {' '.join(extra)} {Path(command[0]).name}: no samples "
                            f"(the sampler found no swap with free space)")
            print(f"  {FAILURES[-1]} (attempt {attempt + 1})", flush=True)
            continue
        if done.returncode == 0:
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            CPU.setdefault("with-perf" if extra else "record", []).append(
                after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            return wall
        FAILURES.append(f"record {' '.join(extra)} {Path(command[0]).name}: exit "
                        f"{done.returncode}")
        print(f"  {FAILURES[-1]} (attempt {attempt + 1})", flush=True)
    raise SystemExit(f"{command[0]}: no recording")


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def one(name: str, work: Path, repeats: int) -> dict:
    sources, exact_args, sampled_args = CASES[name]
    exe = build(name, sources, work)
    exacts = exact_object_tables(name, exe, exact_args, work, FAILURES)
    command = [str(exe), *sampled_args]
    walls = {"alone": [], "record": [], "with-perf": []}
    scores = {f"{kind} / LLC {llc}": [] for llc in exacts for kind in ("perf", "table", "record")}
    samples = []
    loads = []
    for i in range(repeats):
        loads.append(load())
        walls["alone"].append(timed(command, clean_env()))
        walls["record"].append(record(work / f"{name}-rec{i}.otr", command))
        out = work / f"{name}-perf{i}.otr"
        walls["with-perf"].append(record(out, command, "--with-perf"))
        trace = open_trace(out)
        samples.append(trace.perf_samples.num_rows)
        tables = {"perf": perf_table(trace), "table": object_table(trace, labels=False),
                  "record": object_table(open_trace(work / f"{name}-rec{i}.otr"),
                                         labels=False)}
        for llc, exact in exacts.items():
            for kind, table in tables.items():
                scores[f"{kind} / LLC {llc}"].append(score_tables(exact, table))
    exact = exacts["machine"]
    _, matched = sampled_on_exact(exact, perf_table(open_trace(work / f"{name}-perf0.otr")))
    return {"name": name, "exact_args": " ".join(exact_args),
            "sampled_args": " ".join(sampled_args), "objects": exact.num_rows,
            "matched": matched, "walls": walls, "scores": scores, "samples": samples,
            "loads": loads}


def scipy_cg(work: Path, repeats: int) -> dict | None:
    if not VENV_PYTHON.exists():
        print("scipy CG: no build/third-party/venv (bench/third_party/setup.sh); skipped")
        return None
    command = [str(VENV_PYTHON), str(SCIPY_CG), "--rows", "400000", "--iters", "25"]
    walls = {"alone": [], "record": [], "with-perf": []}
    rhos, loads, samples = [], [], []
    for i in range(repeats):
        loads.append(load())
        walls["alone"].append(timed(command, clean_env()))
        walls["record"].append(record(work / f"scipy-rec{i}.otr", command))
        out = work / f"scipy-perf{i}.otr"
        walls["with-perf"].append(record(out, command, "--with-perf"))
        trace = open_trace(out)
        samples.append(trace.perf_samples.num_rows)
        perf = perf_table(trace).column("accesses").to_numpy()
        own = object_table(trace, labels=False).column("accesses").to_numpy()
        keep = (perf > 0) | (own > 0)
        rhos.append(float(spearmanr(perf[keep], own[keep]).statistic)
                    if keep.sum() >= 2 else float("nan"))
    return {"walls": walls, "rhos": rhos, "loads": loads, "samples": samples}


def fmt(values: list[float]) -> str:
    mid, lo, hi = median_range(values)
    return "n/a" if np.isnan(mid) else f"{mid:.3f} ({lo:.2f}–{hi:.2f})"


def cpu_line() -> str:
    """CPU seconds of the record runs since the last call (median, and all)."""
    runs = {k: v[:] for k, v in CPU.items()}
    CPU.clear()
    if set(runs) != {"record", "with-perf"}:
        return "CPU: n/a"
    med = {k: statistics.median(v) for k, v in runs.items()}
    return (f"CPU median record {med['record']:.2f}s, --with-perf {med['with-perf']:.2f}s "
            f"(x{med['with-perf'] / med['record']:.3f}); all: "
            + "; ".join(f"{k} " + " ".join(f"{x:.2f}" for x in v) for k, v in runs.items()))


def walls_line(walls: dict[str, list[float]]) -> str:
    med = {k: statistics.median(v) for k, v in walls.items()}
    return (f"wall median alone {med['alone']:.2f}s, record {med['record']:.2f}s, "
            f"record --with-perf {med['with-perf']:.2f}s "
            f"(x{med['with-perf'] / med['record']:.3f} of record); all: "
            + "; ".join(f"{k} " + " ".join(f"{x:.2f}" for x in v) for k, v in walls.items()))


def results_record(found: dict[str, dict], command: str) -> dict:
    """The results file: per workload the Spearman of each round (perf's samples per object
    against the exact trace's misses, per LLC model) and the wall times; medians and the
    --with-perf / record wall ratio."""
    raw, medians, ratios, loads = {}, {}, {}, []
    for name, r in found.items():
        walls = r["walls"]
        raw[name] = {"walls": walls, "loads": r.get("loads"),
                     "spearman": {kind: {m: [s[m].spearman for s in runs] for m in METRICS}
                                  for kind, runs in r.get("scores", {}).items()}}
        if "rhos" in r:
            raw[name]["spearman"] = {"perf vs the recording's table": {"misses": r["rhos"]}}
        medians[name] = {"walls": {k: statistics.median(v) for k, v in walls.items() if v},
                         "spearman": {k: {m: float(np.nanmedian(v)) for m, v in d.items()}
                                      for k, d in raw[name]["spearman"].items()}}
        w = medians[name]["walls"]
        ratios[name] = {"with_perf_over_record": w["with-perf"] / w["record"]}
        loads += [float(x) for x in r.get("loads") or []]
    rho = {n: medians[n]["spearman"].get("perf / LLC machine", {}).get("misses")
           for n in found}
    figure = ("median Spearman, perf vs exact misses (machine LLC model): "
              + ", ".join(f"{n} {v:.2f}" for n, v in rho.items() if v is not None)
              + "; --with-perf wall × record: "
              + " / ".join(f"{ratios[n]['with_perf_over_record']:.2f}" for n in found))
    met = [n for n, v in rho.items() if v is not None and v >= 0.9]
    return bench_results.make(
        "perf_source_accuracy", "prediction",
        title="objects ranked by record --with-perf against an exact trace's LLC-model "
              f"misses ({', '.join(found)})",
        kind="real, estimated", command=command, figure=figure,
        finding=f"Spearman ≥ 0.9 at the median on {len(met)} of {len(rho)}",
        goal="Spearman ≥ 0.9", medians=medians, ratios=ratios, raw=raw,
        load_=f"load {bench_results.span(loads)}" if loads else None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="")
    parser.add_argument("--scipy-cg", action="store_true")
    bench_results.add_arguments(parser)
    args = parser.parse_args()
    found: dict[str, dict] = {}
    names = [n for n in CASES if not args.only or n in args.only.split(",")]
    with tempfile.TemporaryDirectory(prefix="objtier-perfsrc-") as tmp:
        for name in names:
            r = one(name, Path(tmp), args.repeats)
            found[name] = r
            print(f"{name} (exact {r['exact_args']}; sampled {r['sampled_args']}): "
                  f"{r['objects']} objects, {r['matched']} matched; perf samples "
                  f"{r['samples']}; load at round starts {r['loads']}")
            for kind, runs in r["scores"].items():
                print(f"  {kind:18s} " + "; ".join(
                    f"spearman vs {m} {fmt([s[m].spearman for s in runs])}, top-k "
                    f"{fmt([s[m].overlap for s in runs])}" for m in METRICS))
            print(f"  {walls_line(r['walls'])}\n  {cpu_line()}", flush=True)
        if args.scipy_cg:
            r = scipy_cg(Path(tmp), args.repeats)
            if r:
                found["scipy cg"] = r
                print(f"scipy cg (--rows 400000 --iters 25): perf samples {r['samples']}; "
                      f"spearman perf vs the recording's table {fmt(r['rhos'])} (not exact); "
                      f"load {r['loads']}")
                print(f"  {walls_line(r['walls'])}\n  {cpu_line()}")
    print(f"runs that crashed and were repeated: {len(FAILURES)}")
    if found:
        bench_results.save(args, lambda: results_record(found, bench_results.script_command(
            sys.argv[1:], "bench/perf_source_accuracy.py")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
