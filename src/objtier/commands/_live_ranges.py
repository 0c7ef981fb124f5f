"""Options shared by the commands that export a plan for the live ranges of a traced process
(`export-damos`, `export-memtierd`): which plan, which trace, which moment, which process."""

from __future__ import annotations

import argparse


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
