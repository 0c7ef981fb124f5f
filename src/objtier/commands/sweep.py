"""`objtier sweep`: how sensitive a program is to slower memory (T90/T75/T50 per knob).

Five subcommands, one job each (docs/sweep.md):

    sweep knob --knob KNOB=LEVELS [...] -- CMD      one program over one knob's levels
    sweep sim --knob sim=LEVELS --recording RUN.otr  the same, predicted by the simulator
    sweep per-object --recording RUN.otr -- CMD     only one object slow at a time
    sweep calibrate --knob KNOB=LEVELS              the levels in GB/s and ns (STREAM, ptrchase)
    sweep suite FILE --knob KNOB=LEVELS             every program of FILE, ranked

The spelling of earlier releases (`sweep --knob ...`, `--per-object RUN.otr`, `--calibrate`,
`--suite FILE`, `--higher-is-better`/`--lower-is-better`) still works for this release: it is
rewritten to the subcommand by rewrite_argv, and a one-line note names the new spelling.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from objtier.commands import _swap_options as swap_options
from objtier.errors import UsageError

NAME = "sweep"
HELP = ("run a program at increasing levels of memory slowdown and report where its figure of "
        "merit falls below 90, 75 and 50 percent of its best (T90/T75/T50)")
SUBCOMMANDS = ("knob", "sim", "per-object", "calibrate", "suite")
KNOB_HELP = ("local=100,75,50 (%% of the footprint in memory, swap behind; root), threads=1,2, "
             "bandit=0,50,100 (co-running load, %% of time), mba=100:10:-10 (resctrl), "
             "slow-share=0,50,100 (%% of pages on the slow NUMA node)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="sweep_command", metavar="SUBCOMMAND", required=True)
    knob = sub.add_parser("knob", help="one program over the levels of one knob",
                          description="Run CMD at each level of KNOB and report T90/T75/T50.")
    knob.add_argument("--knob", metavar="KNOB=LEVELS", required=True, help=KNOB_HELP)
    _add_repeat(knob)
    _add_fom(knob)
    _add_series(knob)
    _add_knob_settings(knob)
    _add_calibration(knob)
    _add_output(knob, resume=True)
    _add_command(knob, "the program to sweep")

    sim = sub.add_parser("sim", help="a predicted sweep: the simulator over a recording, the "
                         "slow tier m times slower per level (no program is run)",
                         description="Predict the sensitivity curve of a recording.")
    sim.add_argument("--knob", metavar="sim=LEVELS", required=True,
                     help="sim=1,2,4,8: slow-tier multipliers (the levels)")
    sim.add_argument("--recording", metavar="RUN.otr", required=True,
                     help="the recording to simulate")
    sim.add_argument("--sim-preset", default="cxl", metavar="NAME|FILE.toml",
                     help="cost preset whose slow tier the levels multiply (cxl)")
    sim.add_argument("--sim-fast", default="50%", metavar="SIZE|PCT",
                     help="fast-tier capacity (50%% of the peak live footprint)")
    _add_output(sim, resume=False)

    per = sub.add_parser("per-object", help="one arm per object with >= 1%% of the accesses, "
                         "only that object slow: FoM ratio per object, most sensitive first",
                         description="Measure how sensitive CMD is to each object being slow.")
    per.add_argument("--recording", metavar="RUN.otr", required=True,
                     help="a recording of CMD (its objects and their accesses)")
    per.add_argument("--repeat", type=int, default=10, metavar="N", help="runs per arm (10)")
    _add_fom(per)
    per.add_argument("--tier", default="swap", choices=["swap", "numa"],
                     help="where the object under test is slow: swap (cgroup + swap, the "
                     "default; root) or numa (bound to the slow node with mbind; needs a slow "
                     "NUMA node)")
    swap_options.add_nodes(per)
    per.add_argument("--pairs", type=int, default=0, metavar="N",
                     help="also run every pair of the N most accessed objects slow together, "
                     "and predict combined placements with the pairwise model (default 0: the "
                     "multiplicative model, no pair runs)")
    per.add_argument("--stack-depth", type=int, default=None,
                     help="frames per allocation context; must equal the recording's "
                     "(default: the recording's)")
    _add_timeout(per)
    swap_options.add_swap_device(per)
    _add_output(per, resume=False)
    _add_command(per, "the program the recording was made of")

    cal = sub.add_parser("calibrate", help="measure what each level does to bandwidth (STREAM, "
                         "GB/s) and latency (ptrchase, ns); no CMD",
                         description="Calibrate a knob's levels in GB/s and ns.")
    cal.add_argument("--knob", metavar="KNOB=LEVELS", required=True, help=KNOB_HELP)
    _add_repeat(cal)
    cal.add_argument("--threads", metavar="LIST",
                     help="thread counts to calibrate at (default 1 and all CPUs)")
    cal.add_argument("--calibrate-stream", type=int, metavar="N",
                     help="STREAM's elements per array (4000000: 3 x 30.5 MiB)")
    cal.add_argument("--calibrate-chase", metavar="SIZE", help="ptrchase's buffer (128M)")
    _add_timeout(cal)
    _add_knob_settings(cal)
    _add_output(cal, resume=False)

    suite = sub.add_parser("suite", help="sweep every command of FILE and rank them by "
                           "sensitivity (the seed's Table I)",
                           description="Sweep a suite of programs over one knob.")
    suite.add_argument("suite", metavar="FILE",
                       help="one command per line, optional 'NAME: ' prefix")
    suite.add_argument("--knob", metavar="KNOB=LEVELS", required=True, help=KNOB_HELP)
    _add_repeat(suite)
    _add_fom(suite)
    _add_series(suite)
    _add_knob_settings(suite)
    _add_calibration(suite)
    _add_output(suite, resume=True)


def _add_repeat(parser) -> None:
    parser.add_argument("--repeat", type=_repeat, default=10, metavar="N|auto",
                        help="runs per level (10); auto: start with 3 and add runs where a "
                        "threshold is not resolved (noise), up to --max-repeat")
    parser.add_argument("--max-repeat", type=int, default=None, metavar="N",
                        help="--repeat auto: at most N runs per level (20)")


def _add_fom(parser) -> None:
    fom = parser.add_mutually_exclusive_group()
    fom.add_argument("--fom", metavar="REGEX",
                     help="figure of merit: first capture group of REGEX on stdout (last "
                     "match); default: the `FOM name=value unit` line objtier's workloads print")
    fom.add_argument("--time", action="store_true",
                     help="figure of merit: the run's wall time (lower is better)")
    parser.add_argument("--better", choices=("higher", "lower"), default=None,
                        help="which FoM is better: higher (the default, except with --time) "
                        "or lower (the default with --time)")


def _add_series(parser) -> None:
    parser.add_argument("--threads", metavar="LIST",
                        help="also sweep thread counts (1,2,4): OMP_NUM_THREADS and every "
                        "{threads} in the command; one series and one set of thresholds each")
    parser.add_argument("--bisect", action="store_true",
                        help="run only the levels a binary search for T90/T75/T50 needs (the "
                        "first, the last, then midpoints; assumes the FoM does not recover "
                        "with more throttling)")
    _add_timeout(parser)


def _add_timeout(parser) -> None:
    parser.add_argument("--timeout", type=float, default=None, metavar="S",
                        help="kill a run after S seconds (a failed data point; default: "
                        "max(60, 30 x the first run))")


def _add_knob_settings(parser) -> None:
    """What the knobs that run the program need: local's swap and stat-flush reader (the
    swap tier's options, shared with run and compare), bandit's co-runner, mba's resctrl."""
    swap_options.add_swap_device(parser)
    parser.add_argument("--bandit-threads", type=int, default=1, metavar="N",
                        help="bandit: co-runner threads (1)")
    parser.add_argument("--bandit-mode", default="stream", choices=["stream", "chase"],
                        help="bandit: bandwidth (stream) or latency (chase) load")
    parser.add_argument("--bandit-size", default="64M", metavar="SIZE",
                        help="bandit: buffer per co-runner thread (64M)")
    parser.add_argument("--resctrl-root", default="/sys/fs/resctrl", metavar="DIR",
                        help="mba: the resctrl mount (default /sys/fs/resctrl)")
    swap_options.add_stat_flush(swap_options.experiment_controls(parser))


def _add_calibration(parser) -> None:
    parser.add_argument("--calibration", metavar="FILE",
                        help="a calibration.json of `sweep calibrate`: state the thresholds in "
                        "GB/s and ns too")


def _add_output(parser, resume: bool) -> None:
    parser.add_argument("-o", "--output", default="sweep-out",
                        help="output directory (default sweep-out)")
    parser.add_argument("-f", "--force", action="store_true",
                        help="replace an earlier sweep in the output directory")
    if resume:
        parser.add_argument("--resume", action="store_true",
                            help="continue the sweep in the output directory (same knob, "
                            "levels and repeat): only the missing runs are made")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress, only tables")


def _add_command(parser, what: str) -> None:
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help=f"-- CMD [ARGS...]: {what}")


# ---- the spelling of earlier releases ----------------------------------------------------

# per-object options the old one-command spelling refused without --per-object
_PER_OBJECT_ONLY = ("--pairs", "--tier", "--fast-nodes", "--slow-nodes", "--stack-depth")
_NOTES: list[str] = []   # deprecation notes, printed once the sweep has run


def rewrite_argv(words: list[str]) -> list[str]:
    """The words after `sweep` in this release's spelling: `sweep --knob ...` becomes
    `sweep knob --knob ...`, `--per-object RUN.otr` `per-object --recording RUN.otr`,
    `--calibrate` `calibrate`, `--suite FILE` `suite FILE`, `--knob sim=...` `sim`, and
    `--higher-is-better`/`--lower-is-better` `--better higher|lower`; each rewrite leaves a
    note (printed after the sweep, so that a refusal stays one line)."""
    _NOTES.clear()   # one command line, one set of notes
    cut = words.index("--") if "--" in words else len(words)
    head, tail = list(words[:cut]), list(words[cut:])
    for old, new in (("--higher-is-better", ["--better", "higher"]),
                     ("--lower-is-better", ["--better", "lower"])):
        if old in head:
            i = head.index(old)
            head[i:i + 1] = new
            _NOTES.append(f"{old} is now --better {new[1]}")
    if head[:1] == ["per-object"]:
        return ["per-object"] + swap_options.rewrite_nodes(head[1:] + tail, _NOTES)
    if not head or head[0] in SUBCOMMANDS or not head[0].startswith("-") \
            or head[0] in ("-h", "--help"):
        return head + tail

    def pop(flag: str, value: bool) -> str | None:
        for i, word in enumerate(head):
            if word == flag or (value and word.startswith(flag + "=")):
                if "=" in word:
                    found = word.partition("=")[2]
                    del head[i]
                elif value:
                    if i + 1 >= len(head):
                        raise UsageError(f"argument {flag}: expected one argument")
                    found = head[i + 1]
                    del head[i:i + 2]
                else:
                    found = ""
                    del head[i]
                return found
        return None

    recording = pop("--per-object", True)
    if recording is not None:
        _NOTES.append("`sweep --per-object RUN.otr` is now `sweep per-object --recording "
                      "RUN.otr`")
        if any(w in ("--knob", "--suite", "--threads") or w.startswith(("--knob=", "--suite=",
                                                                         "--threads="))
               for w in head):
            raise UsageError("--per-object runs on its own: no --knob, --suite or --threads")
        return ["per-object"] + swap_options.rewrite_nodes(["--recording", recording] + head
                                                           + tail, _NOTES)
    given = [flag for flag in _PER_OBJECT_ONLY
             if any(w == flag or w.startswith(flag + "=") for w in head)]
    if given:
        raise UsageError(f"{', '.join(given)}: only with --per-object RECORDING")
    if pop("--calibrate", False) is not None:
        _NOTES.append("`sweep --calibrate` is now `sweep calibrate`")
        return ["calibrate"] + head + ([] if tail == ["--"] else tail)
    suite = pop("--suite", True)
    if suite is not None:
        _NOTES.append("`sweep --suite FILE` is now `sweep suite FILE`")
        if tail not in ([], ["--"]):
            raise UsageError("--suite takes its commands from FILE, not after --")
        return ["suite", suite] + head
    knob = next((head[i + 1] for i, w in enumerate(head[:-1]) if w == "--knob"), "")
    knob = knob or next((w.partition("=")[2] for w in head if w.startswith("--knob=")), "")
    if knob.startswith("sim="):
        _NOTES.append("`sweep --knob sim=...` is now `sweep sim --knob sim=...`")
        return ["sim"] + head + ([] if tail == ["--"] else tail)
    _NOTES.append("`sweep --knob ...` is now `sweep knob --knob ...`")
    return ["knob"] + head + tail


def _say_notes() -> None:
    for note in dict.fromkeys(_NOTES):
        sys.stderr.write(f"objtier sweep: note: {note}; the old spelling goes in the next "
                         f"release\n")
    _NOTES.clear()


def _repeat(text: str) -> int | str:
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number or auto, got {text!r}") \
            from None


def _command(args: argparse.Namespace) -> list[str]:
    from objtier.record.launch import resolve_command

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    return resolve_command(command)


# what a subcommand without the option reads (argparse sets only its own subcommand's)
_ABSENT = {"fom": None, "time": False, "better": None, "threads": None, "bisect": False,
           "timeout": None, "swap": swap_options.DEFAULT_SWAP, "bandit_threads": 1,
           "bandit_mode": "stream", "bandit_size": "64M", "resctrl_root": "/sys/fs/resctrl",
           "recording": None, "sim_preset": "cxl", "sim_fast": "50%", "calibration": None,
           "resume": False, "stat_flush": None, "max_repeat": None, "command": [], "repeat": 1}


def knob_from_args(args: argparse.Namespace):
    from objtier.sweep.knobs import KnobOptions, make_knob
    from objtier.sweep.levels import parse_knob, parse_levels

    name, text = parse_knob(args.knob)
    if (name == "sim") != (args.sweep_command == "sim"):
        raise UsageError("the sim knob is `sweep sim --knob sim=LEVELS --recording RUN.otr`"
                         if name == "sim" else f"sweep sim takes --knob sim=LEVELS, not {name}")
    levels = parse_levels(text, name)
    options = KnobOptions(swap=args.swap, bandit_threads=args.bandit_threads,
                          bandit_mode=args.bandit_mode, bandit_size=args.bandit_size,
                          resctrl_root=Path(args.resctrl_root),
                          recording=Path(args.recording) if args.recording else None,
                          sim_preset=args.sim_preset, sim_fast=args.sim_fast,
                          stat_flush_ms=swap_options.stat_flush_period(args))
    return make_knob(name, levels, options)


def run(args: argparse.Namespace) -> int:
    for key, value in _ABSENT.items():
        if not hasattr(args, key):
            setattr(args, key, value)
    code = _run(args)
    _say_notes()
    return code


def _run(args: argparse.Namespace) -> int:
    from objtier.console import make_console
    from objtier.sweep.fom import make_source
    from objtier.sweep.levels import parse_int_list
    from objtier.sweep.output import print_tables
    from objtier.sweep.runner import AUTO_MAX, AUTO_START, SweepSettings
    from objtier.tiers.statflush import check_period

    auto = args.repeat == "auto"
    if args.max_repeat is not None and not auto:
        raise UsageError("--max-repeat: only with --repeat auto")
    if auto:
        max_repeat = AUTO_MAX if args.max_repeat is None else args.max_repeat
        if max_repeat < AUTO_START:
            raise UsageError(f"--max-repeat must be at least {AUTO_START} (the runs --repeat "
                             f"auto starts with), got {max_repeat}")
        args.repeat = AUTO_START
    elif args.repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {args.repeat}")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError(f"--timeout must be positive, got {args.timeout}")
    if args.stat_flush is not None:
        check_period(args.stat_flush)
    if args.force and args.resume:
        raise UsageError("--force and --resume exclude each other")
    higher = None if args.better is None else args.better == "higher"
    fom = make_source(args.fom, args.time, higher)
    if args.sweep_command == "per-object":
        return _run_per_object(args, fom)
    threads = parse_int_list(args.threads, "--threads") if args.threads else None
    knob = knob_from_args(args)
    if threads and knob.name == "threads":
        raise UsageError("--threads with --knob threads: sweep threads once")
    if auto and args.bisect:
        raise UsageError("--bisect picks its levels from the first runs' medians: use a fixed "
                         "--repeat with it, not --repeat auto")
    settings = SweepSettings(repeat=args.repeat, fom=fom, threads=threads,
                             output=Path(args.output), timeout_s=args.timeout,
                             force=args.force, resume=args.resume, bisect=args.bisect,
                             auto=auto, max_repeat=max_repeat if auto else AUTO_MAX)
    console = make_console()
    err = make_console(stderr=True)
    if args.sweep_command == "calibrate":
        return _run_calibrate(args, settings, console, err)
    calibration = None
    if args.calibration:
        from objtier.sweep.calibrate import load_calibration

        calibration = load_calibration(Path(args.calibration))
    if args.sweep_command == "suite":
        return _run_suite(args, settings, console, err, calibration)
    if knob.kind == "simulated":
        from objtier.sweep.simknob import run_simulated

        outcome = run_simulated(knob, settings, lambda text: None if args.quiet else
                                err.print(f"objtier sweep: {text}"))
    else:
        command = _command(args)
        outcome = _run_with_progress(command, knob, settings, args.quiet, err)
    if calibration is not None:
        _add_units(outcome.document, calibration, settings.output, console)
    print_tables(console, outcome.document, outcome.metrics)
    out = settings.output
    console.print(f"wrote {out / 'sweep.json'}, {out / 'sweep.csv'}, {out / 'sweep.parquet'}, "
                  f"{out / 'sweep.png'} and {out / 'sweep.html'}")
    failed = sum(r.fom is None for r in outcome.records)
    if failed:
        sys.stderr.write(f"objtier sweep: warning: {failed} of {len(outcome.records)} run(s) "
                         f"failed; they count as the worst FoM in their level's median\n")
    return 0


def _run_with_progress(command, knob, settings, quiet, err):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, \
        TimeElapsedColumn

    from objtier.sweep.runner import run_sweep

    def say(text: str) -> None:
        if not quiet:
            err.print(f"objtier sweep: {text}")

    if quiet:
        return run_sweep(command, knob, settings, say)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=True) as progress:
        task = progress.add_task("sweep", total=None)

        def on_record(record, index, total):
            progress.update(task, total=total, completed=index,
                            description=f"{knob.name} {record.label} #{record.repeat}: "
                                        f"{record.status}")

        return run_sweep(command, knob, settings, say, on_record)


def _run_suite(args, settings, console, err, calibration=None) -> int:
    from rich.table import Table

    from objtier.sweep.suite import load_suite, run_suite

    entries = load_suite(Path(args.suite))

    def say(text: str) -> None:
        if not args.quiet:
            err.print(f"objtier sweep: {text}")

    def one(command, knob, sub_settings):
        outcome = _run_with_progress(command, knob, sub_settings, args.quiet, err)
        if calibration is not None:          # each program's thresholds in GB/s and ns too
            _add_units(outcome.document, calibration, sub_settings.output, console)
        return outcome

    rows, out = run_suite(entries, lambda: knob_from_args(args), settings, say, one)
    table = Table(title=f"objtier sweep suite: {args.knob}, most sensitive first")
    for name in ("program", "max avg FoM", "T50", "T75", "T90", "warnings"):
        table.add_column(name, justify="left" if name == "program" else "right")
    for r in rows:
        if r["error"]:
            table.add_row(r["program"], f"failed: {r['error']}", "", "", "", "")
        else:
            table.add_row(r["program"], f"{r['baseline']:.4g} {r['unit'] or ''}".strip(),
                          r["T50"], r["T75"], r["T90"], str(r["warnings"] or ""))
    console.print(table)
    console.print(f"wrote {out / 'suite.json'}, {out / 'suite.csv'} and {out / 'suite.md'}")
    return 0 if any(not r["error"] for r in rows) else 1


def _run_per_object(args, fom) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, \
        TimeElapsedColumn
    from rich.table import Table

    from objtier.console import make_console
    from objtier.sweep.perobject import PerObjectSettings, run_per_object

    swap_options.read_nodes(args)
    if args.tier != "numa" and args.nodes is not None:
        raise UsageError("--nodes needs --tier numa")
    if args.pairs < 0 or args.pairs == 1 or args.pairs > 8:
        raise UsageError(f"--pairs must be 0 or between 2 and 8, got {args.pairs}")
    if args.stack_depth is not None and not 1 <= args.stack_depth <= 32:
        raise UsageError(f"--stack-depth must be between 1 and 32, got {args.stack_depth}")
    recording = Path(args.recording)
    if not recording.exists():
        raise UsageError(f"--recording: no recording at {recording}")
    stack_depth = args.stack_depth or _recorded_stack_depth(recording)
    command = _command(args)
    settings = PerObjectSettings(recording=recording, repeat=args.repeat,
                                 stack_depth=stack_depth, swap=args.swap,
                                 timeout_s=args.timeout, output=Path(args.output),
                                 force=args.force, pairs=args.pairs, tier=args.tier,
                                 fast_nodes=args.fast_nodes, slow_nodes=args.slow_nodes)
    console, err = make_console(), make_console(stderr=True)

    def say(text: str) -> None:
        if not args.quiet:
            err.print(f"objtier sweep: {text}")

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=True,
                  disable=args.quiet) as progress:
        task = progress.add_task("per-object", total=None)
        doc = run_per_object(command, settings, fom, say, lambda i, n, label: progress.update(
            task, total=n, completed=i, description=f"{label[:40]}"))
    table = Table(title=f"objtier sweep per-object ({doc['tier']} tier): only this object "
                  f"slow, most sensitive first")
    for name in ("object", "size MiB", "accesses %", "runs ok", "median FoM", "ratio",
                 "loss/MiB", "room"):
        table.add_column(name, justify="left" if name == "object" else "right")
    for row in doc["objects"]:
        table.add_row(row["object"][:60], f"{row['size'] / 2**20:.1f}",
                      f"{100 * row['access_share']:.1f}", _runs_ok(row),
                      "-" if row["median_fom"] is None else f"{row['median_fom']:.4g}",
                      row["result_text"], _loss_per_mib(row),
                      f"{100 * row['room_share']:.0f}%")
    console.print(table)
    for pair in doc.get("pairs") or []:
        console.print(f"pair slow: {' + '.join(o[:40] for o in pair['objects'])}: ratio "
                      f"{pair['result_text']}")
    bounds = [row for row in doc["objects"] + (doc.get("pairs") or [])
              if row["result"] == "bound"]
    if bounds:
        err.print(f"[yellow]warning:[/yellow] {len(bounds)} arm(s) ran into the timeout "
                  f"({doc.get('timeout_s') or '?'} s): their rows are bounds in wall time "
                  f"(≥ N× slower than all fast), not measurements; a longer --timeout "
                  f"measures them")
    lost = [row for row in doc["objects"] + (doc.get("pairs") or [])
            if row["result"] in ("killed", "failed")]
    if lost:
        err.print(f"[yellow]warning:[/yellow] {len(lost)} arm(s) were killed or failed in most "
                  f"runs: they have no ratio and no bound (see sweep.csv)")
    small = [row["object"] for row in doc["objects"] if row["room_share"] >= 0.25]
    if small:
        err.print(f"[yellow]warning:[/yellow] {len(small)} object(s) are at most 4x the 4 MiB "
                  f"the runtime leaves unlocked (room >= 25%): much of them stays resident, so "
                  f"their ratios understate their sensitivity")
    console.print(f"predicted FoM ({doc['model']} model) by fraction of bytes fast: " + ", ".join(
        f"{100 * p['fast_fraction']:.0f}% -> {'≤ ' if p.get('upper_bound') else ''}"
        f"{p['predicted_fom']:.2f}" for p in doc["curve"]))
    out = settings.output
    console.print(f"wrote {out / 'perobject.json'}, {out / 'sensitivity.csv'}, "
                  f"{out / 'sweep.csv'} and {out / 'sweep.html'}")
    return 0


def _recorded_stack_depth(recording: Path) -> int:
    """The stack depth the recording was made with (its runtime settings), else 8."""
    from objtier.errors import ObjtierError
    from objtier.trace import open_trace

    try:
        processes = open_trace(recording).processes
        return int(processes[0].config.get("OBJTIER_STACK_DEPTH", 8)) if processes else 8
    except (ObjtierError, ValueError):
        return 8   # the per-object sweep reads the recording itself and says what is wrong


def _runs_ok(row) -> str:
    """"2/3", or "0/2 (2 timeout)" with the failures."""
    text = f"{row['runs'] - row['failed']}/{row['runs']}"
    failures = row.get("failures") or {}
    return text + (" (" + ", ".join(f"{n} {s}" for s, n in failures.items()) + ")"
                   if failures else "")


def _loss_per_mib(row) -> str:
    if row["result"] == "bound":
        return f"≥ {row['loss_per_mib']:.3g}"
    if row["result"] != "measured":
        return "-"
    return f"{row['loss_per_mib']:.3g}"


def _add_units(doc, calibration, out, console) -> None:
    """Thresholds in GB/s and ns from a calibration; saved into sweep.json."""
    import json

    from objtier.sweep.calibrate import in_units
    from objtier.sweep.output import write_private

    for series in doc["series"]:
        series["thresholds_in_units"] = in_units(series["thresholds"], calibration,
                                                 series["threads"])
    doc["thresholds_in_units"] = doc["series"][0]["thresholds_in_units"]
    write_private(out / "sweep.json", (json.dumps(doc, indent=1) + "\n").encode())
    from objtier.sweep.page import write_sweep_page

    write_sweep_page(out, doc, calibration={"rows": calibration})   # with its heatmaps
    for percent, unit in doc["thresholds_in_units"].items():
        if unit["level"] is not None:
            console.print(f"T{percent}: level {unit['level']:g} = "
                          f"{unit['gbps'] if unit['gbps'] is not None else '?'} GB/s, "
                          f"{unit['ns'] if unit['ns'] is not None else '?'} ns "
                          f"(calibrated at {unit['threads']} threads)")


def _run_calibrate(args, settings, console, err) -> int:
    from rich.table import Table

    from objtier.sweep.calibrate import run_calibration, workload_args


    def say(text: str) -> None:
        if not args.quiet:
            err.print(f"objtier sweep: {text}")

    def one(command, knob, sub_settings):
        return _run_with_progress(command, knob, sub_settings, args.quiet, err)

    sizes = workload_args(args.calibrate_stream, args.calibrate_chase)
    doc = run_calibration(lambda: knob_from_args(args), settings, say, one, sizes)
    table = Table(title=f"objtier sweep calibrate: {args.knob}")
    for name in ("threads", "level", "kind", "GB/s (STREAM)", "ns (ptrchase)"):
        table.add_column(name, justify="right")
    for row in doc["rows"]:
        table.add_row(str(row["threads"]), row["label"], row["kind"],
                      "-" if row["gbps"] is None else f"{row['gbps']:.3g}",
                      "-" if row["ns"] is None else f"{row['ns']:.4g}")
    console.print(table)
    out = settings.output
    console.print(f"wrote {out / 'calibration.json'}, {out / 'calibration.csv'} and "
                  f"{out / 'sweep.html'} (bandwidth and latency heatmaps)")
    return 0
