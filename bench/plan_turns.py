#!/usr/bin/env python3
"""Two or more plans for one program, run in turn under the same memory limit.

    bench/plan_turns.py --plan NAME=PLAN.json[@MARGIN] [--plan ...] --local BYTES
        [--mlock-margin BYTES] [--env NAME:VAR=VALUE ...] [--repeat 3] [-o turns.csv]
        -- CMD [ARGS...]

Each round runs `objtier run --plan P --local BYTES --mlock-margin M -- CMD` once per plan
(M: the plan's own @MARGIN, else --mlock-margin, else objtier run's default; --env adds a
runtime setting such as OBJTIER_READAHEAD_KB=1024 to the runs of plan NAME only, so one plan
file listed under two names compares a setting), in the order given, so that the machine's drift (its speed changes by tens of percent over
an hour here) falls on every plan alike. Per run: wall time [s], the program's timed region
(the `time=` of its FOM line) [s], the system-wide pswpin / pswpout deltas of /proc/vmstat
(pages; run on an otherwise quiet machine) and of the kernel's large-folio swap-ins (folios of
any size above a base page, transparent_hugepage/hugepages-*/stats/swpin; 0 before 6.8). Prints one row per run and the medians per plan;
writes the runs as CSV. Needs root (objtier run --local builds the cgroup and the zram device).
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

FOM_TIME = re.compile(r"^FOM \S+ .*\btime=([0-9.]+)", re.MULTILINE)


def vmstat() -> dict[str, int]:
    out = {}
    for line in Path("/proc/vmstat").read_text().splitlines():
        key, value = line.split()
        out[key] = int(value)
    out["folio_swpin"] = sum(int(p.read_text()) for p in Path(
        "/sys/kernel/mm/transparent_hugepage").glob("hugepages-*/stats/swpin"))
    return out


def one_run(plan: Path, local: str, margin: str | None, command: list[str],
            env: dict[str, str] | None = None) -> dict:
    args = [sys.executable, "-m", "objtier", "run", "--plan", str(plan), "--local", local]
    if margin is not None:
        args += ["--mlock-margin", margin]
    before = vmstat()
    start = time.monotonic()
    done = subprocess.run(args + ["--"] + command, capture_output=True, text=True,
                          env={**os.environ, **env} if env else None)
    wall = time.monotonic() - start
    after = vmstat()
    timed = FOM_TIME.search(done.stdout)
    return {"returncode": done.returncode, "wall_s": round(wall, 3),
            "timed_s": float(timed.group(1)) if timed else None,
            "pswpin": after["pswpin"] - before["pswpin"],
            "pswpout": after["pswpout"] - before["pswpout"],
            "folio_swpin": after["folio_swpin"] - before["folio_swpin"],
            "last_line": (done.stderr.strip().splitlines() or [""])[-1][:120]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan", action="append", required=True, metavar="NAME=PLAN[@MARGIN]")
    parser.add_argument("--local", required=True, help="cgroup limit, as for objtier run")
    parser.add_argument("--mlock-margin", default=None)
    parser.add_argument("--env", action="append", default=[], metavar="NAME:VAR=VALUE",
                        help="an environment variable for the runs of plan NAME")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("-o", "--output", default="turns.csv")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command after --")
    plans = []
    for item in args.plan:
        name, sep, rest = item.partition("=")
        path, _, margin = rest.partition("@")
        if not sep or not Path(path).is_file():
            parser.error(f"bad --plan {item!r}: expected NAME=PLAN.json of an existing file")
        plans.append((name, Path(path), margin or args.mlock_margin))
    envs: dict[str, dict[str, str]] = {}
    for item in args.env:
        name, sep, setting = item.partition(":")
        var, eq, value = setting.partition("=")
        if not sep or not eq or name not in [p[0] for p in plans]:
            parser.error(f"bad --env {item!r}: expected NAME:VAR=VALUE for a NAME of --plan")
        envs.setdefault(name, {})[var] = value
    rows = []
    for i in range(1, args.repeat + 1):
        for name, path, margin in plans:
            row = {"round": i, "plan": name,
                   **one_run(path, args.local, margin, command, envs.get(name))}
            rows.append(row)
            print(" ".join(f"{k}={v}" for k, v in row.items() if k != "last_line"), flush=True)
    with open(args.output, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print("| plan | runs ok | wall s (median) | timed s (median) | swap-ins (median) | "
          "swap-outs (median) | large-folio swap-ins (median) |")
    print("|---|---|---|---|---|---|---|")
    for name, _, _ in plans:
        ok = [r for r in rows if r["plan"] == name and r["returncode"] == 0]
        if not ok:
            print(f"| {name} | 0/{args.repeat} | – | – | – | – | – |")
            continue
        timed = [r["timed_s"] for r in ok if r["timed_s"] is not None]  # None: no FOM line
        med = {k: statistics.median(r[k] for r in ok)
               for k in ("wall_s", "pswpin", "pswpout", "folio_swpin")}
        print(f"| {name} | {len(ok)}/{args.repeat} | {med['wall_s']:.2f} | "
              f"{f'{statistics.median(timed):.2f}' if timed else '–'} "
              f"| {med['pswpin']:,.0f} | {med['pswpout']:,.0f} | {med['folio_swpin']:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
