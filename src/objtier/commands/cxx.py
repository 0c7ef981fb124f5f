"""`objtier c++`: clang++-16 with load/store and function entry/exit instrumentation, linked
with the objtier runtime, for exact access profiles (`objtier record --sampler trace`).
Every argument goes to the compiler; the exit status is the compiler's. See docs/exact.md."""

from __future__ import annotations

import argparse

from objtier.commands.cc import add_arguments  # noqa: F401  (the same pass-through options)
from objtier.exact.compiler import run_compiler

NAME = "c++"
HELP = "compile C++ with exact-access instrumentation (clang++-16 wrapper; see docs/exact.md)"
LANGUAGE = "c++"


def run(args: argparse.Namespace) -> int:
    return run_compiler(LANGUAGE, list(args.args))
