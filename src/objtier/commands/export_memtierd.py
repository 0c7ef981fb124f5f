"""`objtier export-memtierd`: a plan as memtierd commands (and the cgroup v2 settings it implies)
for the live ranges of a process."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from objtier.commands._live_ranges import add_live_range_arguments, read_live_ranges
from objtier.errors import UsageError

NAME = "export-memtierd"
HELP = ("write a plan as memtierd commands (planned slow -> swap out or the slow node) and "
        "cgroup v2 settings for a traced process")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_live_range_arguments(parser, "the commands")
    parser.add_argument("--tier", default="swap", choices=("swap", "numa"),
                        help="swap: planned fast -> swap in, planned slow -> swap out "
                             "(default); numa: move them to --fast-node / --slow-node")
    parser.add_argument("--fast-node", type=int, default=None, metavar="N",
                        help="--tier numa: the node for planned-fast pages")
    parser.add_argument("--slow-node", type=int, default=None, metavar="N",
                        help="--tier numa: the node for planned-slow pages")
    parser.add_argument("--cgroup-out", default=None, metavar="FILE",
                        help="also write the cgroup v2 settings, ranges and provenance as JSON")
    parser.add_argument("-o", "--output", required=True,
                        help="memtierd command script (`memtierd -prompt < FILE` applies it)")
    parser.add_argument("-f", "--force", action="store_true", help="replace existing files")


def run(args: argparse.Namespace) -> int:
    from objtier.outputs import write_private
    from objtier.tiers import memtierd

    outputs = [Path(args.output)] + ([Path(args.cgroup_out)] if args.cgroup_out else [])
    if len({p.resolve() for p in outputs}) < len(outputs):
        raise UsageError("-o and --cgroup-out name the same file")
    for out in outputs:
        if (out.exists() or out.is_symlink()) and not args.force:
            raise UsageError(f"{out} exists; pass -f to replace it")
    live = read_live_ranges(args)
    plan, ranges, traced, pid = live.plan, live.ranges, live.traced_pid, live.pid
    source = live.source
    result = memtierd.export(plan, ranges, pid, args.tier, args.fast_node, args.slow_node,
                             source)
    checked = memtierd.parse_script(result.lines)
    if checked.problems:   # an export this module made wrong: a defect, said in one line
        raise UsageError(f"the command script failed its own check: {checked.problems[0]}")
    for out in outputs:
        if out.is_symlink():
            out.unlink()
    write_private(outputs[0], "\n".join(result.lines) + "\n")
    if args.cgroup_out:
        doc = {"cgroup_v2": result.cgroup_v2, "objtier": {
            **source, "pid": pid, "tier": args.tier,
            "ranges": [{"start": r.start, "end": r.end, "tier": "fast" if r.hot else "slow",
                        "objects": r.label} for r in ranges],
            "hot_bytes": result.hot_bytes, "cold_bytes": result.cold_bytes,
            "notes": ["memory.low protects the planned-fast bytes of the cgroup as a whole, "
                      "not per object; memory.high is the plan's fast budget",
                      "the addresses belong to the traced run; another run of the program "
                      "has other addresses: export again from its trace"]}}
        write_private(outputs[1], json.dumps(doc, indent=1) + "\n")
    settings = ", ".join(f"{k} = {v}" for k, v in result.cgroup_v2.items())
    action = "swap out" if args.tier == "swap" else f"node {args.slow_node}"
    print(f"wrote {outputs[0]}: {len(ranges)} range(s) of process {traced} for process {pid}: "
          f"{result.cold_bytes >> 20} MiB planned slow -> {action}, {result.hot_bytes >> 20} "
          f"MiB planned fast; cgroup v2: {settings}")
    if not Path(f"/proc/{pid}").exists():
        sys.stderr.write(f"objtier export-memtierd: note: process {pid} is not running; the "
                         f"addresses are those of the traced run (--target-pid: a re-run)\n")
    return 0
