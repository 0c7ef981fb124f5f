"""`objtier simulate` against the real swap tier on the same workloads and tier sizes.

    sudo .venv/bin/python bench/sim_vs_measured.py [--workloads bfs,kmeans,stream]
        [--local 75%,60%] [--repeat 1] [--workdir DIR] [--json OUT] [--resimulate]

For each workload and local size: `objtier compare --tier swap --sampler fault --local L
--repeat R` (its CLI; kernel reclaim = the baseline arm, an objtier plan = the objtier arm,
both under a memory cgroup with zram swap), then `objtier simulate` (its CLI) on the
comparison's own profile (profile.otr) with fast tier = the cgroup limit the comparison used,
the zram preset, first-touch (the kernel: LRU over the whole footprint) and the comparison's
plan (policy `phases` when the plan has phases, else `object`).

Compared, per arm: swap-in faults (the simulator swaps in one page per fault; measured: major
faults of the cgroup, memcg_pgmajfault), pages swapped in (measured pswpin counts the pages
readahead brings with each fault too: the ratio pswpin / faults is printed) and time (the
simulator's estimated stall vs the measured wall time minus the unlimited run's). Prints a
markdown table and writes --json. Restoring the machine is compare's job (it undoes its cgroup
and zram device on exit, error and Ctrl-C).
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
from pathlib import Path

from objtier import native, workloads

WORKLOADS = workloads.arguments("sim")  # name -> arguments: a few seconds each unlimited
OBJTIER = [sys.executable, "-m", "objtier"]


def compare(name: str, local: str, repeat: int, out: Path) -> dict:
    binary, argv = workloads.program_of(name), WORKLOADS[name]
    cmd = [*OBJTIER, "compare", "--tier", "swap", "--sampler", "fault", "--local", local,
           "--repeat", str(repeat), "-f", "-q", "-o", str(out), "--",
           str(native.binary(binary)), *argv]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"compare {name} {local} failed: {run.stderr.strip()[-400:]}")
    return json.loads((out / "summary.json").read_text())


def simulate(out: Path, fast_bytes: int) -> tuple[dict, str, list[str]]:
    plan = json.loads((out / "plan.json").read_text())
    policy = "phases" if plan.get("phases") else "object"
    sim_dir = out / "sim"
    cmd = [*OBJTIER, "simulate", str(out / "profile.otr"), "--fast", str(fast_bytes),
           "--preset", "zram", "--policy", f"first-touch,{policy}", "--plan",
           str(out / "plan.json"), "-o", str(sim_dir)]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"simulate {out} failed: {run.stderr.strip()[-400:]}")
    with open(sim_dir / "simulate.csv") as f:
        rows = {r["policy"]: r for r in csv.DictReader(f)}
    warnings = [line for line in run.stderr.splitlines() if line.startswith("warning:")]
    return {"baseline": rows["first-touch"], "objtier": rows[policy]}, policy, warnings


def ratio(a, b):
    return a / b if a and b else float("nan")


def measure(name: str, local: str, repeat: int, workdir: Path, resimulate: bool) -> dict:
    out = workdir / f"{name}-{local.rstrip('%')}"
    started = time.monotonic()
    if resimulate and (out / "summary.json").exists():   # keep the measured comparison
        summary = json.loads((out / "summary.json").read_text())
    else:
        summary = compare(name, local, repeat, out)
    sim, policy, warnings = simulate(out, int(summary["local"]["bytes"]))
    unlimited = float(summary["unlimited"]["wall_s"])
    row = {"workload": name, "local": local, "local_bytes": int(summary["local"]["bytes"]),
           "footprint_bytes": int(summary["unlimited"]["footprint_bytes"]),
           "repeat": repeat, "policy": policy, "warnings": warnings,
           "seconds": time.monotonic() - started}
    for arm in ("baseline", "objtier"):
        m = summary["medians"][arm]
        s = sim[arm]
        faults = m.get("memcg_pgmajfault") or m.get("major_faults")
        if m["wall_s"] is None:   # every run of the arm failed (OOM-killed, timed out)
            row[arm] = {"failed": f"{m['failed']} of {m['runs']} failed "
                        f"({m['oom_killed']} OOM-killed)",
                        "predicted_swap_ins": float(s["swap_ins"]),
                        "predicted_stall_s": float(s["stall_s"])}
            continue
        row[arm] = {
            "measured_faults": faults, "measured_pswpin": m["pswpin"],
            "readahead": ratio(m["pswpin"], faults),
            "measured_extra_s": float(m["wall_s"]) - unlimited,
            "predicted_swap_ins": float(s["swap_ins"]),
            "predicted_stall_s": float(s["stall_s"]),
            "faults_ratio": ratio(float(s["swap_ins"]), faults),
            "time_ratio": ratio(float(s["stall_s"]), float(m["wall_s"]) - unlimited),
        }
    return row


def table(rows: list[dict]) -> str:
    head = ("| workload | local | arm (policy) | measured swap-in faults | predicted swap-ins | "
            "predicted / measured | measured pswpin (pages per fault) | measured extra wall s | "
            "predicted stall s | predicted / measured |\n"
            "|---|---|---|---|---|---|---|---|---|---|\n")
    lines = []
    for r in rows:
        for arm in ("baseline", "objtier"):
            a = r[arm]
            who = "kernel (first-touch)" if arm == "baseline" else f"objtier ({r['policy']})"
            if "failed" in a:
                lines.append(f"| {r['workload']} | {r['local']} | {who} | {a['failed']} | "
                             f"{a['predicted_swap_ins']:,.0f} | - | - | - | "
                             f"{a['predicted_stall_s']:.3f} | - |")
                continue
            lines.append(
                f"| {r['workload']} | {r['local']} | {who} | {a['measured_faults']:,.0f} | "
                f"{a['predicted_swap_ins']:,.0f} | {a['faults_ratio']:.2f} | "
                f"{a['measured_pswpin']:,.0f} ({a['readahead']:.1f}) | "
                f"{a['measured_extra_s']:.2f} | {a['predicted_stall_s']:.3f} | "
                f"{a['time_ratio']:.3f} |")
    return head + "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="bfs,kmeans,stream")
    parser.add_argument("--local", default="75%,60%")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--workdir", default="/tmp/objtier-sim-vs-measured")
    parser.add_argument("--json", default=None)
    parser.add_argument("--resimulate", action="store_true",
                        help="reuse the comparisons already in --workdir; simulate again")
    args = parser.parse_args()
    names = [n for n in args.workloads.split(",") if n]
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload {unknown[0]} (known: {', '.join(WORKLOADS)})")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True, mode=0o700)
    rows = []
    for name in names:
        for local in args.local.split(","):
            row = measure(name, local, args.repeat, workdir, args.resimulate)
            rows.append(row)
            print(f"{name} {local}: done in {row['seconds']:.0f}s", file=sys.stderr, flush=True)
    print(table(rows))
    for r in rows:
        for w in r["warnings"]:
            print(f"{r['workload']} {r['local']}: {w}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
