"""`objtier cc`: clang-16 with load/store and function entry/exit instrumentation, linked
with the objtier runtime, for exact access profiles (`objtier record --sampler trace`).
Every argument goes to the compiler; the exit status is the compiler's. See docs/exact.md."""

from __future__ import annotations

import argparse

from objtier.exact.compiler import run_compiler

NAME = "cc"
HELP = "compile C with exact-access instrumentation (clang-16 wrapper; see docs/exact.md)"
LANGUAGE = "c"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # Every argument is the compiler's (-O2, -o, -c, ...): no option of our own, not even -h.
    parser.prefix_chars = "\0"
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                        help="compiler arguments, passed through")


def run(args: argparse.Namespace) -> int:
    return run_compiler(LANGUAGE, list(args.args))
