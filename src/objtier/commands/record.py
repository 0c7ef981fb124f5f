"""`objtier record`: run a program with the runtime, writing a trace directory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from objtier.errors import UsageError
from objtier.record.launch import exit_code, resolve_command
from objtier.record.sampler_choice import SAMPLERS, choose_sampler
from objtier.record.session import RecordSettings, record_program
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
    parser.add_argument("--trace-limit", type=int, default=0, metavar="N",
                        help="--sampler trace: also write the first N accesses as a full "
                        "address trace (default 0)")
    parser.add_argument("--llc", default=None, metavar="SIZE,WAYS,LINE",
                        help="--sampler trace: last-level-cache model, e.g. 32M,16,64 "
                        "(default: this machine's LLC)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="-- CMD [ARGS...]: the program to record")


def run(args: argparse.Namespace) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    command = resolve_command(command)
    sampler, reason = choose_sampler(args.sampler)
    settings = RecordSettings(sampler=sampler, rate=args.rate,
                              min_size=parse_size(args.min_size, "--min-size"),
                              stack_depth=args.stack_depth,
                              counters_interval_ms=args.counters_interval,
                              follow_forks=args.follow_forks,
                              trace_limit=args.trace_limit, llc=_parse_llc(args.llc))
    settings.validate()
    output = Path(args.output)
    say = (lambda text: None) if args.quiet else (
        lambda text: print(f"objtier record: {text}", file=sys.stderr))
    say(f"sampler {sampler}: {reason}")
    from objtier.record.launcher import ChildWatcher

    with ChildWatcher() as watcher:   # notices a launcher's children (record.launcher)
        returncode, elapsed = record_program(command, output, settings, force=args.force)
    summarize(output, elapsed, returncode, say, watcher.children, args.follow_forks)
    return exit_code(returncode)


def _parse_llc(text: str | None) -> tuple[int, int, int] | None:
    if text is None:
        return None
    parts = text.split(",")
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        raise UsageError(f"--llc takes SIZE,WAYS,LINE (e.g. 32M,16,64), got '{text}'")
    return parse_size(parts[0], "--llc size"), int(parts[1]), int(parts[2])


def summarize(output: Path, elapsed: float, returncode: int, say,
              children: dict[int, str] | None = None, follow_forks: bool = False) -> None:
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
    if trace.access_counts.num_rows:
        counts = trace.access_counts
        loads = sum(counts.column("loads").to_pylist())
        stores = sum(counts.column("stores").to_pylist())
        say(f"exact counts: {loads} loads, {stores} stores over "
            f"{counts.num_rows} (object, context) pairs")
    for warning in trace.warnings:
        say(f"warning: {warning}")
    from objtier.record.launcher import launcher_hint

    hint = launcher_hint(trace, children or {}, follow_forks)
    if hint:
        print(f"objtier record: warning: {hint}", file=sys.stderr)   # even with --quiet
    if not trace.processes:
        say("warning: the runtime wrote no process trace (is the program statically linked, "
            "or setuid?)")
    say(f"trace written to {output}/ ({format_bytes(size)})")
