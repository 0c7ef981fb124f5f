"""The ceiling of placement on the swap tier: the kernel and objtier measured under a memory
cgroup, against Belady's MIN (the fewest swap-ins any policy can have) on the same program's
exact trace, with the same local memory.

    .venv/bin/python bench/swap_ceiling.py [--scale 17] [--local 70%,50%] [--repeat 2]
        [--workloads bfs_urand,cc_urand,bc_urand,bfs_kron,cc_kron,bc_kron]
        [--trials bfs=4,cc=1,bc=1] [--mlock-margin 2M] [-o bench-out/ceiling]

Per graph workload (one thread, few trials: an exact trace holds every load and store):
 1. build the kernel with `objtier cc` (instrumented) and record it with the trace sampler
    (every access to a tracked object is a SAMPLE record), once;
 2. `objtier compare --tier swap --local L` with the plain binary and the same arguments: the
    kernel's and objtier's swap-ins (the cgroup's own, workingset_refault_anon), medians;
 3. `objtier simulate --preset zram --fast <the cgroup limit compare used>` on the exact trace:
    first-touch (the simulator's second-chance LRU), spill and oracle (static placements), and
    belady (the optimum).
The cgroup limit also holds memory the trace does not see (the binary, libraries, stack, small
blocks, page tables), and the trace misses the kernel's own writes (read() of the graph file):
both make belady's count lower than the true optimum of the real run, so kernel / belady
bounds from above the cut any placement can reach. Needs root and clang-16.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare_swap import make_graphs  # noqa: E402
from exact_setup import TRIAL_OPTION, build_exact, record_exact  # noqa: E402

POLICIES = "first-touch,spill,oracle,belady"


def compare(command: list[str], local: str, repeat: int, margin: str, target: Path) -> dict:
    if not (target / "summary.json").exists():
        subprocess.run([PY, "-m", "objtier", "compare", "-q", "-f", "--local", local,
                        "--repeat", str(repeat), "--mlock-margin", margin, "-o", str(target),
                        "--", *command], check=True)
    return json.loads((target / "summary.json").read_text())


def simulate(trace: Path, fast_bytes: int, target: Path) -> dict[str, dict]:
    table = target / "simulate.csv"
    if not table.exists():
        subprocess.run([PY, "-m", "objtier", "simulate", str(trace), "--fast", str(fast_bytes),
                        "--preset", "zram", "--policy", POLICIES, "-o", str(target)],
                       check=True, stdout=subprocess.DEVNULL)
    with open(table) as f:
        return {row["policy"]: row for row in csv.DictReader(f)}


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×" if b else "–"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=17)
    parser.add_argument("--local", default="70%,50%")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--workloads",
                        default="bfs_urand,cc_urand,bc_urand,bfs_kron,cc_kron,bc_kron")
    parser.add_argument("--trials", default="bfs=4,cc=1,bc=1", metavar="K=N,...",
                        help="searches (bfs), runs (cc), sources (bc) per program")
    parser.add_argument("--mlock-margin", default="2M",
                        help="compare's margin (the default 32 MiB exceeds these small limits)")
    parser.add_argument("-o", "--output", default=str(REPO / "bench-out" / "ceiling"))
    args = parser.parse_args()

    from objtier.native import NATIVE_DIR

    trials = dict(item.split("=") for item in args.trials.split(","))
    out = Path(args.output)
    graphs = out / "graphs"
    make_graphs(args.scale, graphs, NATIVE_DIR / "bin")
    rows = []
    print("| workload | trials | local | kernel (measured) | objtier (measured) | LRU (sim) "
          "| spill (sim) | oracle (sim) | belady (sim) | objtier cut | ceiling: kernel / belady "
          "| runs ok |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.workloads.split(","):
        kernel, kind = name.split("_")
        graph_args = ["-f", str(graphs / f"{kind}{args.scale}.csr"), TRIAL_OPTION[kernel],
                      trials[kernel], "-t", "1"]
        trace = out / "traces" / f"{name}-{trials[kernel]}.otr"
        trace.parent.mkdir(parents=True, exist_ok=True)
        print(f"== {name}: exact trace", file=sys.stderr, flush=True)
        record_exact(build_exact(kernel, out / "bin"), graph_args, trace)
        for local in args.local.split(","):
            tag = f"{name}-{trials[kernel]}-{local.rstrip('%')}"
            print(f"== {tag}: compare, simulate", file=sys.stderr, flush=True)
            summary = compare([str(NATIVE_DIR / "bin" / kernel), *graph_args], local,
                              args.repeat, args.mlock_margin, out / "compare" / tag)
            limit = int(summary["local"]["bytes"])
            sim = simulate(trace, limit, out / "simulate" / tag)
            med = summary["medians"]
            kern = med["baseline"]["memcg_refault_anon"] or float("nan")
            obj = med["objtier"]["memcg_refault_anon"] or float("nan")
            swap = {p: int(r["swap_ins"]) for p, r in sim.items()}
            rows.append({
                "workload": name, "trials": trials[kernel], "local": local, "limit_bytes": limit,
                "kernel_ok": f"{med['baseline']['runs'] - med['baseline']['failed']}"
                             f"/{med['baseline']['runs']}",
                "objtier_ok": f"{med['objtier']['runs'] - med['objtier']['failed']}"
                              f"/{med['objtier']['runs']}",
                "kernel_swapins": kern, "objtier_swapins": obj,
                **{f"sim_{p.replace('-', '_')}_swapins": v for p, v in swap.items()},
            })
            r = rows[-1]
            print(f"| {name} | {trials[kernel]} | {local} | {kern:,.0f} | {obj:,.0f} | "
                  f"{swap['first-touch']:,} | {swap['spill']:,} | {swap['oracle']:,} | "
                  f"{swap['belady']:,} | "
                  f"{ratio(kern, obj)} | {ratio(kern, swap['belady'])} | "
                  f"{r['kernel_ok']}, {r['objtier_ok']} |", flush=True)
    with open(out / "ceiling.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {out / 'ceiling.csv'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
