"""`objtier compare --tier swap` over the workload suite: kernel reclaim vs objtier plan.

    .venv/bin/python bench/compare_swap.py [--local 70%,50%] [--repeat 3] [--scale 20]
        [--workloads bfs_kron,bc_kron,cc_kron,bfs_urand,bc_urand,cc_urand,stream,gups,
                     ptrchase,kmeans]
        [--size-factor 1.0] [--trials 1.0] [--stat-flush 10] [--arms objtier-noguard,kernel-raw]
        [-o bench-out/compare] [--table-only [--write-results]] [--results-dir DIR]

Every arm but kernel-raw runs with compare's stat-flush reader (--stat-flush, default 10 ms):
the fair baseline. The table shows each arm's survival next to its time; an arm with a failed
run gets no speedup ("–"). With --arms objtier-noguard it also shows the plan without the
pressure guard; with kernel-raw, how often kernel reclaim without the reader survived.

Graphs are generated once (graphgen -o, outside the measurement) and loaded with -f. Sizes are
parameters: --scale for the graphs, --size-factor scales STREAM, GUPS and K-means (1.0 = about
100 MiB each, a few seconds per unlimited run here). Needs root. Prints a Markdown table (one row
per workload and local size), plus a combined chart per local size.
--table-only runs nothing and prints the table of the comparisons already in -o. Every run (and
--table-only with --write-results) also writes a results file to bench/results/
(objtier.bench_results; docs/benchmarks.md is rendered from those): the runs of each
compare.csv, the medians, speedups and survival per workload. Swap figures
in the table are the cgroup's own swap-ins (workingset_refault_anon): the vmstat counters are
system-wide. Failed runs are counted per configuration, with OOM kills and timeouts named.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from objtier import bench_results, workloads
from objtier.errors import UsageError
from objtier.workloads import SUITE, make_graphs

REPO = Path(__file__).resolve().parent.parent
#: how the docs' section names --phases / --no-phases / compare's default
PHASES_NOTE = {None: "", True: " (--phases)", False: " (--no-phases)"}
PY = sys.executable


def fmt(value, digits=3) -> str:
    if value is None:
        return "–"
    if value == "inf":
        return "∞"
    return f"{float(value):.{digits}g}"


def survived(rows: list[dict], config: str) -> str:
    """'finished/runs' of one arm, with how many of the failures were OOM kills and timeouts
    (the status compare wrote; older CSVs without it: the oom_kill counter)."""
    mine = [r for r in rows if r["config"] == config]
    if not mine:
        return "–"
    ok = [r for r in mine if r["returncode"] == "0" and r.get("timed_out") != "True"]
    bad = [r for r in mine if r not in ok]
    oom = sum(1 for r in bad if r.get("status") == "OOM-killed" or (
        "status" not in r and (r.get("memcg_oom_kills") or "0") not in ("", "0")))
    late = sum(1 for r in bad if r.get("timed_out") == "True")
    why = ", ".join(x for x in (f"{oom} OOM" if oom else "", f"{late} timeout" if late else "") if x)
    return f"{len(ok)}/{len(mine)}" + (f" ({why})" if why else "")


def sys_per_swapin(rows: list[dict], config: str) -> float | None:
    """The arm's median system CPU time [µs] per swap-in (the cgroup's refaults)."""
    system, swapins = _median(rows, config, "system_s"), _median(rows, config,
                                                                  "memcg_refault_anon")
    return None if not system or not swapins else system * 1e6 / swapins


def _median(rows: list[dict], config: str, key: str) -> float | None:
    values = [float(r[key]) for r in rows
              if r["config"] == config and r["returncode"] == "0" and r.get(key) not in ("", None)]
    return statistics.median(values) if values else None


def _cut(base: float | None, obj: float | None):
    if base is None or obj is None:
        return None
    return "inf" if obj == 0 and base > 0 else (1.0 if obj == 0 else base / obj)


def peak_locked(target: Path) -> int:
    """Most bytes the runtime held mlocked at once in any objtier run (from the traces)."""
    from objtier import enforcement as enforce

    plan = json.loads((target / "plan.json").read_text())
    found = [enforce.read_enforcement(plan, d) for d in sorted((target / "runs").glob("*.otr"))]
    return max((f.locked_bytes for f in found if f), default=0)


def reader_text(flush: dict) -> str:
    """'10 ms, >= 1234 reads a run' (the fewest reads any run with the reader got), or 'off'."""
    if not flush or not flush.get("period_ms"):
        return "off"
    fewest = [v["fewest_reads_in_a_run"] for v in flush["per_arm"].values()
              if v["period_ms"] > 0]
    return f"{fmt(flush['period_ms'])} ms, ≥ {min(fewest)} reads a run" if fewest else \
        f"{fmt(flush['period_ms'])} ms"


def fair_of(summary: dict, rows: list[dict]) -> bool:
    """Whether the compare's ratios stand: none withheld and both arms finished every run."""
    return not summary.get("ratios_withheld") and all(
        survived(rows, c).split(" ")[0].split("/")[0] == survived(rows, c).split(" ")[0]
        .split("/")[1] for c in ("baseline", "objtier"))


RAW_COLUMNS = ("config", "repeat", "order", "returncode", "status", "timed_out", "wall_s",
               "user_s", "system_s", "fom_seconds", "memcg_refault_anon", "pswpin",
               "major_faults", "locked_bytes", "memcg_oom_kills")


def results_record(entries: list[tuple[str, str, dict, list[dict], Path]], command: str,
                   loads: list[float] | None, commit: str | None) -> dict:
    """The results file of one run of this script (objtier.bench_results): per workload and
    local size the medians, the speedup where it stands (fair_of) and each run of compare.csv."""
    medians, speedups, raw = {}, {}, {}
    for name, local, summary, rows, target in entries:
        key = f"{name} {local}"
        fair = fair_of(summary, rows)
        speedups[key] = summary["ratios"].get("speedup") if fair else None
        medians[key] = {
            "kernel_s": summary["medians"]["baseline"]["wall_s"],
            "objtier_s": summary["medians"]["objtier"]["wall_s"],
            "kernel_swapins": _median(rows, "baseline", "memcg_refault_anon"),
            "objtier_swapins": _median(rows, "objtier", "memcg_refault_anon"),
            "survival": {c: survived(rows, c) for c in ("baseline", "objtier")},
            "peak_locked_bytes": peak_locked(target),
            "timed_speedup": summary["ratios"].get("timed_speedup") if fair else None,
            "ratios_withheld": summary.get("ratios_withheld")}
        raw[key] = [{k: r.get(k) for k in RAW_COLUMNS} for r in rows]
    locals_ = list(dict.fromkeys(local for _, local, *_ in entries))
    stood = [v for v in speedups.values() if v]
    mean = (statistics.geometric_mean(stood) if stood else None)
    figure = (", ".join(f"{k.split(' ')[0]} " + (f"{fmt(v, 3)}×" if v else "withheld")
                        for k, v in speedups.items())
              + f"; geomean {fmt(mean, 3)}× of the {len(stood)} that stand")
    if bench_results.words(figure) > bench_results.MAX_WORDS:
        best = max(speedups, key=lambda k: speedups[k] or 0)
        figure = (f"geomean {fmt(mean, 3)}× of {len(stood)} of {len(speedups)} cells; best "
                  f"{best} {fmt(speedups[best], 3)}×")
    cut = sum(1 for m in medians.values()
              if (m["objtier_swapins"] or 0) < (m["kernel_swapins"] or 0))
    finding = (f"ratios stand in {len(stood)} of {len(speedups)} cells (both arms finished "
               f"every run); objtier swapped in less in {cut}")
    dates = sorted(d for d in (e[2].get("machine", {}).get("date") for e in entries) if d)
    return bench_results.make(
        "compare_swap", "placement",
        title=f"our workloads ({', '.join(dict.fromkeys(e[0] for e in entries))}), swap tier "
              f"at {' / '.join(locals_)} local: kernel vs plan",
        kind="real, exact", command=command, figure=figure, finding=finding,
        medians=medians, ratios={"speedup": speedups, "geomean_speedup": mean}, raw=raw,
        date=dates[0] if dates else None,
        load_=f"load {bench_results.span(loads)}" if loads else None, commit_=commit,
        note=None if all(e[2].get("runtime_enforces_plans", True) for e in entries) else
        "the runtime did not enforce plans: the objtier arm is the runtime without placement")


def row_for(name: str, local: str, summary: dict, rows: list[dict], target: Path) -> str:
    """Swap-ins are the cgroup's own (memory.stat workingset_refault_anon): the vmstat swap
    counters are system-wide and count every other program swapping at the same time."""
    m, r = summary["medians"], summary["ratios"]
    base, obj = m["baseline"], m["objtier"]
    swapin = [_median(rows, c, "memcg_refault_anon") for c in ("baseline", "objtier")]
    noguard = (summary.get("arm_ratios") or {}).get("objtier-noguard")
    flush = summary.get("stat_flush") or {}
    unlimited = summary["unlimited"]["wall_s"]
    plan = summary["plan"]
    fair = fair_of(summary, rows)
    sys_us = [sys_per_swapin(rows, c) for c in ("baseline", "objtier")]
    return (f"| {name} | {local} | {summary['unlimited']['footprint_bytes'] >> 20} | "
            f"{fmt(unlimited)} | {fmt(base['wall_s'])} ({survived(rows, 'baseline')}) | "
            f"{fmt(obj['wall_s'])} ({survived(rows, 'objtier')}) | "
            f"{fmt(r['speedup']) if fair else '–'} | {fmt(r['timed_speedup']) if fair else '–'} | "
            f"{fmt(swapin[0])} | {fmt(swapin[1])} | {fmt(_cut(*swapin)) if fair else '–'} | "
            f"{fmt(r['swapout_reduction']) if fair else '–'} | "
            f"{fmt(sys_us[0])} · {fmt(sys_us[1])} | "
            + (f"{fmt(m['objtier-noguard']['wall_s'])} ({survived(rows, 'objtier-noguard')}), "
               f"{fmt(noguard['speedup'])}x | " if noguard else "– | ")
            + f"{survived(rows, 'kernel-raw')} | "
            f"{reader_text(flush)} | "
            f"{plan.get('fast_objects', '–')} + {plan.get('split_objects', 0)} split / "
            f"{plan.get('objects', '–')}, {fmt(plan.get('fast_access_share'), 2)} of samples, "
            f"{peak_locked(target) >> 20} MiB locked |")


HEADER = ("| workload | local | footprint MiB | unlimited s | baseline s (finished/runs) | "
          "objtier s (finished/runs) | speedup | timed-region speedup | baseline swap-ins | "
          "objtier swap-ins | swap-in cut | swap-out cut (system-wide) | system µs per swap-in: "
          "baseline · objtier | objtier without guard: s (finished/runs), speedup | "
          "kernel-raw (no reader): finished/runs | reader | plan: fast + split / "
          "objects, sampled share, peak locked |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def read_compare(target: Path) -> tuple[dict, list[dict], Path]:
    summary = json.loads((target / "summary.json").read_text())
    with open(target / "compare.csv") as f:
        return summary, list(csv.DictReader(f)), target


def table_from(out: Path, names: list[str], locals_: list[str]) -> list[str]:
    """Rows for earlier comparisons found under out (NAME-PCT directories)."""
    lines = []
    for local in locals_:
        for name in names:
            target = out / f"{name}-{local.rstrip('%')}"
            if not (target / "summary.json").exists():
                continue
            summary = json.loads((target / "summary.json").read_text())
            with open(target / "compare.csv") as f:
                rows = list(csv.DictReader(f))
            lines.append(row_for(name, local, summary, rows, target))
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--local", default="70%,50%")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scale", type=int, default=20)
    parser.add_argument("--size-factor", type=float, default=1.0)
    parser.add_argument("--trials", type=float, default=1.0,
                        help="scales the graph kernels' repetitions (1.0: BFS 256, BC 12, CC 128)")
    parser.add_argument("--gups-log2", type=int, default=None, metavar="N",
                        help="GUPS table of 2^N words (default: 24 scaled by --size-factor)")
    parser.add_argument("--gups-updates", type=int, default=None, metavar="N",
                        help="GUPS updates (default: 4 x the table's words)")
    parser.add_argument("--workloads", default=None, help="comma-separated subset")
    parser.add_argument("--algo", default="auto", help="passed to objtier compare")
    parser.add_argument("--profiles", type=int, default=None,
                        help="passed to objtier compare (default: compare's, 4 for --algo "
                             "auto and pages, else 1)")
    parser.add_argument("--phases", action=argparse.BooleanOptionalAction, default=None,
                        help="passed to objtier compare (default there: one placement per "
                             "marked phase where the program marks them — the graph kernels "
                             "do — else one for the run)")
    parser.add_argument("--timeout", type=float, default=180, help="per limited run [s]")
    parser.add_argument("--mlock-margin", default=None, metavar="SIZE",
                        help="passed to objtier compare (default there: fitted to the plan, "
                             "8 MiB to max(10%% of local, 32 MiB))")
    parser.add_argument("--stat-flush", type=float, default=10.0, metavar="MS",
                        help="passed to objtier compare: the reader's period in every arm "
                             "but kernel-raw (default 10)")
    parser.add_argument("--arms", default="", metavar="LIST",
                        help="extra arms passed to objtier compare (--arm): objtier-noguard, "
                             "kernel-raw; comma-separated")
    parser.add_argument("-o", "--output", default=str(REPO / "bench-out" / "compare"))
    parser.add_argument("--append-docs", action="store_true")
    parser.add_argument("--table-only", action="store_true",
                        help="run nothing: print the table of the comparisons already in -o")
    parser.add_argument("--write-results", action="store_true",
                        help="with --table-only: write the results file too")
    bench_results.add_arguments(parser)
    args = parser.parse_args()
    command = bench_results.script_command(sys.argv[1:], "bench/compare_swap.py")
    if args.append_docs:
        parser.error("--append-docs: docs/benchmarks.md is rendered from bench/results/ "
                     "(make bench-doc); every run writes its results file there")
    if args.gups_updates is not None and args.gups_updates < 1:
        parser.error("--gups-updates must be at least 1")
    if args.table_only:
        names = args.workloads.split(",") if args.workloads else list(SUITE)
        print(HEADER + "\n" + "\n".join(table_from(Path(args.output), names,
                                                     args.local.split(","))))
        found = [(n, local, *read_compare(Path(args.output) / f"{n}-{local.rstrip('%')}"))
                 for local in args.local.split(",") for n in names
                 if (Path(args.output) / f"{n}-{local.rstrip('%')}" / "summary.json").exists()]
        if args.write_results and found:
            bench_results.save(args, lambda: results_record(found, command, None, None),
                               tag=Path(args.output).name)
        return 0

    from objtier.experiments.chart import plot_comparison
    from objtier.native import NATIVE_DIR

    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    bin_dir = NATIVE_DIR / "bin"
    make_graphs(args.scale, out / "graphs", bin_dir=bin_dir)
    chosen = args.workloads.split(",") if args.workloads else list(SUITE)
    try:
        suite = workloads.suite("host", chosen, graphs=out / "graphs", scale=args.scale,
                                bin_dir=bin_dir, trials=args.trials, factor=args.size_factor,
                                gups_log2=args.gups_log2, gups_updates=args.gups_updates)
    except UsageError as error:
        parser.error(str(error))
    lines, entries, loads = [], [], []
    commit = bench_results.commit()
    for local in args.local.split(","):
        groups = []
        for name in chosen:
            target = out / f"{name}-{local.rstrip('%')}"
            command = [PY, "-m", "objtier", "compare", "-q", "-f", "--local", local, "--repeat",
                       str(args.repeat), "--algo", args.algo, "--timeout", str(args.timeout),
                       "-o", str(target), "--stat-flush", f"{args.stat_flush:g}",
                       *[x for arm in filter(None, args.arms.split(",")) for x in ("--arm", arm)],
                       *(["--mlock-margin", args.mlock_margin] if args.mlock_margin else []),
                       *(["--profiles", str(args.profiles)] if args.profiles else []),
                       *([] if args.phases is None
                         else ["--phases" if args.phases else "--no-phases"]),
                       "--", *suite[name]]
            print(f"== {name} at {local}", file=sys.stderr, flush=True)
            loads.append(os.getloadavg()[0])
            run = subprocess.run(command, capture_output=True, text=True)
            if run.returncode != 0:
                message = (run.stderr.strip().splitlines() or ["?"])[-1]
                lines.append(f"| {name} | {local} | " + "– | " * 15 + f"error: {message} |")
                print(message, file=sys.stderr)
                continue
            summary = json.loads((target / "summary.json").read_text())
            with open(target / "compare.csv") as f:
                rows = list(csv.DictReader(f))
            lines.append(row_for(name, local, summary, rows, target))
            print(lines[-1], flush=True)
            groups.append((name, summary, rows))
            entries.append((name, local, summary, rows, target))
        if groups:
            plot_comparison(groups, out / f"compare-{local.rstrip('%')}.png",
                            f"swap tier, local {local} of the footprint: time / kernel baseline")
    table = HEADER + "\n" + "\n".join(lines)
    print(table)
    if entries:
        bench_results.save(args, lambda: results_record(entries, command, loads, commit),
                           tag=out.name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
