"""Where the runtime's trace lives while the program runs under a memory limit: on disk, on
tmpfs (what `compare`, `run --local` and `sweep --per-object` do, objtier.tiers.spool) or
nowhere (no trace). One program, one plan, one memory cgroup with zram, the stat-flush reader at
10 ms as in compare; `sync` and `memory.force_empty` before each run so that no run inherits
the previous one's pages; rounds rotate the order of the three settings.

    .venv/bin/python bench/trace_in_cgroup.py [--scale 17] [--local-bytes 10092544]
        [--fast 6M] [--rounds 9] [-o bench-out/trace-in-cgroup]

Workload: CC on the uniform graph (`graphgen -u SCALE`, `cc -f G -n 1`), planned from one
`objtier record` with `objtier plan --fast`. Prints per setting the median wall time and range,
the timed region and major faults (which must not differ), and writes runs.csv. Needs root.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SETTINGS = ("disk", "tmpfs", "none")


def main() -> int:
    from objtier.experiments.measure import run_measured
    from objtier.native import binary as workload_binary
    from objtier import enforcement as enforce
    from objtier.record.launch import runtime_env
    from objtier.tiers.spool import Spool
    from objtier.tiers.statflush import StatFlushReader
    from objtier.tiers.swap import SwapTier
    from objtier.units import parse_size

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=17)
    parser.add_argument("--local-bytes", type=int, default=10092544)
    parser.add_argument("--fast", default="6M")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("-o", "--output", default=str(REPO / "bench-out" / "trace-in-cgroup"))
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("trace_in_cgroup: needs root (a memory cgroup and a swap device)")
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    graph = out / f"urand{args.scale}.csr"
    if not graph.exists():
        subprocess.run([str(workload_binary("graphgen")), "-u", str(args.scale), "-o",
                        str(graph)], check=True, capture_output=True)
    command = [str(workload_binary("cc")), "-f", str(graph), "-n", "1"]
    objtier = [sys.executable, "-m", "objtier"]
    subprocess.run([*objtier, "record", "-q", "-f", "-o", str(out / "rec.otr"), "--", *command],
                   check=True, capture_output=True)
    subprocess.run([*objtier, "plan", str(out / "rec.otr"), "--fast", args.fast, "-o",
                    str(out / "plan.json"), "--text", str(out / "plan.txt")], check=True,
                   capture_output=True)
    rows = []
    with SwapTier(args.local_bytes) as tier:
        for r in range(args.rounds):
            k = r % len(SETTINGS)
            for setting in SETTINGS[k:] + SETTINGS[:k]:
                final = out / f"trace-{setting}"
                shutil.rmtree(final, ignore_errors=True)
                final.mkdir(mode=0o700)
                spool = Spool(final) if setting == "tmpfs" else None
                if setting == "tmpfs" and not spool.spooled:
                    sys.exit("trace_in_cgroup: /dev/shm is not a tmpfs here")
                where = spool.path if spool else final if setting == "disk" else None
                run = enforce.PlanRun(out / "plan.txt", parse_size(args.fast, "--fast"),
                                      output=where)
                os.sync()
                (tier.cgroup.path / "memory.force_empty").write_text("0")
                with StatFlushReader(tier.cgroup.path, 10):
                    m = run_measured(setting, command, env=runtime_env(run.settings()),
                                     preexec=tier.preexec, timeout_s=120)
                if spool:
                    spool.land()
                timed = re.search(r"time=([0-9.]+)", m.stdout)
                rows.append({"round": r, "setting": setting, "returncode": m.returncode,
                             "wall_s": round(m.wall_s, 4),
                             "timed_s": float(timed.group(1)) if timed else None,
                             "major_faults": m.major_faults, "user_s": m.user_s,
                             "system_s": m.system_s})
                print(rows[-1], flush=True)
    with open(out / "runs.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    for setting in SETTINGS:
        mine = [row for row in rows if row["setting"] == setting]
        wall = [row["wall_s"] for row in mine]
        timed = [row["timed_s"] for row in mine if row["timed_s"] is not None]
        faults = [row["major_faults"] for row in mine]
        print(f"{setting:6s} wall median {statistics.median(wall):.3f} s "
              f"({min(wall):.2f}–{max(wall):.2f}), timed region {min(timed):.3f}–"
              f"{max(timed):.3f} s, major faults {min(faults)}–{max(faults)}, "
              f"{sum(row['returncode'] == 0 for row in mine)}/{len(mine)} exit 0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
