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

Also writes a results file (objtier.bench_results): every round's times and the medians.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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
    bench_results.add_arguments(parser)
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
