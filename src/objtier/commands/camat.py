"""`objtier camat`: the C-AMAT model of memory performance (Sun & Wang), per cache level, per
object and per code region, from the timing model over an exact access stream (--source sim) or
from hardware counters (--source pmu)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from objtier.errors import UsageError

NAME = "camat"
HELP = "C-AMAT per cache level, object and code region (timing model or PMU counters)"
DEFAULT_STREAM = 5_000_000
DEFAULT_WINDOW = 32_768  # accesses per window: a unit of 10 000 and ~10 000 of warming before it


_PARSER: list[argparse.ArgumentParser] = []  # for options given after RECORDING


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from objtier.camat.model import DEFAULT_PRESET, DEFAULT_UNIT, PRESETS

    _PARSER[:] = [parser]

    parser.add_argument("--source", choices=("sim", "pmu"), default="sim",
                        help="sim: timing model over the recording's access stream (default); "
                             "pmu: hardware counters while running -- CMD")
    parser.add_argument("--local", metavar="X%",
                        help="sim: main memory as a local buffer of X %% of the footprint in "
                             "front of a far level (Xmem(X %%))")
    parser.add_argument("--fill", choices=("lru", "objects"), default="lru",
                        help="--local: fill the buffer by page LRU (default) or with the "
                             "objects densest in memory accesses first, the rest LRU")
    parser.add_argument("--regions", action="store_true",
                        help="print the per-code-region table (functions), with false sharing")
    parser.add_argument("--preset", default=DEFAULT_PRESET, choices=sorted(PRESETS),
                        help=f"sim: cache hierarchy (default {DEFAULT_PRESET})")
    parser.add_argument("--far-cycles", type=int, metavar="N",
                        help="sim, --local: far-level latency in cycles (default 9000)")
    parser.add_argument("--sample", type=int, default=0, metavar="PERIOD",
                        help="sim: sampled timing, one timed unit per PERIOD accesses (every "
                             "access still goes through the caches: accesses and misses stay "
                             "exact, cycle terms are estimated); 0 = every access timed "
                             "(default)")
    parser.add_argument("--sample-unit", type=int, metavar="U",
                        help=f"--sample: measured accesses per unit (default {DEFAULT_UNIT})")
    parser.add_argument("--sample-warm", type=int, metavar="W",
                        help="--sample: timed, uncounted accesses before and after each unit "
                             "(default: twice the preset's out-of-order window, at least 500)")
    parser.add_argument("--stream", type=int, default=DEFAULT_STREAM, metavar="N",
                        help=f"-- CMD, sim: accesses recorded in order, at most (default "
                             f"{DEFAULT_STREAM:,})")
    parser.add_argument("--window", type=int, default=DEFAULT_WINDOW, metavar="B",
                        help=f"-- CMD, sim: record windows of B accesses spread over the whole "
                             f"run, one timed unit in each (default {DEFAULT_WINDOW:,}); 0 = "
                             "the first --stream accesses, every one timed")
    parser.add_argument("--min-size", default="64", metavar="SIZE",
                        help="-- CMD, sim: smallest allocation recorded as an object (default 64)")
    parser.add_argument("-o", "--output", metavar="DIR",
                        help="write camat.json and CSV/Parquet tables (and, for -- CMD, the "
                             "recording run.otr/) into DIR")
    parser.add_argument("-f", "--force", action="store_true",
                        help="-- CMD with -o DIR: replace the recording DIR/run.otr/ left by an "
                             "earlier camat run")
    parser.add_argument("target", nargs=argparse.REMAINDER,
                        help="RECORDING (a run.otr/ with an access stream), or -- CMD [ARGS...]")


def _percent(text: str) -> float:
    value = text.strip().rstrip("%").strip()
    try:
        pct = float(value)
    except ValueError:
        raise UsageError(f"--local takes a percentage such as 25%, got {text!r}") from None
    if not 0 < pct <= 100:
        raise UsageError(f"--local must be in (0, 100] %, got {text!r}")
    return pct


def _target(args) -> tuple[Path | None, list[str]]:
    target = list(args.target)
    if target[:1] == ["--"]:
        if len(target) < 2:
            raise UsageError("-- needs a command to run")
        return None, target[1:]
    if not target:
        raise UsageError("give one RECORDING, or -- CMD [ARGS...]")
    if len(target) > 1 and _PARSER:  # options after the recording: parse them too
        _PARSER[0].parse_args(target[1:], namespace=args)
        if args.target:
            raise UsageError("give one RECORDING, or -- CMD [ARGS...]")
    return Path(target[0]), []


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    recording, command = _target(args)
    local = _percent(args.local) if args.local is not None else None
    if args.stream < 1:
        raise UsageError(f"--stream must be at least 1, got {args.stream}")
    if args.far_cycles is not None and not 1 <= args.far_cycles <= 10_000_000:
        raise UsageError(f"--far-cycles must be in 1..10000000, got {args.far_cycles}")
    if args.sample < 0:
        raise UsageError(f"--sample must be 0 (every access timed) or a period of accesses, "
                         f"got {args.sample}")
    if args.window < 0:
        raise UsageError(f"--window must be 0 (the first --stream accesses) or a number of "
                         f"accesses, got {args.window}")
    if (command and args.window == 0 and not args.sample
            and (args.sample_unit is not None or args.sample_warm is not None)):
        raise UsageError("--sample-unit and --sample-warm need --sample PERIOD (or a stream "
                         "in windows, the default)")
    if args.sample and args.source == "pmu":
        raise UsageError("--sample applies to the timing model (--source sim)")
    out = Path(args.output) if args.output else None
    console = Console() if sys.stdout.isatty() else Console(width=170)
    if args.source == "pmu":
        return _run_pmu(args, recording, command, out, console, local)
    if command:
        from objtier.record.launch import exit_code

        with tempfile.TemporaryDirectory(prefix="objtier-camat-") as tmp:
            where = (out / "run.otr") if out else Path(tmp) / "run.otr"
            if out:
                from objtier.camat.output import private_dir

                private_dir(out)
            returncode = _record(command, where, args)
            if returncode != 0:
                print(f"objtier camat: the program exited with status {exit_code(returncode)}; "
                      "no report", file=sys.stderr)
                return exit_code(returncode)
            return _report(where, args, out, console, local)
    return _report(recording, args, out, console, local)


def _record(command: list[str], where: Path, args) -> int:
    from objtier.record.launch import resolve_command
    from objtier.record.session import RecordSettings, record_program
    from objtier.units import parse_size

    settings = RecordSettings(sampler="trace", min_size=parse_size(args.min_size, "--min-size"),
                              counters_interval_ms=0,
                              extra_env={"OBJTIER_TRACE_STREAM": str(args.stream),
                                         "OBJTIER_TRACE_STREAM_WINDOW": str(args.window)})
    returncode, _ = record_program(resolve_command(command), where, settings,
                                   force=bool(getattr(args, "force", False)))
    return returncode


def _record_regions(command: list[str], where: Path, spec: str, force: bool = False) -> int:
    """Run command under the runtime (no sampler) with counters read at its phase markers."""
    from objtier.record.session import RecordSettings, record_program

    settings = RecordSettings(sampler="none", counters_interval_ms=0,
                              extra_env={"OBJTIER_REGION_PMU": spec})
    returncode, _ = record_program(command, where, settings, force=force)
    return returncode


def _report(recording: Path, args, out: Path | None, console, local: float | None) -> int:
    from dataclasses import replace

    from objtier.camat.analyze import findings, report, run_model, window_sampling
    from objtier.camat.model import hierarchy
    from objtier.camat.output import print_tables, write_outputs
    from objtier.camat.stream import load_stream
    from objtier.trace import open_trace

    hier = hierarchy(args.preset)
    if args.far_cycles is not None:
        hier = replace(hier, far_cycles=args.far_cycles)
    sample = _sampling(args, hier)  # --sample PERIOD checked before the recording is read
    stream = load_stream(open_trace(recording))
    if stream.coverage["mode"] == "windows":
        if sample:
            raise UsageError("the recording's stream is windows spread over the run: each "
                             "window is one timed unit, so --sample does not apply "
                             "(--sample-unit and --sample-warm do)")
        sample, hier = window_sampling(stream, hier, args.sample_unit, args.sample_warm)
    elif not sample and (args.sample_unit is not None or args.sample_warm is not None):
        raise UsageError("--sample-unit and --sample-warm need --sample PERIOD (or a stream "
                         "in windows)")
    counts, params = run_model(stream, hier, local, args.fill, sample)
    doc = report(stream, counts, params)
    doc["recording"] = str(recording)
    doc["findings"] = findings(doc)
    print_tables(doc, console, regions=args.regions)
    from objtier.camat.coverage import warning

    cut = warning(stream.coverage)
    if cut:
        print(f"objtier camat: warning: {cut}", file=sys.stderr)
    if out:
        for path in write_outputs(doc, out):
            print(f"objtier camat: wrote {path}", file=sys.stderr)
    return 0


def _sampling(args, hier):
    """The Sampling of --sample (checked: one-line errors), or None for exact timing."""
    if not args.sample:
        return None
    from objtier.camat.model import DEFAULT_UNIT, Sampling, default_warm

    unit = DEFAULT_UNIT if args.sample_unit is None else args.sample_unit
    warm = default_warm(hier) if args.sample_warm is None else args.sample_warm
    sample = Sampling(args.sample, unit, warm)
    sample.check()
    return sample


def _run_pmu(args, recording, command, out, console, local) -> int:
    from objtier.camat import pmu, pmu_regions
    from objtier.camat.analyze import machine_info
    from objtier.camat.output import print_tables, write_outputs
    from objtier.record.launch import exit_code, resolve_command, run_program

    if not command:
        raise UsageError("--source pmu runs a program: give -- CMD [ARGS...], not a recording")
    if local is not None:
        raise UsageError("--local with --source pmu needs the swap tier; use --source sim, or "
                         "bench/camat_xmem.py for the measured swap-tier sweep")
    family = pmu.cpu_family(pmu.read_cpuinfo())
    events = pmu.events_for(family)
    import os

    with tempfile.TemporaryDirectory(prefix="objtier-camat-") as tmp:
        where = (out / "run.otr") if out else Path(tmp) / "run.otr"
        if args.regions:  # under the runtime: counters read at the phase markers too
            if out:
                from objtier.camat.output import private_dir

                private_dir(out)

            def run(c, e):
                return _record_regions(c, where, pmu_regions.region_spec(events),
                                       bool(args.force))
        else:
            def run(c, e):
                return run_program(c, e)

        returncode, counts = pmu.measure(resolve_command(command), dict(os.environ), events, run)
        if returncode != 0:
            print(f"objtier camat: the program exited with status {exit_code(returncode)}",
                  file=sys.stderr)
        regions = []
        if args.regions:
            from objtier.trace import open_trace

            regions = pmu_regions.region_rows(pmu_regions.region_counts(open_trace(where), events),
                                              list(events))
    import objtier

    doc = {"tool": "objtier camat", "tool_version": objtier.__version__,
           "machine": machine_info(), **pmu.pmu_report(counts, family, events)}
    doc["regions"] = regions
    print_tables(doc, console, regions=args.regions)
    if out:
        for path in write_outputs(doc, out):
            print(f"objtier camat: wrote {path}", file=sys.stderr)
    return exit_code(returncode)
