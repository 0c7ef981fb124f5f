#!/usr/bin/env python3
"""Segregated arenas (docs/runtime.md, "Arenas"): what they cost on the malloc path, and the
memory they cost (fragmentation).

  bench/arena_cost.py cost [--repeats 3] [--iterations N] [--baseline-lib OLD.so]
  bench/arena_cost.py rss  [--repeats 3]
  bench/arena_cost.py swap [--repeats 3] [--local 90M]      (root: objtier run --local)

`cost` times a small-block loop (malloc + free pairs of 16..512 bytes from two call sites, 7
of 8 calls from the hot one) under: no objtier; the runtime passive and with a plan naming no
site (arenas off: the path every program without sites takes), each also with --baseline-lib
(a libobjtier.so built from a tree without arenas) when given; a plan naming the cold site
only (the hot site's calls are told apart by their return address, no unwinding); a plan
naming the hot site (its calls unwind to their context key); OBJTIER_ARENA=all. Runs are
interleaved, `--repeats` each; ns per malloc + free pair, as the program measures it.

`rss` runs small-block programs (the loop above, a g++ std::map program, a Python workload)
without objtier and with OBJTIER_ARENA=all and reports their peak RSS (getrusage of the
child) and the arena counts (bytes carved for blocks vs bytes requested by live blocks at
exit). `swap` runs a program whose hot small blocks (200 B rows, read at random over passes)
were allocated interleaved with cold ones (600 B, written once) under `objtier run --local`
(a memory cgroup, zram behind it) in three arms, interleaved: a plan with nothing to place
(the kernel's reclaim alone), a plan whose `site` record puts the hot rows' site fast (arena,
mlocked; the site chosen by its function name, as no access sample reaches small blocks on a
machine without a PMU), and OBJTIER_ARENA=all (every site segregated, nothing locked). Every
line notes the load average. Writes bench-out/arena_cost_<mode>.json, and a results file to
bench/results/ (objtier.bench_results; --results-dir, --no-results).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from objtier import bench_results

REPO = Path(__file__).resolve().parents[1]

LOOP_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
__attribute__((noinline)) void *hot(size_t n) { void *p = malloc(n); __asm__ volatile("" ::"r"(p) : "memory"); return p; }
__attribute__((noinline)) void *cold(size_t n) { void *p = malloc(n); __asm__ volatile("" ::"r"(p) : "memory"); return p; }
int main(int argc, char **argv) {
    long it = atol(argv[1]), keep = argc > 2 ? atol(argv[2]) : 0;
    unsigned char *b[64];
    unsigned long sum = 0;
    unsigned char **kept = keep ? malloc(keep * sizeof *kept) : NULL;
    for (long i = 0; i < keep; i++) { kept[i] = (i & 7) ? hot(16 + i % 500) : cold(24 + i % 300); kept[i][0] = (unsigned char)i; }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < it; i++) {
        for (int k = 0; k < 64; k++) {
            size_t n = 16 + (size_t)((k * 40 + i) % 497);
            b[k] = (k & 7) ? hot(n) : cold(n);
            b[k][0] = (unsigned char)k;
        }
        for (int k = 0; k < 64; k++) { sum += b[k][0]; free(b[k]); }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (long i = 0; i < keep; i++) { sum += kept[i][0]; free(kept[i]); }
    free(kept);
    double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
    printf("ns_per_pair %.2f sum %lu\n", it ? ns / (it * 64.0) : 0.0, sum);
    return 0;
}
"""

CXX_MAP = r"""
#include <cstdio>
#include <map>
#include <string>
#include <vector>
int main() {
    std::map<std::string, std::vector<int>> m;
    for (int i = 0; i < 400000; i++) m["key-" + std::to_string(i * 7919L % 300007)].push_back(i);
    long s = 0;
    for (auto &e : m) s += e.first.size() + e.second.size();
    std::printf("%zu %ld\n", m.size(), s);
}
"""

SWAP_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
__attribute__((noinline)) unsigned char *hot_row(void) { unsigned char *p = malloc(200); __asm__ volatile("" ::"r"(p) : "memory"); return p; }
__attribute__((noinline)) unsigned char *cold_row(void) { unsigned char *p = malloc(600); __asm__ volatile("" ::"r"(p) : "memory"); return p; }
int main(int argc, char **argv) {
    long n = atol(argv[1]), passes = atol(argv[2]);
    unsigned char **hot = malloc(n * sizeof *hot), **cold = malloc(n * sizeof *cold);
    for (long i = 0; i < n; i++) {
        hot[i] = hot_row(); cold[i] = cold_row();
        for (int k = 0; k < 200; k += 8) hot[i][k] = (unsigned char)(i + k);
        for (int k = 0; k < 600; k += 8) cold[i][k] = (unsigned char)(i - k);
    }
    unsigned long sum = 0;
    for (long i = 0; i < n; i++) sum += cold[i][(i * 8) % 600];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long p = 0; p < passes; p++)
        for (long i = 0; i < n; i++) { long j = (i * 7919) % n; sum += hot[j][(p * 8) % 200]; }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("sum %lu passes_s %.3f\n", sum, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
    return 0;
}
"""

PY_WORK = ("d = {f'k{i}': [i, str(i) * (i % 50)] for i in range(300000)}\n"
           "big = [bytes(600 + i % 3000) for i in range(30000)]\n"
           "print(len(d), sum(map(len, big)))\n")


def load() -> str:
    return "load %.2f %.2f %.2f" % os.getloadavg()


def build(work: Path) -> dict[str, Path]:
    out = {}
    (work / "loop.c").write_text(LOOP_C)
    subprocess.run(["gcc", "-O2", "-g", "-fno-builtin", "-o", str(work / "loop"),
                    str(work / "loop.c")], check=True)
    out["loop"] = work / "loop"
    if shutil.which("g++"):
        (work / "map.cc").write_text(CXX_MAP)
        subprocess.run(["g++", "-O2", "-o", str(work / "map"), str(work / "map.cc")],
                       check=True)
        out["map"] = work / "map"
    return out


def base_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("OBJTIER_")}


def run(cmd: list[str], env: dict[str, str]) -> tuple[str, int]:
    """stdout and the child's peak RSS in KiB (its own getrusage, through wait4)."""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=err)
        out = proc.stdout.read()
        proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"arena_cost: {cmd[0]} failed ({proc.returncode}): "
                             f"{err.read().decode(errors='replace').strip()[-300:]}")
    return out.decode(), usage.ru_maxrss


def site_plans(work: Path, loop: Path, lib: str) -> dict[str, Path]:
    """Text plans: no site, the cold site only, the hot site only (keys from a recording)."""
    from objtier.analysis.sites import site_table
    from objtier.plan.sites import frame0_keys
    from objtier.trace import open_trace

    trace_dir = work / "loop.otr"
    env = {**base_env(), "LD_PRELOAD": lib, "OBJTIER_OUTPUT": str(trace_dir),
           "OBJTIER_SAMPLER": "none", "OBJTIER_SITE_PERIOD": "1"}
    subprocess.run([str(loop), "20"], env=env, check=True, capture_output=True)
    trace = open_trace(trace_dir)
    first = frame0_keys(trace)
    by_function = {r["label"].split(" ")[0]: r for r in site_table(trace).to_pylist()}
    head = ["objtier-plan 1", "budget 8388608 4096", "phase * - *"]
    plans = {}
    for name, functions in (("none", []), ("cold", ["cold"]), ("hot", ["hot"])):
        lines = list(head)
        for f in functions:
            r = by_function[f]
            lines.append(f"site {r['context_key']} {first[(r['pid'], r['context'])]} fast")
        path = work / f"plan-{name}.txt"
        path.write_text("\n".join(lines) + "\n")
        plans[name] = path
    return plans


def cost(args: argparse.Namespace, work: Path) -> dict:
    from objtier import native

    lib = str(native.runtime_library())
    progs = build(work)
    plans = site_plans(work, progs["loop"], lib)
    configs: list[tuple[str, dict[str, str]]] = [("no objtier", {})]
    libs = [("", lib)] + ([(" (baseline lib)", args.baseline_lib)] if args.baseline_lib else [])
    for suffix, path in libs:
        configs.append((f"runtime passive{suffix}", {"LD_PRELOAD": path}))
        configs.append((f"plan, no site: arenas off{suffix}",
                        {"LD_PRELOAD": path, "OBJTIER_PLAN": str(plans["none"]),
                         "OBJTIER_SAMPLER": "none"}))
    for name, plan in (("plan, cold site only", plans["cold"]),
                       ("plan, hot site", plans["hot"])):
        configs.append((name, {"LD_PRELOAD": lib, "OBJTIER_PLAN": str(plan),
                               "OBJTIER_SAMPLER": "none"}))
    configs.append(("OBJTIER_ARENA=all", {"LD_PRELOAD": lib, "OBJTIER_ARENA": "all"}))
    times: dict[str, list[float]] = {name: [] for name, _ in configs}
    loads = [load()]
    for _ in range(args.repeats):        # interleaved
        for name, extra in configs:
            out, _ = run([str(progs["loop"]), str(args.iterations)], {**base_env(), **extra})
            times[name].append(float(out.split()[1]))
        loads.append(load())
    rows = [{"config": name, "ns_per_pair": t, "median": statistics.median(t), "min": min(t)}
            for name, t in times.items()]
    print(f"malloc+free pairs of 16..512 B, {args.iterations * 64} per run, "
          f"{args.repeats} interleaved runs (real, exact timing of this machine)")
    for r in rows:
        print(f"  {r['config']:40} median {r['median']:7.2f} ns  min {r['min']:7.2f} ns  "
              f"runs {' '.join(f'{x:.2f}' for x in r['ns_per_pair'])}")
    print("  " + " | ".join(loads))
    return {"mode": "cost", "iterations": args.iterations, "rows": rows, "loads": loads}


def arena_counts(path: Path) -> dict[str, int]:
    lines = path.read_text().splitlines() if path.exists() else []
    if not lines:
        return {}
    fields = dict(f.split("=", 1) for f in lines[-1].split())   # the root process: last out
    return {k: int(v) for k, v in fields.items() if v.isdigit()}


def rss(args: argparse.Namespace, work: Path) -> dict:
    from objtier import native

    lib = str(native.runtime_library())
    progs = build(work)
    programs = [("small-block loop, 400k kept", [str(progs["loop"]), "10", "400000"])]
    if "map" in progs:
        programs.append(("g++ std::map<string, vector>", [str(progs["map"])]))
    programs.append(("python3 dict + bytes", [shutil.which("python3") or "python3", "-c",
                                              PY_WORK]))
    rows = []
    for name, cmd in programs:
        plain_kib, arena_kib, counts = [], [], {}
        for _ in range(args.repeats):
            out_plain, kib = run(cmd, base_env())
            plain_kib.append(kib)
            stats = work / "stats"
            stats.unlink(missing_ok=True)
            out_arena, kib = run(cmd, {**base_env(), "LD_PRELOAD": lib, "OBJTIER_ARENA": "all",
                                       "OBJTIER_ARENA_STATS": str(stats)})
            arena_kib.append(kib)
            counts = arena_counts(stats)
            if out_plain.split("sum")[-1] != out_arena.split("sum")[-1]:
                raise SystemExit(f"arena_cost: {name}: output differs under arenas")
        row = {"program": name, "plain_kib": plain_kib, "arena_kib": arena_kib,
               "ratio": statistics.median(arena_kib) / statistics.median(plain_kib),
               "counts": counts, "load": load()}
        rows.append(row)
        print(f"  {name:32} peak RSS {statistics.median(plain_kib) / 1024:7.1f} MiB plain, "
              f"{statistics.median(arena_kib) / 1024:7.1f} MiB arenas ({row['ratio']:.2f}x); "
              f"arena carved {counts.get('carved_bytes', 0) / 2**20:.1f} MiB, waste "
              f"{counts.get('waste_bytes', 0) / 2**20:.1f} MiB, {counts.get('chunks', 0)} chunks,"
              f" {counts.get('sites_used', 0)} sites; {row['load']} (real)")
    return {"mode": "rss", "rows": rows}


def swap(args: argparse.Namespace, work: Path) -> dict:
    from objtier import native
    from objtier.analysis.sites import site_table
    from objtier.plan.sites import frame0_keys
    from objtier.trace import open_trace

    if os.geteuid() != 0:
        raise SystemExit("arena_cost swap: objtier run --local needs root")
    (work / "swap.c").write_text(SWAP_C)
    exe = work / "swap"
    subprocess.run(["gcc", "-O2", "-g", "-o", str(exe), str(work / "swap.c")], check=True)
    trace_dir = work / "swap.otr"
    env = {**base_env(), "LD_PRELOAD": str(native.runtime_library()),
           "OBJTIER_OUTPUT": str(trace_dir), "OBJTIER_SAMPLER": "none",
           "OBJTIER_SITE_PERIOD": "1"}
    subprocess.run([str(exe), "20000", "1"], env=env, check=True, capture_output=True)
    base_plan = work / "base.json"
    subprocess.run([str(REPO / ".venv/bin/objtier"), "plan", str(trace_dir), "--fast", "1M",
                    "-o", str(base_plan)], check=True, capture_output=True)
    trace = open_trace(trace_dir)
    first = frame0_keys(trace)
    plans = {}
    for arm, functions in (("kernel", []), ("hot site locked", ["hot_row"])):
        plan = json.loads(base_plan.read_text())
        plan["entries"] = []     # the two pointer arrays: the same in every arm
        plan["sites"] = [{"context_key": r["context_key"], "tier": "fast", "label": r["label"],
                          "frame0_key": first[(r["pid"], r["context"])]}
                         for r in site_table(trace).to_pylist()
                         if r["label"].split(" ")[0] in functions]
        path = work / f"plan-{len(plans)}.json"
        path.write_text(json.dumps(plan))
        path.chmod(0o600)
        plans[arm] = path
    arms = [("kernel", plans["kernel"], {}), ("hot site locked", plans["hot site locked"], {}),
            ("OBJTIER_ARENA=all", plans["kernel"], {"OBJTIER_ARENA": "all"})]
    results: dict[str, list[dict]] = {arm: [] for arm, _, _ in arms}
    for _ in range(args.repeats):
        for arm, plan, extra in arms:
            started = time.monotonic()
            out, _ = run([str(REPO / ".venv/bin/objtier"), "run", "-q", "--plan", str(plan),
                          "--local", args.local, "--", str(exe), "200000", "5"],
                         {**base_env(), **extra})
            line = [x for x in out.splitlines() if "passes_s" in x][0].split()
            results[arm].append({"passes_s": float(line[3]), "wall_s": time.monotonic() - started,
                                 "sum": line[1], "load": load()})
    if len({r["sum"] for rs in results.values() for r in rs}) != 1:
        raise SystemExit("arena_cost swap: the program's output differs between arms")
    print(f"hot 200 B rows interleaved with cold 600 B rows (200k each, ~164 MiB), 5 random "
          f"passes over the hot rows, objtier run --local {args.local}, zram swap; "
          f"{args.repeats} interleaved runs (real)")
    for arm, rs in results.items():
        passes = [r["passes_s"] for r in rs]
        walls = [r["wall_s"] for r in rs]
        print(f"  {arm:20} passes median {statistics.median(passes):7.3f} s (runs "
              f"{' '.join(f'{x:.3f}' for x in passes)}), wall median "
              f"{statistics.median(walls):6.2f} s; {rs[-1]['load']}")
    return {"mode": "swap", "local": args.local, "arms": results}


#: cost: the configurations the results file's figure names, and how
COST_SHOWN = {"no objtier": "none", "plan, no site: arenas off": "arenas off",
              "plan, cold site only": "cold site (1 in 8 calls)",
              "plan, hot site": "hot site (7 in 8)", "OBJTIER_ARENA=all": "all"}
TITLES = {"cost": "malloc+free pair, ns: runtime with arenas off, a plan naming a site, "
                  "OBJTIER_ARENA=all",
          "rss": "peak RSS with every small block in arenas vs without",
          "swap": "constructed program, 200 B hot rows between 600 B cold rows under "
                  "run --local: 5 passes over the hot rows"}


def _loads(result: dict) -> list[float]:
    texts = list(result.get("loads", []))
    texts += [r.get("load", "") for r in result.get("rows", [])]
    texts += [r.get("load", "") for runs in result.get("arms", {}).values() for r in runs]
    return [float(t.split()[1]) for t in texts if t.startswith("load ")]


def results_record(result: dict, command: str, commit=...) -> dict:
    """The results file of one mode's result (the bench-out JSON's content)."""
    mode = result["mode"]
    if mode == "cost":
        med = {r["config"]: r["median"] for r in result["rows"]}
        figure = ", ".join(f"{label} {med[c]:.1f}" for c, label in COST_SHOWN.items() if c in med)
        finding = (f"arenas off costs {med.get('plan, no site: arenas off', 0) - med.get('no objtier', 0):.1f} ns "
                   "a pair over no objtier; naming a site costs more")
        medians, raw = med, result["rows"]
    elif mode == "rss":
        medians = {r["program"]: r["ratio"] for r in result["rows"]}
        figure = "; ".join(f"{p} {v:.2f}×" for p, v in medians.items())
        finding = f"at most {max(medians.values()):.2f}× the peak RSS without arenas"
        raw = result["rows"]
    else:
        medians = {arm: statistics.median(r["passes_s"] for r in runs)
                   for arm, runs in result["arms"].items()}
        figure = (f"at {result['local']} local, s: "
                  + ", ".join(f"{arm} {bench_results.fixed(v, 2)}" if v >= 1 else f"{arm} {v:.3g}"
                             for arm, v in medians.items()))
        finding = "locking the hot rows' arena takes the passes out of reclaim's way"
        raw = result["arms"]
        kernel = medians.get("kernel")
        result = dict(result, ratios={arm: kernel / v for arm, v in medians.items() if v}
                      if kernel else {})
    loads = _loads(result)
    return bench_results.make(
        "arena_cost", "recording-cost" if mode != "swap" else "placement",
        title=TITLES[mode], kind="real, exact", command=command, figure=figure,
        finding=finding, medians=medians, ratios=result.get("ratios", {}), raw=raw,
        date=result.get("date"), load_=f"load {bench_results.span(loads)}" if loads else None,
        commit_=commit)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["cost", "rss", "swap"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=40000,
                        help="cost: loop iterations of 64 pairs (default 40000)")
    parser.add_argument("--local", default="90M", help="swap: objtier run --local (90M)")
    parser.add_argument("--baseline-lib", default=None,
                        help="cost: a libobjtier.so without arenas to compare the off path with")
    bench_results.add_arguments(parser)
    args = parser.parse_args()
    if args.repeats < 1 or args.iterations < 1:
        parser.error("--repeats and --iterations must be at least 1")
    if args.baseline_lib and not Path(args.baseline_lib).is_file():
        parser.error(f"--baseline-lib {args.baseline_lib}: no such file")
    with tempfile.TemporaryDirectory(prefix="arena-cost-") as tmp:
        result = {"cost": cost, "rss": rss, "swap": swap}[args.mode](args, Path(tmp))
    result.update(date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                  machine=os.uname().nodename, cpus=os.cpu_count())
    out_dir = REPO / "bench-out"
    out_dir.mkdir(mode=0o700, exist_ok=True)
    path = out_dir / f"arena_cost_{args.mode}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"written to {path}")
    bench_results.save(args, lambda: results_record(
        result, bench_results.script_command(sys.argv[1:], "bench/arena_cost.py")), tag=args.mode)
    return 0


if __name__ == "__main__":
    sys.exit(main())
