"""`objtier bench NAME [args...]`: run one of the built-in workloads; `--list` lists them,
`--sizes` the sizes the benchmarks and tests run them at, `--benchmarks` the benchmark registry
(bench/ scripts with the question each answers, its command and where its results go)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from objtier.benchmarks import BENCHMARKS, DOCS
from objtier.errors import UsageError
from objtier.workloads import SIZES, WORKLOADS, arguments, workload_binary

NAME = "bench"
HELP = ("run a built-in workload (bfs, bc, cc, stream, ptrchase, gups, kmeans, graphgen); "
        "--sizes, --benchmarks list the registries")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    parser.add_argument("--sizes", action="store_true",
                        help="list the workload sizes of the benchmarks and tests and exit")
    parser.add_argument("--benchmarks", action="store_true",
                        help=f"list the benchmarks behind {DOCS} and exit")
    parser.add_argument("name", nargs="?", metavar="NAME", help="workload to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                        help="arguments passed to the workload (NAME -h shows them)")


def list_benchmarks() -> None:
    width = max(len(b.name) for b in BENCHMARKS)
    for b in BENCHMARKS:
        needs = f"; needs {b.needs}" if b.needs else ""
        pending = f" (no row yet: {b.pending})" if b.pending else ""
        print(f"{b.name:<{width}}  {b.question} [{b.kind}{needs}]{pending}")
        print(f"{'':<{width}}    .venv/bin/python {b.script} {b.command}".rstrip()
              + f"  -> {b.results}")
    print(f"(each is run on its own and writes a results file to bench/results/; `make bench-doc` "
          f"renders {DOCS} from those)")


def list_sizes() -> None:
    for size, entry in SIZES.items():
        print(f"{size}: {entry.description}")
        for name, argv in arguments(size).items():   # at the size's default parameters
            print(f"    {name:<14} {' '.join(argv)}".rstrip())


def run(args: argparse.Namespace) -> int:
    if args.benchmarks:
        list_benchmarks()
        return 0
    if args.sizes:
        list_sizes()
        return 0
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
