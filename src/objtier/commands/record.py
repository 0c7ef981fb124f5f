"""`objtier record`: run a program with the runtime, writing a trace directory."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from objtier import bounds as B
from objtier.errors import UsageError
from objtier.record.launch import exit_code, resolve_command
from objtier.record.sampler_choice import SAMPLERS, choose_sampler
from objtier.record.sampler_swap import sampler_swap
from objtier.record.session import RecordSettings, record_program
from objtier.units import format_bytes

OVERHEAD_DEFAULT = 3.0  # % of the program's CPU time the sampler may cost (--overhead)

# What --sampler fault guarantees and what it cannot (docs/runtime.md has the full list).
FAULT_SAMPLER_NOTE = (
    "--sampler fault makes sampled pages PROT_NONE for up to 50 ms and serves their first "
    "touch as a fault. It arms only pages that are read-write now (it follows mmap, mprotect, "
    "pkey_mprotect, munmap, mremap, madvise), never while a thread blocks SIGSEGV, and "
    "restores a buffer before the system and stdio calls it wraps (read/write families, "
    "FORTIFY _chk and _unlocked stdio, printf, recvmsg/sendmsg, getrandom) pass it to the "
    "kernel; guard pages and read-only memory still fault. Remaining hazards: system calls it "
    "cannot see (raw syscall(), io_uring, Linux AIO, process_vm_readv, /proc/self/mem, "
    "ioctl buffers) can fail with EFAULT on a sampled page; masks or protections changed "
    "by raw system calls or siglongjmp/setcontext are seen late; a program reading "
    "/proc/self/maps sees the armed window. See docs/runtime.md.")

NAME = "record"
HELP = "run a program, recording its objects, access samples and memory counters"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from objtier.record.launch import ESCALATE_AFTER_S

    parser.epilog = (f"Ctrl-C reaches the program. If it ignores or blocks SIGINT, objtier says "
                     f"so, sends SIGTERM {ESCALATE_AFTER_S:g} s later and SIGKILL "
                     f"{ESCALATE_AFTER_S:g} s after that (each further Ctrl-C takes the next "
                     f"step at once); the trace keeps what the runtime had written. The "
                     f"recording directory is created mode 0700, its files 0600.")
    parser.add_argument("-o", "--output", default="run.otr",
                        help="recording directory to write (default: run.otr)")
    parser.add_argument("-f", "--force", action="store_true",
                        help="replace the output directory if it exists")
    parser.add_argument("--sampler", default="auto", choices=SAMPLERS,
                        help="access sampler (default auto: perf with PEBS/IBS, else pageout "
                        "with swap or as root (a temporary zram swap device), else perf "
                        "software page faults; fault is opt-in: it changes page protections "
                        "the program can notice)")
    parser.add_argument("--rate", type=B.int_option(1, B.RATE_MAX, "samples per second"),
                        default=2000,
                        help=f"most access samples per second (default 2000, 1 to {B.RATE_MAX})")
    parser.add_argument("--overhead", type=_overhead_option, default=OVERHEAD_DEFAULT,
                        metavar="PERCENT",
                        help=f"most the sampler may cost, in %% of the program's CPU time "
                        f"(default {OVERHEAD_DEFAULT:g}; 0 = no bound): the pageout sampler "
                        f"measures its own cost and lowers its rate below --rate to stay "
                        f"within it")
    parser.add_argument("--min-size", default="128K", type=B.bytes_option(1, B.BYTES_MAX // 2),
                        help="smallest allocation recorded as an object (default 128K)")
    parser.add_argument("--stack-depth", type=B.int_option(1, B.STACK_DEPTH_MAX, "frames"),
                        default=8,
                        help="frames per allocation context (default 8, at most 32)")
    parser.add_argument("--counters-interval", default=100, metavar="MS",
                        type=B.int_option(0, B.INTERVAL_MS_MAX, "ms (0 = off)"),
                        help="counters timeline period in milliseconds (default 100; 0 = off; "
                        f"at most {B.INTERVAL_MS_MAX})")
    parser.add_argument("--follow-forks", action="store_true",
                        help="also record child processes (fork and exec)")
    parser.add_argument("--trace-limit", type=B.int_option(0, B.BYTES_MAX // 2, "records"),
                        default=0, metavar="N",
                        help="--sampler trace: also write the first N accesses as a full "
                        "address trace (default 0)")
    parser.add_argument("--llc", default=None, metavar="SIZE,WAYS,LINE",
                        help="--sampler trace: last-level-cache model, e.g. 32M,16,64 "
                        "(default: this machine's LLC)")
    parser.add_argument("--with-perf", nargs="?", const="auto", default=None, metavar="EVENT",
                        help="also run the program under perf record -d and take perf's "
                        "samples as the recording's: EVENT mem (perf mem record), a perf "
                        "event name, or by default perf mem where the CPU has it, else "
                        "major faults (pageout sampler) or page faults (docs/runtime.md)")
    parser.add_argument("--sites", type=B.int_option(0, 256, "sites"), default=0, metavar="N",
                        help="serve the N largest small-block sites (of --sites-from RUN, else "
                        "learned from the first 4 MiB of small blocks) from arenas of their own "
                        "while recording, so that the pageout sampler samples their accesses "
                        "(objtier objects, plan --sites rank them by access; "
                        "docs/watched-sites.md)")
    parser.add_argument("--sites-from", default=None, metavar="RUN",
                        help="an earlier recording of the same program: where --sites finds "
                        "the largest sites")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="-- CMD [ARGS...]: the program to record")
    parser.epilog = FAULT_SAMPLER_NOTE


def run(args: argparse.Namespace) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    command = resolve_command(command)
    from objtier.record.sanitizers import sanitizer_of

    sanitizer = sanitizer_of(command[0])
    if sanitizer:
        raise UsageError(f"{command[0]} is built with {sanitizer}, whose runtime must be the "
                         f"first library loaded; objtier's preloaded runtime cannot come after "
                         f"it. Record a build without -fsanitize")
    from objtier.record.elfcheck import unrecordable

    problem = unrecordable(command[0])
    if problem:
        raise UsageError(f"cannot record: {problem}")
    perf = None
    if args.with_perf:
        from objtier.record.perf_source import PerfSource

        perf = PerfSource.choose(args.with_perf, args.sampler)
    damon = None
    if args.sampler == "damon":
        if perf:
            raise UsageError("--with-perf and --sampler damon are two sources of samples; "
                             "choose one")
        from objtier.record.damon_source import DamonSource

        damon = DamonSource.choose()   # refuses here, before the program runs
    sampler, reason = choose_sampler(perf.sampler if perf else args.sampler,
                                     transparent_default=True)
    settings = RecordSettings(sampler=sampler, rate=args.rate,
                              min_size=args.min_size,
                              stack_depth=args.stack_depth,
                              counters_interval_ms=args.counters_interval,
                              follow_forks=args.follow_forks,
                              trace_limit=args.trace_limit, llc=_parse_llc(args.llc),
                              extra_env={"OBJTIER_SAMPLER_REASON": _setting_text(reason),
                                         "OBJTIER_OVERHEAD_BP": str(round(args.overhead * 100))})
    settings.validate()
    output = Path(args.output)
    say = (lambda text: None) if args.quiet else (
        lambda text: print(f"objtier record: {text}", file=sys.stderr))
    say(f"sampler {sampler}: {reason}")
    from objtier.record.watch_sites import watched_sites

    with watched_sites(args.sites, args.sites_from, sampler, say) as watch_env:
        settings.extra_env.update(watch_env)   # the sites file lives while the program runs
        code = _record(args, command, settings, sampler, perf, output, say, damon)
    if args.sites:
        from objtier.record.watch_sites import say_watched

        say_watched(output, say)
    return code


def _record(args, command, settings, sampler, perf, output, say, damon=None) -> int:
    if perf:
        perf.settle(sampler, say)
    from objtier.record.launcher import ChildWatcher

    import resource

    stats: dict = {}
    with sampler_swap(sampler, say) as swap:
        with ChildWatcher() as watcher:   # record.launcher
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            try:
                returncode, elapsed = record_program(command, output, settings,
                                                     force=args.force, stats=stats,
                                                     launch=perf and perf.launch,
                                                     attach=damon and damon.attach)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)  # perf script not counted
            finally:
                swap.release()   # the program has ended: its swap is removed meanwhile
                if perf:
                    perf.finish(output, say)
                if damon:
                    damon.finish(output, say)
        program_cpu_s = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        summarize(output, elapsed, returncode, say, watcher.children, args.follow_forks,
                  cost=(stats.get("counters_cpu_s", 0.0), program_cpu_s))
    return exit_code(returncode)


def _overhead_option(text: str) -> float:
    """--overhead PERCENT: 0 (no bound) to 100, kept by the runtime in basis points."""
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage, got '{text}'") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be from 0 to 100 (% of the program's CPU "
                                         f"time), got {text}")
    return value


def _setting_text(text: str, limit: int = 255) -> str:
    """text cut to the runtime's field size in UTF-8 bytes (a longer value is refused)."""
    return text.encode()[:limit].decode("utf-8", "ignore")


def _parse_llc(text: str | None) -> tuple[int, int, int] | None:
    if text is None:
        return None
    parts = text.split(",")
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        raise UsageError(f"--llc takes SIZE,WAYS,LINE (e.g. 32M,16,64), got '{text}'")
    return (B.parse_bytes(parts[0], "--llc size", 1, B.LLC_BYTES_MAX),
            B.parse_int(parts[1], "--llc ways", 1, B.LLC_WAYS_MAX),
            B.parse_int(parts[2], "--llc line", 1, B.LLC_LINE_MAX, "bytes"))


def summarize(output: Path, elapsed: float, returncode: int, say,
              children: dict[int, str] | None = None, follow_forks: bool = False,
              cost: tuple[float, float] | None = None) -> None:
    """Read the trace back and print what it holds; with cost = (counters thread CPU s,
    program CPU s), end with the recorder's cost (objtier.record.cost)."""
    if returncode < 0:
        say(f"the program was killed by signal {-returncode}; the trace holds what was flushed")
    facts = _facts_light(output, children or {}, follow_forks, cost is not None)
    if facts is None:
        facts = _facts(output, children or {}, follow_forks, cost is not None, say)
        if facts is None:
            return
    size = sum(f.stat().st_size for f in output.glob("*.otr"))
    say(f"{facts.processes} process(es), {facts.objects} objects, {facts.samples} samples, "
        f"{facts.counter_values} counter values in {elapsed:.2f}s")
    if facts.access_counts:
        loads, stores, rows = facts.access_counts
        say(f"exact counts: {loads} loads, {stores} stores over "
            f"{rows} (object, context) pairs")
    from objtier.analysis.coverage import coverage_line

    for line in coverage_line(facts.coverage).splitlines():
        say(line)
    for warning in facts.warnings:
        say(f"warning: {warning}")
    if facts.hint:
        print(f"objtier record: warning: {facts.hint}", file=sys.stderr)   # even with --quiet
    if not facts.processes:
        say("warning: the runtime wrote no process trace (is the program statically linked, "
            "or setuid?)")
    say(f"trace written to {output}/ ({format_bytes(size)})")
    if cost is not None:
        from objtier.record.cost import cost_line

        say(cost_line(facts.cost, *cost))


@dataclass
class _Facts:
    """What the summary says about a recording."""

    processes: int
    objects: int
    samples: int
    counter_values: int
    access_counts: tuple[int, int, int] | None  # loads, stores, (object, context) pairs
    coverage: object                            # analysis.coverage.Coverage
    warnings: list[str]
    hint: str | None                            # record.launcher: looks like a launcher
    cost: object                                # record.cost.RecorderCost (if asked)


def _facts_light(output: Path, children: dict[int, str], follow_forks: bool,
                 with_cost: bool) -> _Facts | None:
    """The facts from the plain-Python reader (objtier.trace.light), which spares the
    columnar reader's imports; None when the recording needs the columnar reader."""
    from objtier.analysis.coverage import coverage_light
    from objtier.record.cost import recorder_cost_light
    from objtier.record.launcher import launcher_hint_of
    from objtier.trace.light import LightTrace, Unsupported

    try:
        trace = LightTrace(output)
        access = trace.access_counts()
        hint = None if follow_forks else launcher_hint_of(
            trace.processes, {a[0] for a in trace.allocations}, children)
        return _Facts(len(trace.processes), trace.objects, trace.samples, trace.counter_values,
                      access if access[2] else None, coverage_light(trace), trace.warnings,
                      hint, recorder_cost_light(trace) if with_cost else None)
    except Unsupported:
        return None


def _facts(output: Path, children: dict[int, str], follow_forks: bool, with_cost: bool,
           say) -> _Facts | None:
    """The facts from the columnar reader; None (said) when no readable trace was written."""
    from objtier.analysis.coverage import coverage
    from objtier.errors import TraceError
    from objtier.record.cost import recorder_cost
    from objtier.record.launcher import launcher_hint
    from objtier.trace import open_trace

    try:
        trace = open_trace(output)
    except TraceError as error:
        say(f"no readable trace was written ({error})")
        return None
    access = None
    if trace.access_counts.num_rows:
        counts = trace.access_counts
        access = (sum(counts.column("loads").to_pylist()),
                  sum(counts.column("stores").to_pylist()), counts.num_rows)
    return _Facts(len(trace.processes), trace.allocations.num_rows, trace.samples.num_rows,
                  trace.counters.num_rows, access, coverage(trace), trace.warnings,
                  launcher_hint(trace, children, follow_forks),
                  recorder_cost(trace) if with_cost else None)
