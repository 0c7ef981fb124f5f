"""`objtier bench NAME [args...]`: run one of the built-in workloads."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from objtier.errors import UsageError
from objtier.workloads import WORKLOADS, workload_binary

NAME = "bench"
HELP = "run a built-in workload (bfs, bc, cc, stream, ptrchase, gups, kmeans, graphgen)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    parser.add_argument("name", nargs="?", metavar="NAME", help="workload to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                        help="arguments passed to the workload (NAME -h shows them)")


def run(args: argparse.Namespace) -> int:
    if args.list:
        width = max(map(len, WORKLOADS))
        for name, description in WORKLOADS.items():
            print(f"{name:<{width}}  {description}")
        return 0
    if not args.name:
        raise UsageError("give a workload NAME (see `objtier bench --list`)")
    exe = workload_binary(args.name)
    sys.stdout.flush()
    # The workload inherits stdout/stderr, so its output streams as it is written.
    try:
        proc = subprocess.Popen([str(exe), *args.args], env=os.environ.copy())
    except OSError as error:
        raise UsageError(f"cannot run {exe}: {error.strerror}") from error
    try:
        code = proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        proc.wait()
        raise
    # A workload killed by a signal reports -N; the shell convention is 128 + N.
    return code if code >= 0 else 128 - code
