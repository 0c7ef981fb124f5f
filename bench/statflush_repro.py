"""Kernel reclaim alone, with and without the stat-flush reader: does the baseline survive?

    .venv/bin/python bench/statflush_repro.py [--local 50%] [--repeat 3] [--period 10]
        [--timeout 300] [-o bench-out/statflush] -- CMD [ARGS...]

One unlimited run measures the footprint (as `objtier compare` does), then under one swap tier
(memory cgroup v1/v2 limited to --local of it, a new zram device behind it) the program runs
with the reader (`kernel`) and without it (`kernel-raw`), alternately, --repeat times each. No
objtier runtime is involved: both arms are the plain program. Prints one line per run (exit,
wall time, the cgroup's OOM kills and swap-ins, the reader's reads) and a survival summary.
Needs root.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--local", default="50%")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--period", type=float, default=10.0, help="reader period [ms]")
    parser.add_argument("--timeout", type=float, default=300.0, help="per limited run [s]")
    parser.add_argument("-o", "--output", default="bench-out/statflush")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the program after --")

    from objtier import enforcement as enforce
    from objtier.experiments.compare_swap import measure_footprint, one_run
    from objtier.tiers.statflush import StatFlushReader
    from objtier.tiers.swap import SwapTier

    out = Path(args.output)
    runs = out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    say = lambda text: print(f"statflush_repro: {text}", file=sys.stderr, flush=True)  # noqa
    unlimited, footprint, _ = measure_footprint(command, say)
    local = enforce.parse_local(args.local, footprint)
    say(f"footprint {footprint >> 20} MiB, local {local >> 20} MiB, unlimited "
        f"{unlimited.wall_s:.1f} s")
    results = []
    with SwapTier(local, swap="zram") as tier:
        for i in range(1, args.repeat + 1):
            for arm, period in (("kernel", args.period), ("kernel-raw", 0)):
                with StatFlushReader(tier.cgroup.path, period) as reader:
                    row = one_run(tier, arm, i, len(results) + 1, command, None, args.timeout,
                                  runs, {}, None)
                line = {"arm": arm, "repeat": i, "returncode": row.returncode,
                        "wall_s": round(row.wall_s, 2), "oom_kills": row.memcg_oom_kills,
                        "swapins": row.memcg_refault_anon, "reads": reader.stats.reads,
                        "max_gap_ms": round(reader.stats.max_gap_ms, 1)}
                results.append(line)
                print(json.dumps(line), flush=True)
    for arm in ("kernel", "kernel-raw"):
        mine = [r for r in results if r["arm"] == arm]
        ok = [r for r in mine if r["returncode"] == 0]
        oom = sum(1 for r in mine if r["oom_kills"])
        walls = sorted(r["wall_s"] for r in ok)
        median = walls[len(walls) // 2] if walls else None
        print(f"{arm}: {len(ok)} of {len(mine)} finished, {oom} OOM-killed, median wall of "
              f"finished runs {median} s")
    (out / "results.json").write_text(json.dumps(
        {"command": command, "local": args.local, "footprint_bytes": footprint,
         "local_bytes": local, "period_ms": args.period, "unlimited_wall_s": unlimited.wall_s,
         "host": os.uname().nodename, "runs": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
