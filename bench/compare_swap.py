"""`objtier compare --tier swap` over the workload suite: kernel reclaim vs objtier plan.

    .venv/bin/python bench/compare_swap.py [--local 70%,50%] [--repeat 3] [--scale 18]
        [--workloads bfs_kron,bc_kron,cc_kron,bfs_urand,bc_urand,cc_urand,stream,gups,kmeans]
        [--size-factor 1.0] [-o bench-out/compare] [--append-docs]

Graphs are generated once (graphgen -o, outside the measurement) and loaded with -f. Sizes are
parameters: --scale for the graphs, --size-factor scales STREAM, GUPS and K-means (1.0 = about
100 MiB each, a few seconds per unlimited run here). Needs root. Prints a Markdown table (one row
per workload and local size) and, with --append-docs, appends it under its own heading to
docs/benchmarks.md (re-read right before writing), plus a combined chart per local size.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable


def workloads(scale: int, factor: float, graphs: Path, bin_dir: Path) -> dict[str, list[str]]:
    b = lambda name: str(bin_dir / name)  # noqa: E731
    kron, urand = str(graphs / f"kron{scale}.csr"), str(graphs / f"urand{scale}.csr")
    return {
        "bfs_kron": [b("bfs"), "-f", kron, "-n", "8"],
        "bc_kron": [b("bc"), "-f", kron, "-i", "2"],
        "cc_kron": [b("cc"), "-f", kron, "-n", "2"],
        "bfs_urand": [b("bfs"), "-f", urand, "-n", "8"],
        "bc_urand": [b("bc"), "-f", urand, "-i", "2"],
        "cc_urand": [b("cc"), "-f", urand, "-n", "2"],
        "stream": [b("stream"), "-s", str(int(4_000_000 * factor)), "-n", "10"],
        "gups": [b("gups"), "-l", str(24 + max(0, round(math.log2(max(factor, 1e-9)))))],
        "kmeans": [b("kmeans"), "-n", str(int(700_000 * factor)), "-i", "5"],
    }


def make_graphs(scale: int, graphs: Path, bin_dir: Path) -> None:
    graphs.mkdir(parents=True, exist_ok=True)
    for kind, flag in (("kron", "-g"), ("urand", "-u")):
        path = graphs / f"{kind}{scale}.csr"
        if not path.exists():
            subprocess.run([str(bin_dir / "graphgen"), flag, str(scale), "-o", str(path)],
                           check=True, capture_output=True)


def fmt(value, digits=3) -> str:
    if value is None:
        return "–"
    if value == "inf":
        return "∞"
    return f"{float(value):.{digits}g}"


def row_for(name: str, local: str, summary: dict) -> str:
    m, r = summary["medians"], summary["ratios"]
    base, obj = m["baseline"], m["objtier"]
    failed = base["failed"] + obj["failed"]
    unlimited = summary["unlimited"]["wall_s"]
    return (f"| {name} | {local} | {summary['unlimited']['footprint_bytes'] >> 20} | "
            f"{fmt(unlimited)} | {fmt(base['wall_s'])} | {fmt(obj['wall_s'])} | "
            f"{fmt(r['speedup'])} | {fmt(r['timed_speedup'])} | {fmt(r['fom_ratio'])} | "
            f"{fmt(base['pswpout'])} | {fmt(obj['pswpout'])} | {fmt(r['swapout_reduction'])} | "
            f"{summary['plan'].get('fast_objects', '–')} / {summary['plan'].get('objects', '–')} | "
            f"{failed} |")


HEADER = ("| workload | local | footprint MiB | unlimited s | baseline s | objtier s | speedup | "
          "timed-region speedup | FoM ratio | baseline swap-outs | objtier swap-outs | "
          "swap-out cut | plan fast / objects | failed runs |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--local", default="70%,50%")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scale", type=int, default=18)
    parser.add_argument("--size-factor", type=float, default=1.0)
    parser.add_argument("--workloads", default=None, help="comma-separated subset")
    parser.add_argument("--algo", default="rank")
    parser.add_argument("--timeout", type=float, default=180, help="per limited run [s]")
    parser.add_argument("-o", "--output", default=str(REPO / "bench-out" / "compare"))
    parser.add_argument("--append-docs", action="store_true")
    args = parser.parse_args()

    from objtier.harness.chart import plot_comparison
    from objtier.native import NATIVE_DIR

    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    bin_dir = NATIVE_DIR / "bin"
    make_graphs(args.scale, out / "graphs", bin_dir)
    suite = workloads(args.scale, args.size_factor, out / "graphs", bin_dir)
    chosen = args.workloads.split(",") if args.workloads else list(suite)
    lines, enforced = [], None
    for local in args.local.split(","):
        groups = []
        for name in chosen:
            target = out / f"{name}-{local.rstrip('%')}"
            command = [PY, "-m", "objtier", "compare", "-q", "-f", "--local", local, "--repeat",
                       str(args.repeat), "--algo", args.algo, "--timeout", str(args.timeout),
                       "-o", str(target), "--", *suite[name]]
            print(f"== {name} at {local}", file=sys.stderr, flush=True)
            run = subprocess.run(command, capture_output=True, text=True)
            if run.returncode != 0:
                message = (run.stderr.strip().splitlines() or ["?"])[-1]
                lines.append(f"| {name} | {local} | – | – | – | – | – | – | – | – | – | – | – | "
                             f"error: {message} |")
                print(message, file=sys.stderr)
                continue
            summary = json.loads((target / "summary.json").read_text())
            enforced = summary["runtime_enforces_plans"]
            lines.append(row_for(name, local, summary))
            print(lines[-1], flush=True)
            import csv
            with open(target / "compare.csv") as f:
                groups.append((name, summary, list(csv.DictReader(f))))
        if groups:
            plot_comparison(groups, out / f"compare-{local.rstrip('%')}.png",
                            f"swap tier, local {local} of the footprint: time / kernel baseline")
    table = HEADER + "\n" + "\n".join(lines)
    print(table)
    if args.append_docs:
        date = _dt.date.today().isoformat()
        section = (
            f"\n## Swap tier: kernel reclaim vs objtier plan (`bench/compare_swap.py`)\n\n"
            f"`.venv/bin/python bench/compare_swap.py --local {args.local} --repeat "
            f"{args.repeat} --scale {args.scale} --size-factor {args.size_factor}` — "
            f"{platform.node()}, kernel {platform.release()}, {os.cpu_count()} CPUs, {date}. "
            f"Memory cgroup v1 limited to --local of the footprint (cgroup peak of an "
            f"unlimited run), zram (lz4) behind it; baseline and objtier runs interleaved, "
            f"medians of {args.repeat}; plan algorithm {args.algo}. Runtime enforces plans: "
            f"{'yes' if enforced else 'NO — the objtier column is the runtime without placement'}"
            f".\n\n{table}\n")
        with open(REPO / "docs" / "benchmarks.md", "a") as f:
            f.write(section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
