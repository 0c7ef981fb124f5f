"""Options shared by the commands that export a plan for the live ranges of a traced process
(`export-damos`, `export-memtierd`): which plan, which trace, which moment, which process."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from objtier.errors import UsageError


def add_live_range_arguments(parser: argparse.ArgumentParser, acts_on: str) -> None:
    """--plan, --trace, --at, --pid, --target-pid and --phase; acts_on names what the export
    is (e.g. "the scheme set") in --target-pid's help."""
    parser.add_argument("--plan", required=True, help="plan.json")
    parser.add_argument("--trace", required=True,
                        help="a trace with the process's object addresses: a recording, or "
                             "the -o of `objtier run` (the addresses are that run's)")
    parser.add_argument("--at", type=float, default=None, metavar="S",
                        help="objects alive S seconds after the trace started (default: at "
                             "its end)")
    parser.add_argument("--pid", type=int, default=None,
                        help="the traced process to export (default: the one with most "
                             "objects)")
    parser.add_argument("--target-pid", type=int, default=None,
                        help=f"the process {acts_on} acts on (default: the traced one); "
                             "another process must have the same layout (docs/compare.md)")
    parser.add_argument("--phase", default="*",
                        help="the plan's phase whose entries to export (default *: the whole "
                             "run's)")


@dataclass
class LiveRanges:
    plan: dict[str, Any]
    ranges: list[Any]          # tiers.damos.plan_ranges: the planned ranges live at --at
    traced_pid: int            # the traced process they are of
    pid: int                   # the process the export acts on (--target-pid, else traced_pid)
    source: dict[str, Any]     # provenance: plan, trace (absolute paths), phase, traced_pid


def read_live_ranges(args: argparse.Namespace) -> LiveRanges:
    """The options of add_live_range_arguments checked and read: the plan, the trace, and the
    planned ranges of the traced process live at --at."""
    from objtier.errors import TraceError
    from objtier.plan.planfile import load_plan
    from objtier.tiers import damos
    from objtier.trace import open_trace

    if args.at is not None and args.at < 0:
        raise UsageError(f"--at must be >= 0 s, got {args.at:g}")
    if args.target_pid is not None and args.target_pid <= 0:
        raise UsageError(f"--target-pid must be a process id, got {args.target_pid}")
    plan = load_plan(args.plan)
    try:
        trace = open_trace(args.trace)
        start = int(trace.start_ns)
    except (TraceError, OSError) as error:
        raise UsageError(f"cannot read trace {args.trace}: {error}") from None
    at_ns = None if args.at is None else start + int(args.at * 1e9)
    ranges, traced = damos.plan_ranges(plan, trace, at_ns, args.pid, args.phase)
    source = {"plan": str(Path(args.plan).resolve()), "trace": str(Path(args.trace).resolve()),
              "phase": args.phase, "traced_pid": traced}
    return LiveRanges(plan, ranges, traced,
                      traced if args.target_pid is None else args.target_pid, source)
