"""The third-party compare suite: `objtier compare --tier swap` on programs nobody here wrote.

Each program is a small driver (bench/third_party/programs/) around a library installed by
bench/third_party/setup.sh into build/third-party/venv. For every (program, local) pair this
runs one `objtier compare --tier swap --local PCT --repeat R` (compare interleaves the kernel
and objtier arms itself), reads its summary.json and writes one markdown table:
kernel and objtier median wall time (s), the speedup (kernel / objtier wall time), median
swap-ins per arm (pages), the kernel model's predicted vs measured swap-ins per arm
(summary.json "model_check", where the plan has a model) and whether both arms finished
every run; then the geometric mean of the speedups per local size.

    bench/third_party/setup.sh
    .venv/bin/python bench/compare_suite.py [--repeat 5] [--programs cg,graph,vector,duckdb,redis,
        smallgraph,sqlite]
        [--local 70%,50%] [-o bench-out/compare-suite] [--report-only [--write-results]]
        [--results-dir bench/results] [--no-results]

It also writes a results file (objtier.bench_results) to bench/results/ (docs/benchmarks.md is
rendered from those): every run of compare.csv, the rows above, the speedups and geomeans.
--report-only writes one only with --write-results (dated by the compares' own summaries,
commit unknown).

The min–max beside each median is the spread of that arm's finished runs: where the two arms'
spreads overlap, the speedup is within the noise of the machine.

Needs root (compare makes a memory cgroup and a zram device, and removes both).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from objtier import bench_results

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS_DIR = ROOT / "bench" / "third_party" / "programs"
VENV_PYTHON = ROOT / "build" / "third-party" / "venv" / "bin" / "python"
OBJTIER = ROOT / ".venv" / "bin" / "objtier"
TPCH_CACHE = ROOT / "build" / "third-party" / "tpch-sf0.1.duckdb"   # made by setup.sh

#: name -> (driver script, its arguments, the module it needs in the third-party venv)
PROGRAMS: dict[str, tuple[str, list[str], str]] = {
    "cg": ("cg.py", [], "scipy"),
    "graph": ("graph_igraph.py", [], "igraph"),
    "vector": ("vector_hnswlib.py", [], "hnswlib"),
    "duckdb": ("duckdb_tpch.py", ["--cache", str(TPCH_CACHE)], "duckdb_extension_tpch"),
    "redis": ("redis_bench.py", [], "socket"),
    # small-block programs: interpreter objects, SQLite's page cache
    "smallgraph": ("graph_networkx.py", [], "networkx"),
    "sqlite": ("sqlite_btree.py", [], "sqlite3"),
    # a C++ library's own containers: Boost.Graph's adjacency lists, PageRank over them
    "boostpr": ("boost_pagerank.cc", ["--scale", "17", "--degree", "8", "--iters", "60"], ""),
}
#: programs built by setup.sh from a .cc driver (no venv module): name -> the binary
BUILT = ROOT / "build" / "third-party"
#: name -> options of `objtier compare` it needs (redis: the server and client are children)
COMPARE_OPTIONS: dict[str, list[str]] = {"redis": ["--follow-forks"]}
#: name -> commands on PATH or files it needs besides the venv (setup.sh, Debian packages)
NEEDS: dict[str, list[str]] = {"duckdb": [str(TPCH_CACHE)],
                               "redis": ["redis-server", "redis-benchmark"],
                               "boostpr": [str(BUILT / "boost_pagerank")]}

#: the measured swap-ins of an arm, in the order model_check reads them (pages)
SWAPIN_KEYS = ("memcg_refault_anon", "pswpin", "memcg_pgmajfault", "major_faults")


def missing_module(module: str) -> str | None:
    """Why the venv cannot run a program needing module, or None when it can (module ""
    needs no venv: a program setup.sh built)."""
    if not module:
        return None
    if not VENV_PYTHON.exists():
        return f"no {VENV_PYTHON} (run bench/third_party/setup.sh)"
    done = subprocess.run([str(VENV_PYTHON), "-c", f"import {module}"],
                          capture_output=True, check=False)
    return None if done.returncode == 0 else f"{module} not installed in the venv"


def missing_needs(name: str) -> str | None:
    """Why a program's other needs (NEEDS) are not met, or None when they are."""
    for need in NEEDS.get(name, []):
        if not (Path(need).exists() if "/" in need else shutil.which(need)):
            return (f"no {need} (bench/third_party/setup.sh; Debian redis-server, redis-tools, "
                    f"libboost-graph-dev)")
    return None


def compare_dir(out: Path, name: str, local: str) -> Path:
    return out / f"{name}-{local.rstrip('%')}"


def program_command(name: str, *extra: str) -> list[str]:
    """The command line of program `name` (PROGRAMS): the venv's Python, its driver and its
    arguments, then `extra` (more of the driver's options)."""
    script, args, _module = PROGRAMS[name]
    if script.endswith(".cc"):      # built by setup.sh: the binary itself
        return [str(BUILT / Path(script).stem), *args, *extra]
    return [str(VENV_PYTHON), str(PROGRAMS_DIR / script), *args, *extra]


def run_compare(name: str, local: str, repeat: int, out: Path) -> Path:
    """One `objtier compare --tier swap`; returns its output directory (raises on failure)."""
    target = compare_dir(out, name, local)
    command = [str(OBJTIER), "compare", "--tier", "swap", "--local", local,
               "--repeat", str(repeat), "-o", str(target), "-f",
               *COMPARE_OPTIONS.get(name, []), "--", *program_command(name)]
    print(f"== {name} at {local} local: {' '.join(command)}", flush=True)
    with open(out / f"{name}-{local.rstrip('%')}.log", "w") as log:
        done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"compare exited {done.returncode} (see {log.name})")
    return target


def swapins(medians: dict[str, Any]) -> float | None:
    return next((medians[k] for k in SWAPIN_KEYS if medians.get(k) is not None), None)


def wall_range(target: Path) -> dict[str, tuple[float, float]]:
    """Per arm, the fastest and slowest finished run's wall time (s), from compare.csv."""
    walls: dict[str, list[float]] = {}
    with open(target / "compare.csv") as f:
        for run in csv.DictReader(f):
            if run["returncode"] == "0":
                walls.setdefault(run["config"], []).append(float(run["wall_s"]))
    return {arm: (min(w), max(w)) for arm, w in walls.items()}


def row_of(name: str, local: str, target: Path) -> dict[str, Any]:
    """The table's cells for the compare in target."""
    summary = json.loads((target / "summary.json").read_text())
    spread = wall_range(target)
    med = summary["medians"]
    check = summary.get("model_check") or {}
    model = check.get("arms", {})
    alive = all(med[a]["runs"] > 0 and med[a]["finished"] == med[a]["runs"]
                for a in ("baseline", "objtier"))
    return {"program": name, "local": local,
            "footprint_mib": summary["unlimited"]["footprint_bytes"] / 2**20,
            "locked_mib": (med["objtier"].get("locked_bytes") or 0) / 2**20,
            "kernel_s": med["baseline"]["wall_s"], "objtier_s": med["objtier"]["wall_s"],
            "kernel_range_s": spread.get("baseline"), "objtier_range_s": spread.get("objtier"),
            "speedup": summary["ratios"].get("speedup"),
            "kernel_swapins": swapins(med["baseline"]),
            "objtier_swapins": swapins(med["objtier"]),
            "predicted": {arm: model.get(arm, {}).get("predicted_swapins")
                          for arm in ("baseline", "objtier")},
            "alive": alive,
            # the plan did nothing: both arms ran the same command (the ratio is noise)
            "same_command": bool(summary.get("same_command")),
            "survival": {a: f"{med[a]['finished']}/{med[a]['runs']}"
                         for a in ("baseline", "objtier")}}


#: the issue's goal for this suite, and how the page states it
GOAL = "geomean ≥ 1.5× at 50 %; no program below 0.97×"
MIN_SUITE = 5   # programs a run needs for its geomean to be judged against GOAL
#: the columns of compare.csv kept in the results file's raw runs
RAW_COLUMNS = ("config", "repeat", "order", "returncode", "status", "wall_s", "user_s",
               "system_s", "memcg_refault_anon", "pswpin", "major_faults", "locked_bytes")


def raw_runs(target: Path) -> list[dict[str, str]]:
    with open(target / "compare.csv") as f:
        return [{k: run.get(k) for k in RAW_COLUMNS} for run in csv.DictReader(f)]


def when(target: Path) -> str | None:
    """The compare's own start time (summary.json machine.date)."""
    try:
        return json.loads((target / "summary.json").read_text())["machine"]["date"]
    except (OSError, KeyError, ValueError):
        return None


def results_record(rows: list[dict[str, Any]], failed: list[str], out: Path, command: str,
                   loads: list[float] | None, commit: str | None = None) -> dict[str, Any]:
    """The results file of one suite run (objtier.bench_results)."""
    locals_ = list(dict.fromkeys(r["local"] for r in rows))
    means = {local: geomean([r["speedup"] for r in rows if r["local"] == local])
             for local in locals_}
    per = {name: [next((r["speedup"] for r in rows if r["program"] == name
                        and r["local"] == local), None) for local in locals_]
           for name in dict.fromkeys(r["program"] for r in rows)}
    at = " / ".join(locals_)
    figure = (", ".join(f"{n} " + " / ".join(f"{fmt(v, '.2f')}×" for v in vs)
                        for n, vs in per.items())
              + f" at {at}; geomean " + " / ".join(f"{fmt(m, '.2f')}×" for m in means.values()))
    if bench_results.words(figure) > bench_results.MAX_WORDS:
        best = max(rows, key=lambda r: r["speedup"] or 0)
        figure = ("geomean " + " / ".join(f"{fmt(m, '.2f')}×" for m in means.values())
                  + f" at {at}; best {best['program']} {best['speedup']:.2f}× at {best['local']}")
    alive = sum(r["alive"] for r in rows)
    cut = sum(1 for r in rows if (r["objtier_swapins"] or 0) < (r["kernel_swapins"] or 0))
    finding = (f"both arms alive in {alive} of {len(rows)} cells; objtier swapped in less "
               f"in {cut} of {len(rows)}"
               + (f"; {len(failed)} not run" if failed else ""))
    half = means.get("50%")
    at_half = [r for r in rows if r["local"] == "50%" and r["speedup"]]
    if len(at_half) >= MIN_SUITE:   # how much the geomean owes its best program
        top = max(at_half, key=lambda r: r["speedup"])
        rest = geomean([r["speedup"] for r in at_half if r is not top])
        finding += f"; geomean without {top['program']} {fmt(rest, '.2f')}×"
    whole = len(per) >= MIN_SUITE   # the goal is the suite's: a few programs cannot meet it
    below = [r for r in rows if (r["speedup"] or 0) < 0.97]
    goal = GOAL + ("" if half is None else ": " + (
        "not judged (a subset of the suite)" if not whole else
        "met" if half >= 1.5 and not below else "not met"))
    if whole and below:
        goal += " (below: " + ", ".join(
            f"{r['program']} {r['local']} {fmt(r['speedup'], '.2f')}×"
            + (", both arms the same command" if r["same_command"] else "")
            for r in below) + ")"
    same = sum(r["same_command"] for r in rows)
    if same:
        finding += f"; the plan did nothing in {same} (both arms the same command)"
    dates = sorted(d for d in (when(compare_dir(out, r["program"], r["local"])) for r in rows)
                   if d)
    return bench_results.make(
        "compare_suite", "placement",
        title=f"third-party programs ({', '.join(per)}), swap tier at {at} local: kernel "
              "reclaim vs the plan",
        kind="real, exact", command=command, figure=figure, finding=finding, goal=goal,
        medians={"rows": rows}, ratios={"speedup": {f"{r['program']} {r['local']}":
                                                    r["speedup"] for r in rows},
                                        "geomean_speedup": means},
        raw={f"{r['program']} {r['local']}": raw_runs(compare_dir(out, r["program"],
                                                                  r["local"]))
             for r in rows},
        date=dates[0] if dates else None,
        load_=f"load {bench_results.span(loads)}" if loads else None, commit_=commit,
        note=("failed: " + "; ".join(failed)) if failed else None)


def geomean(values: list[float]) -> float | None:
    good = [v for v in values if v and math.isfinite(v) and v > 0]
    return math.exp(sum(map(math.log, good)) / len(good)) if good else None


def fmt(value: float | None, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def range_cell(median: float | None, span: tuple[float, float] | None) -> str:
    if median is None:
        return "–"
    return f"{median:.2f}" + (f" ({span[0]:.1f}–{span[1]:.1f})" if span else "")


def model_cell(predicted: float | None, measured: float | None) -> str:
    if predicted is None:
        return "–"
    if not measured:
        return f"{predicted:,.0f} / –"
    return f"{predicted:,.0f} / {measured:,.0f} ({100 * (predicted - measured) / measured:+.0f} %)"


def table(rows: list[dict[str, Any]], failed: list[str]) -> str:
    """The markdown table, then the geometric means and what did not run."""
    lines = ["| program | local | footprint MiB | locked MiB | kernel s (min–max) "
             "| objtier s (min–max) | speedup "
             "| swap-ins kernel | swap-ins objtier | model kernel (pred / meas) "
             "| model objtier (pred / meas) | both arms alive |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(
            f"| {r['program']} | {r['local']} | {r['footprint_mib']:.0f} "
            f"| {r['locked_mib']:.1f} | {range_cell(r['kernel_s'], r['kernel_range_s'])} "
            f"| {range_cell(r['objtier_s'], r['objtier_range_s'])} "
            f"| {fmt(r['speedup'], '.2f')}×{' (same command)' if r['same_command'] else ''} "
            f"| {fmt(r['kernel_swapins'], ',.0f')} | {fmt(r['objtier_swapins'], ',.0f')} "
            f"| {model_cell(r['predicted']['baseline'], r['kernel_swapins'])} "
            f"| {model_cell(r['predicted']['objtier'], r['objtier_swapins'])} "
            f"| {'yes' if r['alive'] else 'no'} ({r['survival']['baseline']}, "
            f"{r['survival']['objtier']}) |")
    lines.append("")
    for local in dict.fromkeys(r["local"] for r in rows):
        mean = geomean([r["speedup"] for r in rows if r["local"] == local])
        lines.append(f"geomean speedup at {local} local: {fmt(mean, '.2f')}×")
    lines.append(f"geomean speedup, all: {fmt(geomean([r['speedup'] for r in rows]), '.2f')}×")
    lines += [f"not run: {why}" for why in failed]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per arm (5)")
    parser.add_argument("--programs", default=",".join(PROGRAMS),
                        help=f"comma-separated, of {', '.join(PROGRAMS)}")
    parser.add_argument("--local", default="70%,50%",
                        help="comma-separated local sizes, PCT of the footprint or SIZE")
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "bench-out/compare-suite")
    parser.add_argument("--report-only", action="store_true",
                        help="run nothing: the table of the compares already in --output")
    parser.add_argument("--write-results", action="store_true",
                        help="with --report-only: write the results file too")
    bench_results.add_arguments(parser)
    args = parser.parse_args()
    names = [p for p in args.programs.split(",") if p]
    unknown = sorted(set(names) - set(PROGRAMS))
    if unknown:
        parser.error(f"unknown program(s) {', '.join(unknown)}")
    if not args.report_only:
        if args.output.exists():
            shutil.rmtree(args.output)
        args.output.mkdir(parents=True)

    rows, failed, loads = [], [], []
    commit = None if args.report_only else bench_results.commit()
    for name in names:
        why = None if args.report_only else (missing_module(PROGRAMS[name][2])
                                             or missing_needs(name))
        if why:
            failed.append(f"{name}: {why}")
            continue
        for local in args.local.split(","):
            loads.append(os.getloadavg()[0])
            try:
                target = (compare_dir(args.output, name, local) if args.report_only
                          else run_compare(name, local, args.repeat, args.output))
                rows.append(row_of(name, local, target))
            except (RuntimeError, OSError, KeyError, json.JSONDecodeError) as err:
                failed.append(f"{name} at {local}: {err}")
    text = table(rows, failed)
    (args.output / "results.md").write_text(text)
    (args.output / "results.json").write_text(json.dumps({"rows": rows, "failed": failed},
                                                         indent=2))
    print(text, end="")
    if rows and (not args.report_only or args.write_results):
        bench_results.save(args, lambda: results_record(
            rows, failed, args.output, bench_results.script_command(sys.argv[1:],
                                                                    "bench/compare_suite.py"),
            None if args.report_only else loads, commit), tag=args.output.name)
    return 0 if rows and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
