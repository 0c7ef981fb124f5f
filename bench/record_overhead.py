"""Overhead of `objtier record` (default sampler and rate) on the workloads.

For each workload: --repeat interleaved rounds (plain, preloaded, recorded). "preloaded" runs the
program with the runtime preloaded and the settings `objtier record` gives it (the runtime's own
cost); "recorded" is the whole `objtier record` command (adds the Python front end's start-up,
its counters thread and the trace's finishing). Reports the median wall time of each, the ratios
to plain, the median of the workload's own timed region (FOM time) and its ratio, the samples the
recording captured, samples per second and trace bytes per sample. Graph workloads load a graph
file written beforehand, so generation is not in the measurement.

    .venv/bin/python bench/record_overhead.py [--repeat 5] [--scale 18] [--only bfs,cc]
        [--rate HZ]   (the sampler's rate: most samples per second; default the recorder's)
        [--samplers pageout,fault,perf]   (compare samplers in the same interleaved rounds;
                      default: the recorder's auto choice; a sampler that needs swap on a
                      machine without it gets a temporary zram device for the whole run, root)
        [--results-dir bench/results] [--no-results]
    .venv/bin/python bench/record_overhead.py --third-party [--repeat 5] [--short]
        [--only cg,cg-1thread,graph,smallgraph,sqlite,vector] [--rate HZ]

--third-party: the third-party programs of bench/compare_suite.py (bench/third_party/setup.sh)
instead, at sizes of 10-20 s plain (THIRD_PARTY; --short: the drivers' own sizes, 1-5 s, for a
quick check), in --repeat interleaved pairs (plain, recorded) with no preloaded arm. "recorded"
is the whole `objtier record` with its default sampler, as a user runs it (on a machine without
swap it adds and removes its temporary zram device in every run). Per program: median wall
time, timed region (FOM time) and CPU time (user + system of the process tree) of each arm,
the median over pairs of recorded / plain, and the program's transparent huge pages
(AnonHugePages of /proc/PID/smaps_rollup, read every 0.5 s; the reading nearest the middle of
the run is kept), the samples and the recorder's cost as `record` states it.

Also writes a results file (objtier.bench_results): every round's times and the medians.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import resource
import statistics
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import compare_suite  # bench/compare_suite.py, next to this script: the third-party programs
from objtier import bench_results

from objtier import workloads
from objtier.native import binary
from objtier.record.launch import runtime_env
from objtier.record.sampler_choice import choose_sampler, needs_temporary_swap
from objtier.record.session import RecordSettings
from objtier.restore import Restorer
from objtier.trace import open_trace
from objtier.workloads import parse_fom

REPO = Path(__file__).resolve().parent.parent

OBJTIER = REPO / ".venv" / "bin" / "objtier"


CPU_SECONDS: list[float] = []  # user + system seconds of the last timed() run's process tree


def timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    run = subprocess.run(command, capture_output=True, text=True, env=env)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU_SECONDS[:] = [(after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)]
    if run.returncode != 0:
        raise SystemExit(f"failed: {' '.join(command)}\n{run.stderr}")
    return wall, parse_fom(run.stdout).seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--scale", type=int, default=18)
    parser.add_argument("--only", default="")
    parser.add_argument("--rate", type=int, default=None)
    parser.add_argument("--samplers", default="auto")
    parser.add_argument("--third-party", action="store_true",
                        help="the third-party programs (THIRD_PARTY), plain vs recorded")
    parser.add_argument("--short", action="store_true",
                        help="with --third-party: the drivers' own sizes (1-5 s)")
    bench_results.add_arguments(parser)
    args = parser.parse_args()
    if args.third_party:
        if args.samplers != "auto":
            parser.error("--third-party records with record's default sampler (no --samplers)")
        unknown = sorted(set(filter(None, args.only.split(","))) - set(THIRD_PARTY))
        if unknown:
            parser.error(f"unknown program(s) {', '.join(unknown)} (of {', '.join(THIRD_PARTY)})")
        sys.exit(measure_third_party(args))
    if args.short:
        parser.error("--short needs --third-party")
    samplers = [choose_sampler(s, transparent_default=True)[0] for s in args.samplers.split(",")]
    with Restorer() as restorer:
        if any(needs_temporary_swap(s) for s in samplers):
            from objtier.tiers.swap import ZramSwap

            ZramSwap(4 << 30, restorer, priority=0)
        measure(args, samplers)


COLUMNS = ("plain_wall_s", "preloaded_wall_s", "recorded_wall_s", "preloaded_over_plain",
           "recorded_over_plain", "timed_preloaded_over_plain", "timed_recorded_over_plain",
           "cpu_preloaded_over_plain", "samples", "samples_per_s", "bytes_per_sample")


def results_record(rows: list[tuple], raw: dict, command: str, loads: list[float]) -> dict:
    """The results file: each round's times per workload and sampler, and the medians."""
    medians = {row[0]: dict(zip(COLUMNS, row[1:])) for row in rows}
    figure = "timed region, preloaded / plain: " + ", ".join(
        f"{name} {m['timed_preloaded_over_plain']:.3f}" for name, m in medians.items())
    if bench_results.words(figure) > bench_results.MAX_WORDS:
        worst = max(medians, key=lambda n: medians[n]["timed_preloaded_over_plain"])
        figure = (f"timed region, preloaded / plain: at most "
                  f"{medians[worst]['timed_preloaded_over_plain']:.3f} ({worst})")
    worst = max(m["recorded_over_plain"] for m in medians.values())
    return bench_results.make(
        "record_overhead", "recording-cost",
        title="a workload's timed region under the runtime (preloaded) and under the whole "
              "objtier record, against plain runs",
        kind="real, exact", command=command, figure=figure,
        finding=f"whole record at most {worst:.3f}× the plain wall time",
        medians=medians, ratios={n: {"timed_preloaded": m["timed_preloaded_over_plain"],
                                     "recorded": m["recorded_over_plain"]}
                                 for n, m in medians.items()},
        raw=raw, load_=f"load {bench_results.span(loads)}")


def measure(args, samplers: list[str]) -> None:
    work = Path(tempfile.mkdtemp(prefix="objtier-bench-"))
    graph = work / f"kron{args.scale}.graph"
    subprocess.run([str(binary("graphgen")), "-g", str(args.scale), "-o", str(graph)],
                   check=True, capture_output=True)
    rows, raw, loads = [], {}, [os.getloadavg()[0]]
    for name, command in workloads.suite("record", graph=graph).items():
        if args.only and name not in args.only.split(","):
            continue
        plain, plain_fom, plain_cpu = [], [], []
        per = {k: {"pre": [], "pre_fom": [], "pre_cpu": [], "rec": [], "rec_fom": [],
                   "samples": [], "size": []} for k in samplers}
        for i in range(args.repeat):
            wall, fom = timed(command)
            plain.append(wall)
            plain_fom.append(fom)
            plain_cpu.append(CPU_SECONDS[0])
            for sampler in samplers:
                m = per[sampler]
                settings = RecordSettings(sampler=sampler, rate=args.rate or 2000)
                env = runtime_env(settings.runtime_settings(work / f"{name}-{sampler}{i}-pre.otr"))
                wall, fom = timed(command, env)
                m["pre"].append(wall)
                m["pre_fom"].append(fom)
                m["pre_cpu"].append(CPU_SECONDS[0])
                out = work / f"{name}-{sampler}{i}.otr"
                rate = [] if args.rate is None else ["--rate", str(args.rate)]
                wall, fom = timed([str(OBJTIER), "record", "-q", "--sampler", sampler, *rate,
                                   "-o", str(out), "--", *command])
                m["rec"].append(wall)
                m["rec_fom"].append(fom)
                trace = open_trace(out)
                m["samples"].append(trace.samples.num_rows)
                m["size"].append(sum(f.stat().st_size for f in out.glob("proc-*.otr")))
        raw[name] = {"plain": {"wall_s": plain, "timed_s": plain_fom, "cpu_s": plain_cpu},
                     **{s: {k: v for k, v in m.items()} for s, m in per.items()}}
        loads.append(os.getloadavg()[0])
        p, pf = statistics.median(plain), statistics.median(plain_fom)
        for sampler in samplers:
            m = per[sampler]
            t, tf = statistics.median(m["rec"]), statistics.median(m["rec_fom"])
            q, qf = statistics.median(m["pre"]), statistics.median(m["pre_fom"])
            n = statistics.median(m["samples"])
            # CPU: median over rounds of (preloaded / plain) in the same round, less
            # sensitive to other load than wall time
            cpu = statistics.median(a / b for a, b in zip(m["pre_cpu"], plain_cpu))
            rows.append((f"{name} ({sampler})", p, q, t, q / p, t / p, qf / pf, tf / pf, cpu, n,
                         n / t, statistics.median(m["size"]) / max(n, 1)))
            print(f"{name} ({sampler}): wall {p:.3f}s -> preloaded {q:.3f}s ({q / p:.3f}x), "
                  f"recorded {t:.3f}s ({t / p:.3f}x); timed region {pf:.3f}s -> {qf:.3f}s "
                  f"({qf / pf:.3f}x), {tf:.3f}s ({tf / pf:.3f}x); {n:.0f} samples", flush=True)
    today = datetime.date.today().isoformat()
    print(f"\n{platform.node()}, {today}, {args.repeat} interleaved rounds, medians, rate "
          f"{args.rate or 'default'}\n")
    print("| workload | plain wall (s) | preloaded wall (s) | recorded wall (s) | preloaded / plain "
          "| recorded / plain | timed region: preloaded / plain | timed region: recorded / plain "
          "| CPU: preloaded / plain | samples | samples/s | bytes/sample |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, p, q, t, rq, rt, rqf, rtf, cpu, s, rate, bps in rows:
        print(f"| {name} | {p:.3f} | {q:.3f} | {t:.3f} | {rq:.3f} | {rt:.3f} | {rqf:.3f} | "
              f"{rtf:.3f} | {cpu:.3f} | {s:.0f} | {rate:.0f} | {bps:.1f} |")
    if rows:
        bench_results.save(args, lambda: results_record(rows, raw, bench_results.script_command(
            sys.argv[1:], "bench/record_overhead.py"), loads))


# --- --third-party: programs nobody here wrote, plain vs the whole `objtier record` ----------

#: name -> (program of compare_suite.PROGRAMS, more options of its driver, more environment).
#: The options make each run 10-20 s plain on the 2-vCPU VM (2026-12-02); --short leaves them
#: out. OPENBLAS_NUM_THREADS=1: no OpenBLAS thread spinning on the second CPU.
THIRD_PARTY: dict[str, tuple[str, list[str], dict[str, str]]] = {
    "cg": ("cg", ["--iters", "600"], {}),
    "cg-1thread": ("cg", ["--iters", "600"], {"OPENBLAS_NUM_THREADS": "1"}),
    "graph": ("graph", ["--searches", "100"], {}),
    "smallgraph": ("smallgraph", ["--searches", "100"], {}),
    "sqlite": ("sqlite", ["--lookups", "1000000", "--scans", "2500"], {}),
    "vector": ("vector", ["--queries", "1600"], {}),
}
WATCH_EVERY = 0.5   # s between two readings of the program's smaps_rollup


def descendants(pid: int) -> list[int]:
    """pid and its descendants, parents first (from /proc/PID/task/TID/children)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop(0)
        found.append(parent)
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except (OSError, ValueError):
                pass
    return found


def program_pid(root: int, script: str) -> int | None:
    """The process under root (root included) running `python script ...`, or None."""
    for pid in descendants(root):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if len(argv) > 1 and argv[1] == script.encode():
            return pid
    return None


def huge_and_rss(pid: int) -> tuple[float, float] | None:
    """(AnonHugePages, Rss) of pid in MiB, from /proc/PID/smaps_rollup; None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return None
    kib = {line.split(":")[0]: int(line.split()[1]) for line in text.splitlines()
           if line.split(":")[0] in ("AnonHugePages", "Rss")}
    if len(kib) < 2:
        return None
    return kib["AnonHugePages"] / 1024, kib["Rss"] / 1024


def run_watched(command: list[str], env: dict[str, str], script: str) -> dict:
    """Run command to its end; its wall, timed-region and CPU seconds, its stderr, and the
    driver process's AnonHugePages and Rss (MiB) at the reading nearest mid-run, and its largest
    Rss reading."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    readings: list[tuple[float, float, float]] = []
    stop = threading.Event()

    def watch() -> None:
        pid = None
        while not stop.wait(WATCH_EVERY):
            if pid is None:
                pid = program_pid(proc.pid, script)
            reading = huge_and_rss(pid) if pid else None
            if reading:
                readings.append((time.monotonic() - started, *reading))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    out, err = proc.communicate()
    wall = time.monotonic() - started
    stop.set()
    watcher.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        last = (err.strip().splitlines() or [""])[-1]
        raise RuntimeError(f"exit {proc.returncode}: {' '.join(command)}: {last}")
    mid = min(readings, key=lambda r: abs(r[0] - wall / 2)) if readings else None
    return {"wall_s": wall, "timed_s": parse_fom(out).seconds,
            "user_s": after.ru_utime - before.ru_utime,
            "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "huge_mib": mid[1] if mid else None, "rss_mib": mid[2] if mid else None,
            "rss_peak_mib": max(r[2] for r in readings) if readings else None,
            "read_at_s": mid[0] if mid else None, "stderr": err}


def stated(err: str) -> tuple[str | None, float | None]:
    """The sampler `objtier record` used and the cost it states (% of the program's CPU)."""
    sampler = re.search(r"objtier record: sampler (\w+)", err)
    cost = re.search(r"recorder cost: ([0-9.]+) %", err)
    return (sampler.group(1) if sampler else None, float(cost.group(1)) if cost else None)


def median_of(values: list) -> float | None:
    good = [v for v in values if v is not None]
    return statistics.median(good) if good else None


def pair_ratios(runs: dict, key: str) -> list[float]:
    return [r[key] / p[key] for p, r in zip(runs["plain"], runs["recorded"])]


def summary_of(runs: dict) -> dict:
    """A program's medians and its per-pair ratios (recorded / plain, same round)."""
    plain, rec = runs["plain"], runs["recorded"]
    out = {}
    for key in ("wall_s", "timed_s", "cpu_s", "user_s", "huge_mib", "rss_mib"):
        out[f"plain_{key}"] = median_of([r[key] for r in plain])
        out[f"recorded_{key}"] = median_of([r[key] for r in rec])
    for key in ("wall_s", "timed_s", "cpu_s"):
        ratios = pair_ratios(runs, key)
        out[f"{key[:-2]}_ratio_pairs"] = statistics.median(ratios)
        out[f"{key[:-2]}_ratio_pairs_range"] = [min(ratios), max(ratios)]
        out[f"{key[:-2]}_ratio_medians"] = out[f"recorded_{key}"] / out[f"plain_{key}"]
    out["samples"] = median_of([r.get("samples") for r in rec])
    out["stated_cost_pct"] = median_of([r.get("stated_cost_pct") for r in rec])
    out["sampler"] = ",".join(sorted({r.get("sampler") or "?" for r in rec}))
    return out


def third_party_record(summaries: dict, raw: dict, failed: list[str], args, command: str,
                       loads: list[float]) -> dict:
    """The results file of one --third-party run (objtier.bench_results)."""
    names = ", ".join(summaries)
    figure = (f"recorded / plain wall, median of {args.repeat} pairs: "
              + ", ".join(f"{n} {m['wall_ratio_pairs']:.2f}" for n, m in summaries.items()))
    if bench_results.words(figure) > bench_results.MAX_WORDS:
        worst = max(summaries, key=lambda n: summaries[n]["wall_ratio_pairs"])
        figure = (f"recorded / plain wall, median of {args.repeat} pairs: at most "
                  f"{summaries[worst]['wall_ratio_pairs']:.2f} ({worst})")
    worst = max(summaries, key=lambda n: summaries[n]["timed_ratio_pairs"])
    finding = (f"timed region at most {summaries[worst]['timed_ratio_pairs']:.2f}× ({worst})")
    huge = {n: m for n, m in summaries.items() if (m["plain_huge_mib"] or 0) >= 32}
    if huge:
        finding += "; huge pages mid-run, plain → recorded: " + ", ".join(
            f"{n} {m['plain_huge_mib']:.0f} → {m['recorded_huge_mib']:.0f} MiB"
            for n, m in huge.items())
    if bench_results.words(finding) > bench_results.MAX_WORDS:
        finding = finding.split(";")[0]
    walls = [m["plain_wall_s"] for m in summaries.values()]
    sizes = (("the drivers' own sizes, " if args.short else "")
             + f"{min(walls):.0f}–{max(walls):.0f} s plain (medians)")
    return bench_results.make(
        "record_overhead", "recording-cost",
        title=f"third-party programs ({names}), {sizes}: plain vs the whole objtier record "
              "(default sampler), interleaved pairs",
        kind="real, exact", command=command, figure=figure, finding=finding,
        medians=summaries,
        ratios={n: {"wall_pairs": m["wall_ratio_pairs"], "timed_pairs": m["timed_ratio_pairs"],
                    "cpu_pairs": m["cpu_ratio_pairs"]} for n, m in summaries.items()},
        raw=raw, load_=f"load {bench_results.span(loads)}",
        note=("not run: " + "; ".join(failed)) if failed else None)


def measure_third_party(args) -> int:
    names = [n for n in args.only.split(",") if n] or list(THIRD_PARTY)
    work = Path(tempfile.mkdtemp(prefix="objtier-bench-"))
    summaries, raw, failed, loads = {}, {}, [], [os.getloadavg()[0]]
    try:
        for name in names:
            program, options, extra_env = THIRD_PARTY[name]
            why = compare_suite.missing_module(compare_suite.PROGRAMS[program][2])
            if why:
                failed.append(f"{name}: {why}")
                continue
            command = compare_suite.program_command(program, *([] if args.short else options))
            script = command[1]
            env = {**os.environ, **extra_env}
            rate = [] if args.rate is None else ["--rate", str(args.rate)]
            runs = {"plain": [], "recorded": [], "load": []}
            shown = " ".join([*(f"{k}={v}" for k, v in extra_env.items()),
                              str(Path(script).relative_to(REPO)), *command[2:]])
            print(f"== {name}: {shown}", flush=True)
            try:
                for i in range(args.repeat):
                    runs["load"].append(os.getloadavg()[0])
                    plain = run_watched(command, env, script)
                    out = work / f"{name}-{i}.otr"
                    rec = run_watched([str(OBJTIER), "record", *rate, "-o", str(out), "-f",
                                       "--", *command], env, script)
                    rec["sampler"], rec["stated_cost_pct"] = stated(rec["stderr"])
                    rec["samples"] = open_trace(out).samples.num_rows
                    shutil.rmtree(out, ignore_errors=True)
                    del plain["stderr"], rec["stderr"]
                    runs["plain"].append(plain)
                    runs["recorded"].append(rec)
                    print(f"  pair {i + 1}: wall {plain['wall_s']:.2f} -> {rec['wall_s']:.2f} s, "
                          f"timed {plain['timed_s']:.2f} -> {rec['timed_s']:.2f} s, huge "
                          f"{plain['huge_mib']} -> {rec['huge_mib']} MiB, "
                          f"{rec['samples']} samples, stated {rec['stated_cost_pct']} % "
                          f"({rec['sampler']})", flush=True)
            except RuntimeError as error:
                failed.append(f"{name}: {error}")
                continue
            loads.append(os.getloadavg()[0])
            raw[name] = {"command": shown, **runs}
            summaries[name] = summary_of(runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{platform.node()}, {datetime.date.today().isoformat()}, {args.repeat} "
          f"interleaved pairs, medians; load {bench_results.span(loads)}\n")
    print("| program | plain wall (s) | recorded wall (s) | recorded / plain, pairs (min–max) "
          "| timed region: plain (s) | recorded (s) | recorded / plain, pairs | CPU: recorded "
          "/ plain, pairs | huge pages plain / recorded (MiB) | samples | stated cost (%) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, m in summaries.items():
        lo, hi = m["wall_ratio_pairs_range"]
        print(f"| {n} | {m['plain_wall_s']:.2f} | {m['recorded_wall_s']:.2f} "
              f"| {m['wall_ratio_pairs']:.3f} ({lo:.3f}–{hi:.3f}) | {m['plain_timed_s']:.2f} "
              f"| {m['recorded_timed_s']:.2f} | {m['timed_ratio_pairs']:.3f} "
              f"| {m['cpu_ratio_pairs']:.3f} | {fmt(m['plain_huge_mib'])} / "
              f"{fmt(m['recorded_huge_mib'])} | {fmt(m['samples'])} "
              f"| {fmt(m['stated_cost_pct'], '.1f')} |")
    for why in failed:
        print(f"not run: {why}")
    if summaries:
        bench_results.save(args, lambda: third_party_record(
            summaries, raw, failed, args, bench_results.script_command(
                sys.argv[1:], "bench/record_overhead.py"), loads),
            tag="third-party-short" if args.short else "third-party")
    return 0 if summaries and not failed else 1


def fmt(value: float | None, spec: str = ".0f") -> str:
    return "–" if value is None else format(value, spec)


if __name__ == "__main__":
    main()
