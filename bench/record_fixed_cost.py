"""Fixed cost of `objtier record` and its overhead on a few programs.

1. `objtier record -- true` against plain `true`: median wall and CPU seconds of --repeat runs
   (default sampler, and --sampler none), and where the time goes: the same steps as
   `objtier record` run in this process with timestamps (command-line module import and parser,
   the checks before the run, the temporary swap device if the sampler needs one, the program's
   run with the counters thread, reading the trace back and printing the summary).
2. Programs compiled here (--passes sweeps over an array of --mib MiB, by one thread and by
   two, each sweeping its half) plain and under `objtier record`, interleaved (plain, recorded, plain, ...): median
   wall and CPU time, their ratios, and the recorder's cost as `record` states it in its last
   line (measured by the sampler itself, native/runtime/sample/overhead.h).

    .venv/bin/python bench/record_fixed_cost.py [--repeat 5] [--passes 40] [--mib 256]
        [--sampler auto] [--threads 1,2] [--skip-programs] [--results-dir DIR] [--no-results]
        [--baseline DIR]

--baseline DIR: the `record -- true` rows once more with the objtier sources of DIR (DIR/src,
e.g. `git archive <commit> src | tar -x -C DIR`), interleaved with this tree's runs, so that
before and after are measured in the same conditions (the same native runtime: this tree's,
or OBJTIER_NATIVE_DIR's).

Also writes a results file (objtier.bench_results) to bench/results/: every run's times.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from objtier import bench_results

REPO = Path(__file__).resolve().parent.parent
OBJTIER = REPO / ".venv" / "bin" / "objtier"

# argv: MiB, passes, threads. Each thread sweeps its half of the array, one byte per cache line,
# `passes` times (a fixed amount of work, so that a slower run takes longer).
SWEEP_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static size_t n; static int passes; static unsigned char *a;
static void *sweep(void *arg) {
    size_t part = (size_t)arg, lo = part * (n / 2), hi = lo + n / 2;
    unsigned long s = 0;
    for (int p = 0; p < passes; p++)
        for (size_t i = lo; i < hi; i += 64) s += a[i]++;
    return (void *)s;
}
int main(int argc, char **argv) {
    n = strtoul(argv[1], 0, 10) << 20; passes = atoi(argv[2]);
    int threads = atoi(argv[3]);
    a = malloc(n); memset(a, 1, n);
    pthread_t t[2]; void *r[2] = {0, 0};
    for (int i = 0; i < threads; i++) pthread_create(&t[i], 0, sweep, (void *)(size_t)i);
    for (int i = 0; i < threads; i++) pthread_join(t[i], &r[i]);
    printf("done %d\n", threads);
    return 0;
}
"""


def timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """(wall s, CPU s of the process tree, stderr) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    run = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env=env)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {run.returncode}: {run.stderr[-300:]}")
    return wall, cpu, run.stderr


def phases(work: Path, sampler: str) -> dict[str, float]:
    """Seconds of each step of `objtier record -q -- true`, in this process (one run)."""
    code = f"""
import time, json, sys
t0 = time.monotonic()
from objtier.cli import build_parser
args = build_parser("record").parse_args(["record", "-q", "--sampler", "{sampler}", "-o",
                                          "{work}/p.otr", "-f", "--", "true"])
t1 = time.monotonic()
from pathlib import Path
from objtier.commands import record as R
from objtier.record.elfcheck import unrecordable
from objtier.record.launch import resolve_command
from objtier.record.sampler_choice import choose_sampler
from objtier.record.sanitizers import sanitizer_of
from objtier.record.session import RecordSettings, record_program
command = resolve_command(["true"]); sanitizer_of(command[0]); unrecordable(command[0])
sampler, reason = choose_sampler("{sampler}", transparent_default=True)
t2 = time.monotonic()
with R.sampler_swap(sampler, lambda text: None):
    t3 = time.monotonic()
    stats = {{}}
    rc, elapsed = record_program(command, Path("{work}/p.otr"), RecordSettings(sampler=sampler),
                                 force=True, stats=stats)
    t4 = time.monotonic()
t5 = time.monotonic()
R.summarize(Path("{work}/p.otr"), elapsed, rc, lambda text: None, cost=(0.0, 0.0))
t6 = time.monotonic()
print(json.dumps({{"cli import and parser": t1 - t0, "checks before the run": t2 - t1,
                  "swap device set-up": t3 - t2, "program and counters thread": t4 - t3,
                  "swap device removal": t5 - t4, "trace read and summary": t6 - t5}}))
"""
    import json

    out = subprocess.run([str(REPO / ".venv" / "bin" / "python"), "-c", code],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def median(values: list[float]) -> float:
    return statistics.median(values)


def results_record(found: dict, sampler: str, command: str, loads: list[float]) -> dict:
    """The results file: `record -- true` runs, the steps, and each program's runs."""
    walls = {name: median([w for w, _ in runs]) for name, runs in found["true"].items()}
    recorded = walls.get(f"record --sampler {sampler} -- true")
    programs = found.get("programs", {})
    figure = (f"record -- true {recorded:.2f} s wall (true {walls['true']:.3f} s)"
              + "".join(f"; {p} wall ×{v['wall_ratio']:.3f}" for p, v in programs.items()))
    slowest = max(found["steps"], key=found["steps"].get)
    return bench_results.make(
        "record_fixed_cost", "recording-cost",
        title=f"fixed cost of objtier record --sampler {sampler} -- true, its steps, and "
              "array sweeps plain vs recorded",
        kind="real, exact", command=command, figure=figure,
        finding=f"the largest step: {slowest}, {found['steps'][slowest]:.2f} s",
        medians={"walls": walls, "cpu": {n: median([c for _, c in runs])
                                         for n, runs in found["true"].items()},
                 "steps": found["steps"], "programs": programs},
        ratios={p: {"wall": v["wall_ratio"], "cpu": v["cpu_ratio"]}
                for p, v in programs.items()},
        raw={"true": found["true"], "steps": found["step_runs"],
             "programs": found.get("program_runs", {})},
        load_=f"load {bench_results.span(loads)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--passes", type=int, default=40)
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--sampler", default="auto")
    parser.add_argument("--threads", default="1,2", help="program variants: threads, e.g. 1,2")
    parser.add_argument("--skip-programs", action="store_true")
    parser.add_argument("--baseline", type=Path, default=None, metavar="DIR",
                        help="also time `record -- true` with the sources in DIR/src")
    bench_results.add_arguments(parser)
    args = parser.parse_args()
    load = os.getloadavg()
    found: dict = {}
    command = bench_results.script_command(sys.argv[1:], "bench/record_fixed_cost.py")
    code = measure(args, load, found)
    if found.get("steps"):
        bench_results.save(args, lambda: results_record(found, args.sampler, command,
                                                        [load[0], os.getloadavg()[0]]))
    return code


def measure(args, load, found: dict) -> int:
    print(f"# objtier record: fixed cost and overhead — {platform.node()}, {os.cpu_count()} CPUs, "
          f"kernel {platform.release()}, {datetime.datetime.now():%Y-%m-%d %H:%M}, load "
          f"{load[0]:.1f}; medians of {args.repeat} runs\n")
    swaps = Path("/proc/swaps").read_text().splitlines()[1:]
    if swaps:   # pageout then uses it (or joins it): no temporary device is set up or removed
        print(f"(swap active at the start: {', '.join(line.split()[0] for line in swaps)})\n")
    with tempfile.TemporaryDirectory(prefix="objtier-fixed-") as tmp:
        work = Path(tmp)
        print("## `record -- true`\n")
        print("| command | wall s | CPU s |")
        print("|---|---:|---:|")
        rows: dict[str, tuple[list[str], dict[str, str] | None]] = {"true": (["true"], None)}
        trees = {"": None}
        if args.baseline:
            trees[" (baseline)"] = {**os.environ,
                                    "PYTHONPATH": str(args.baseline.resolve() / "src")}
        for sampler in dict.fromkeys([args.sampler, "none"]):
            for suffix, env in trees.items():
                rows[f"record --sampler {sampler} -- true{suffix}"] = ([
                    str(OBJTIER), "record", "-q", "--sampler", sampler, "-o",
                    str(work / "t.otr"), "-f", "--", "true"], env)
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in rows}
        for _ in range(args.repeat):
            for name, (command, env) in rows.items():
                results[name].append(timed(command, env)[:2])
        found["true"] = results
        for name, runs in results.items():
            print(f"| {name} | {median([w for w, _ in runs]):.3f} | "
                  f"{median([c for _, c in runs]):.3f} |")
        print(f"\n## where `record --sampler {args.sampler} -- true` spends it (median of "
              f"{args.repeat})\n")
        steps = [phases(work, args.sampler) for _ in range(args.repeat)]
        print("| step | s |")
        print("|---|---:|")
        found["step_runs"] = steps
        found["steps"] = {step: median([s[step] for s in steps]) for step in steps[0]}
        for step in steps[0]:
            print(f"| {step} | {median([s[step] for s in steps]):.3f} |")
        if args.skip_programs:
            return 0
        source = work / "sweep.c"
        source.write_text(SWEEP_C)
        exe = work / "sweep"
        subprocess.run(["gcc", "-O2", "-pthread", "-o", str(exe), str(source)], check=True)
        print(f"\n## programs: {args.passes} sweeps over {args.mib} MiB, recorded with "
              f"--sampler {args.sampler}\n")
        print("| program | plain wall s | recorded wall s | wall ratio | plain CPU s | "
              "recorded CPU s | CPU ratio | recorder cost (its own measure) |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
        for threads in (int(t) for t in args.threads.split(",")):
            program = [str(exe), str(args.mib), str(args.passes), str(threads)]
            plain, recorded, costs = [], [], []
            for _ in range(args.repeat):
                plain.append(timed(program)[:2])
                wall, cpu, err = timed([str(OBJTIER), "record", "--sampler", args.sampler,
                                        "-o", str(work / "s.otr"), "-f", "--", *program])
                recorded.append((wall, cpu))
                found = re.search(r"recorder cost: ([0-9.]+) %", err)
                if found:
                    costs.append(float(found.group(1)))
            pw, pc = median([w for w, _ in plain]), median([c for _, c in plain])
            rw, rc = median([w for w, _ in recorded]), median([c for _, c in recorded])
            cost = f"{median(costs):.1f} % of the program's CPU" if costs else "not stated"
            key = f"sweep, {threads} thread(s)"
            found.setdefault("programs", {})[key] = {
                "plain_wall_s": pw, "recorded_wall_s": rw, "wall_ratio": rw / pw,
                "plain_cpu_s": pc, "recorded_cpu_s": rc, "cpu_ratio": rc / pc,
                "stated_cost_pct": median(costs) if costs else None}
            found.setdefault("program_runs", {})[key] = {"plain": plain, "recorded": recorded,
                                                         "stated_cost_pct": costs}
            print(f"| sweep, {threads} thread(s) | {pw:.2f} | {rw:.2f} | {rw / pw:.3f} | "
                  f"{pc:.2f} | {rc:.2f} | {rc / pc:.3f} | {cost} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
