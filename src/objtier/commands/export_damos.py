"""`objtier export-damos`: a plan as DAMON operation schemes for the live ranges of a process."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from objtier.commands._live_ranges import add_live_range_arguments, read_live_ranges
from objtier.errors import UsageError

NAME = "export-damos"
HELP = "write a plan as a DAMOS scheme set (cold objects -> pageout) for a traced process"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_live_range_arguments(parser, "the scheme set")
    parser.add_argument("--min-age", type=float, default=1.0, metavar="S",
                        help="page a cold range out once DAMON saw it idle this long "
                             "(default 1 s)")
    parser.add_argument("-o", "--output", required=True,
                        help="scheme set (damo JSON layout; `damo start FILE` applies it)")
    parser.add_argument("-f", "--force", action="store_true", help="replace an existing file")


def run(args: argparse.Namespace) -> int:
    from objtier.tiers import damos

    out = Path(args.output)
    if (out.exists() or out.is_symlink()) and not args.force:
        raise UsageError(f"{out} exists; pass -f to replace it")
    live = read_live_ranges(args)
    traced, pid = live.traced_pid, live.pid
    doc = damos.scheme_set(live.ranges, pid, args.min_age, live.source)
    problems = damos.validate_scheme_set(doc)
    if problems:   # an export this module made wrong: a defect, said in one line
        raise UsageError(f"the scheme set failed its own check: {problems[0]}")
    if out.is_symlink():
        out.unlink()
    damos.write_scheme_set(doc, out)
    info = doc["objtier"]
    print(f"wrote {out}: {len(info['ranges'])} range(s) of process {traced} for process {pid}: "
          f"{info['cold_bytes'] >> 20} MiB planned slow -> pageout after {args.min_age:g} s "
          f"idle, {info['hot_bytes'] >> 20} MiB planned fast -> stat (cgroup v2: "
          f"memory.low = {info['hot_bytes']})")
    if not Path(f"/proc/{pid}").exists():
        sys.stderr.write(f"objtier export-damos: note: process {pid} is not running; the "
                         f"addresses are those of the traced run (--target-pid: a re-run)\n")
    sys.stderr.write(f"objtier export-damos: {damos.damon_status().message()}\n")
    return 0
