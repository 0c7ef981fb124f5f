"""`objtier record`: run a program with the runtime, writing a trace directory."""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from objtier.errors import UsageError
from objtier.record.counters import CountersCollector
from objtier.record.launch import exit_code, resolve_command, run_program, runtime_env
from objtier.record.sampler_choice import SAMPLERS, choose_sampler
from objtier.units import format_bytes, parse_size

NAME = "record"
HELP = "run a program, recording its objects, access samples and memory counters"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", default="run.otr",
                        help="recording directory to write (default: run.otr)")
    parser.add_argument("-f", "--force", action="store_true",
                        help="replace the output directory if it exists")
    parser.add_argument("--sampler", default="auto", choices=SAMPLERS,
                        help="access sampler (default auto: perf with PEBS/IBS, else fault)")
    parser.add_argument("--rate", type=int, default=2000,
                        help="most access samples per second (default 2000)")
    parser.add_argument("--min-size", default="128K",
                        help="smallest allocation recorded as an object (default 128K)")
    parser.add_argument("--stack-depth", type=int, default=8,
                        help="frames per allocation context (default 8, at most 32)")
    parser.add_argument("--counters-interval", type=int, default=100, metavar="MS",
                        help="counters timeline period in milliseconds (default 100; 0 = off)")
    parser.add_argument("--follow-forks", action="store_true",
                        help="also record child processes (fork and exec)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="-- CMD [ARGS...]: the program to record")


def settings_from_args(args: argparse.Namespace, output: Path, sampler: str) -> dict[str, str]:
    if args.rate <= 0:
        raise UsageError(f"--rate must be positive, got {args.rate}")
    if not 1 <= args.stack_depth <= 32:
        raise UsageError(f"--stack-depth must be between 1 and 32, got {args.stack_depth}")
    if args.counters_interval < 0:
        raise UsageError("--counters-interval must be 0 (off) or a positive number of ms")
    return {
        "OBJTIER_OUTPUT": str(output.resolve()),
        "OBJTIER_SAMPLER": sampler,
        "OBJTIER_RATE": str(args.rate),
        "OBJTIER_MIN_SIZE": str(parse_size(args.min_size, "--min-size")),
        "OBJTIER_STACK_DEPTH": str(args.stack_depth),
        "OBJTIER_FOLLOW_FORKS": "1" if args.follow_forks else "0",
    }


def prepare_output(output: Path, force: bool) -> None:
    if output.exists():
        if not force:
            raise UsageError(f"{output} exists; choose another -o or pass --force to replace it")
        if output.is_dir() and not any(p.suffix != ".otr" for p in output.iterdir()):
            shutil.rmtree(output)
        else:
            raise UsageError(f"{output} is not a recording directory; refusing to replace it")
    output.mkdir(parents=True)


def run(args: argparse.Namespace) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    command = resolve_command(command)
    sampler, reason = choose_sampler(args.sampler)
    output = Path(args.output)
    settings = settings_from_args(args, output, sampler)
    env = runtime_env(settings)  # fails early when the runtime is not built
    prepare_output(output, args.force)
    say = (lambda text: None) if args.quiet else (lambda text: print(f"objtier record: {text}",
                                                                      file=sys.stderr))
    say(f"sampler {sampler}: {reason}")

    collector: list[CountersCollector] = []

    def start_counters(pid: int) -> None:
        if args.counters_interval > 0:
            collector.append(CountersCollector(output / "counters.otr", pid,
                                               args.counters_interval / 1000))
            collector[0].start()

    started = time.monotonic()
    returncode = run_program(command, env, on_start=start_counters)
    elapsed = time.monotonic() - started
    for c in collector:
        c.stop()
    summarize(output, elapsed, returncode, say)
    return exit_code(returncode)


def summarize(output: Path, elapsed: float, returncode: int, say) -> None:
    """Read the trace back and print what it holds."""
    from objtier.errors import TraceError
    from objtier.trace import open_trace

    if returncode < 0:
        say(f"the program was killed by signal {-returncode}; the trace holds what was flushed")
    try:
        trace = open_trace(output)
    except TraceError as error:
        say(f"no readable trace was written ({error})")
        return
    samples = trace.samples
    objects = trace.allocations.num_rows
    size = sum(f.stat().st_size for f in output.glob("*.otr"))
    say(f"{len(trace.processes)} process(es), {objects} objects, {samples.num_rows} samples, "
        f"{trace.counters.num_rows} counter values in {elapsed:.2f}s")
    for warning in trace.warnings:
        say(f"warning: {warning}")
    if not trace.processes:
        say("warning: the runtime wrote no process trace (is the program statically linked, "
            "or setuid?)")
    say(f"trace written to {output}/ ({format_bytes(size)})")
