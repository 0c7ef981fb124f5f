"""Dynamic placement against the ceiling, simulated on exact traces: where each policy sits
between the kernel (0 %) and Belady's MIN (100 %) in swap-ins avoided.

    .venv/bin/python bench/sim_dynamic.py [--scale 17] [--local 50%]
        [--workloads alternating,bfs_urand,cc_urand,bfs_kron,cc_kron]
        [--trials bfs=4,cc=1] [--windows 0] [--online MS[,MS]] [--ceiling MS[,MS]]
        [--alternating-args MIB,ROUNDS,SWEEPS,STRIDE] [-o bench-out/dynamic]

Per workload: build it with `objtier cc`, record it once with the trace sampler (every load
and store to a tracked object), then `objtier simulate --preset zram --fast LOCAL` with the
kernel's policies (first-touch = the kernel's LRU under a memory cgroup; numab2, tpp, memtis,
hemem), the static plans (object, spill, oracle), per-phase plans (phases), belady and dynamic
(one run per --windows value: 0 = schedule auto, which simulates its candidates — hot, next-use
at several window sizes, next-use with prefetch, the static spill plan — and keeps the fewest
swap-ins; W = every candidate with steps every W ms of trace time). Each candidate gets a row
("candidate NAME", the kept one marked). Prints a markdown table; writes dynamic.csv.
Simulated, exact counts; no root.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(REPO))

BASE_POLICIES = "first-touch,numab2,tpp,memtis,hemem,object,spill,oracle,phases,belady"


def simulate(trace: Path, local: str, policies: str, params: list[str], target: Path
             ) -> dict[str, dict]:
    table = target / "simulate.csv"
    if not table.exists():
        cmd = [PY, "-m", "objtier", "simulate", str(trace), "--fast", local, "--preset",
               "zram", "--policy", policies, "-o", str(target)]
        for p in params:
            cmd += ["--param", p]
        done = subprocess.run(cmd, check=True, capture_output=True, text=True,
                              env={**os.environ, "COLUMNS": "100000"})
        (target / "simulate-stdout.txt").write_text(done.stdout + done.stderr)
    rows = {}
    with open(table) as f:
        for row in csv.DictReader(f):
            rows[row["policy"]] = row
    with open(target / "simulate-counters.csv") as f:
        for row in csv.DictReader(f):
            if row["policy"] in rows:
                rows[row["policy"]][row["counter"]] = row["value"]
    # the dynamic policy's candidates (auto): "note: dynamic: kept M of the simulated
    # swap-ins NAME N, NAME N, …"
    out = target / "simulate-stdout.txt"
    text = out.read_text() if out.exists() else ""
    for line in text.splitlines():
        if line.startswith("note: dynamic: kept "):
            kept, _, scores = line[len("note: dynamic: kept "):].partition(
                " of the simulated swap-ins ")
            for part in scores.split(", "):
                name, value = part.rsplit(" ", 1)
                rows[f"candidate {name}" + (" (kept)" if name == kept else "")] = {
                    "swap_ins": value.replace(",", ""), "stall_s": ""}
    return rows


def run_per_trace_second(exe: Path, run_args: list[str], trace: Path) -> float:
    """Seconds of a plain run (no runtime) per second of the exact trace's clock: the traced
    run is tens of times slower, and the online placement ticks on the run's clock."""
    import time

    from objtier.trace import open_trace
    from objtier.trace.columns import trace_end_ns

    env = {k: v for k, v in os.environ.items() if not k.startswith("OBJTIER_")}
    env.pop("LD_PRELOAD", None)
    t0 = time.perf_counter()
    subprocess.run([str(exe), *run_args], env=env, check=True, stdout=subprocess.DEVNULL)
    plain = time.perf_counter() - t0
    t = open_trace(trace)
    span = (trace_end_ns(t) - int(t.start_ns)) / 1e9
    return min(max(plain / span, 1e-6), 1.0) if span > 0 else 1.0


def position(kernel: float, belady: float, value: float) -> str:
    """Share of the kernel's excess over Belady that a policy removes (0 % = kernel)."""
    if kernel <= belady:
        return "–"
    return f"{100 * (kernel - value) / (kernel - belady):.0f} %"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=17)
    parser.add_argument("--local", default="50%")
    parser.add_argument("--workloads", default="alternating,bfs_urand,cc_urand,bfs_kron,cc_kron")
    parser.add_argument("--trials", default="bfs=4,cc=1")
    parser.add_argument("--windows", default="0", help="dynamic.window_ms values (0: auto "
                        "tries its own windows)")
    parser.add_argument("--online", default="", metavar="MS[,MS...]",
                        help="also the runtime's online placement (dynamic.mode=4) with a tick "
                        "every MS ms of run time; the trace's clock is mapped to the plain "
                        "program's by the ratio of their wall times (dynamic.time_scale)")
    parser.add_argument("--ceiling", default="", metavar="MS[,MS...]",
                        help="also the next-use schedule with full knowledge of the trace "
                        "(dynamic.mode=2), no advice budget, one page per chunk, a step every "
                        "MS ms of trace time: the ceiling of lock-set schedules at that step")
    parser.add_argument("--alternating-args", default=None, metavar="MIB,ROUNDS,SWEEPS,STRIDE",
                        help="the alternating program's arguments (default 16,4,20,4096)")
    parser.add_argument("-o", "--output", default=str(REPO / "bench-out" / "dynamic"))
    args = parser.parse_args()

    from exact_setup import ALTERNATING_ARGS, build_exact, graph_args, record_exact

    trials = dict(item.split("=") for item in args.trials.split(","))
    out = Path(args.output)
    rows = []
    windows = [w for w in args.windows.split(",") if w]
    for name in args.workloads.split(","):
        if name == "alternating":
            kernel, run_args, tag = "alternating", ALTERNATING_ARGS, "alternating"
            if args.alternating_args:
                run_args = args.alternating_args.split(",")
                tag = "alternating-" + "-".join(run_args)
        else:
            kernel, run_args = graph_args(name, args.scale, trials, out / "graphs")
            tag = f"{name}-{trials[kernel]}"
        trace = out / "traces" / f"{tag}.otr"
        trace.parent.mkdir(parents=True, exist_ok=True)
        print(f"== {tag}: exact trace", file=sys.stderr, flush=True)
        record_exact(build_exact(kernel, out / "bin"), run_args, trace)
        for local in args.local.split(","):
            label = f"{tag}-{local.rstrip('%')}"
            print(f"== {label}: simulate", file=sys.stderr, flush=True)
            sim = simulate(trace, local, BASE_POLICIES, [], out / "simulate" / label)
            for w in windows:
                dyn = simulate(trace, local, "dynamic", [f"dynamic.window_ms={w}"],
                               out / "simulate" / f"{label}-dyn{w}")
                sim[f"dynamic w={w}"] = dyn["dynamic"]
                sim.update({f"{k} [w={w}]" if w != "0" else k: v for k, v in dyn.items()
                            if k.startswith("candidate ")})
            for ms in [m for m in args.ceiling.split(",") if m]:
                dyn = simulate(trace, local, "dynamic",
                               ["dynamic.mode=2", "dynamic.advice_rate=0",
                                "dynamic.chunk_pages=1", f"dynamic.window_ms={ms}"],
                               out / "simulate" / f"{label}-ceiling{ms}")
                sim[f"next-use ceiling, a step every {ms} ms, no budget"] = dyn["dynamic"]
            for ms in [m for m in args.online.split(",") if m]:
                scale = run_per_trace_second(build_exact(kernel, out / "bin"), run_args, trace)
                for memory in (1, 0):   # OBJTIER_ONLINE_PHASES
                    dyn = simulate(trace, local, "dynamic",
                                   ["dynamic.mode=4", f"dynamic.online_ms={ms}",
                                    f"dynamic.time_scale={scale:.6g}",
                                    f"dynamic.phase_memory={memory}"],
                                   out / "simulate" / f"{label}-online{ms}-m{memory}")
                    sim[f"online {ms} ms{'' if memory else ' without phase memory'} "
                        f"(time_scale {scale:.3g})"] = dyn["dynamic"]
            kern = float(sim["first-touch"]["swap_ins"])
            bel = float(sim["belady"]["swap_ins"])
            for policy, r in sim.items():
                swap = float(r["swap_ins"])
                rows.append({"workload": tag, "local": local, "policy": policy,
                             "swap_ins": int(swap), "major_faults": int(r["pgmajfault"]) if "pgmajfault" in r else "–",
                             "vs_belady": round(swap / bel, 2) if bel else "",
                             "position": position(kern, bel, swap),
                             "stall_s": r["stall_s"]})
    print("| workload | local | policy | swap-ins | major faults | × Belady | kernel→Belady |\n"
          "|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['workload']} | {r['local']} | {r['policy']} | {r['swap_ins']:,} | "
              f"{r['major_faults']:,} | {r['vs_belady']} | {r['position']} |"
              if isinstance(r["major_faults"], int) else
              f"| {r['workload']} | {r['local']} | {r['policy']} | {r['swap_ins']:,} | – | "
              f"{r['vs_belady']} | {r['position']} |")
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "dynamic.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {out / 'dynamic.csv'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
