"""`objtier compare`: the kernel alone vs an objtier plan, side by side: on the swap tier
(objtier.experiments.compare_swap) or, with --tier numa, in the two-node guest
(objtier.experiments.compare_numa). This module reads the options and prints the tables."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from objtier import bounds as B
from objtier.commands._swap_options import (COMPARE_LOCAL, add_backfill, add_nodes,
                                            add_plan_run_options, backfill, large_folio,
                                            old_spelling, read_nodes, rewrite_nodes,
                                            stat_flush_period)
from objtier.errors import UsageError

NAME = "compare"
HELP = "measure a program under limited local memory: kernel reclaim vs an objtier plan (A/B)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tier", default="swap", choices=["swap", "numa"],
                        help="the slow tier (swap: memory cgroup + swap; needs root)")
    parser.add_argument("--repeat", type=B.int_option(1), default=5,
                        help="runs per configuration (5)")
    controls = add_plan_run_options(
        parser, local=COMPARE_LOCAL,
        numa="; --tier numa: PCT of the fast nodes' free memory or a SIZE")
    controls.add_argument("--arm", dest="arms", action="append", default=[],
                        choices=["objtier-noguard", "kernel-raw"],
                        help="swap: add an arm to each repetition: objtier-noguard (the plan "
                        "without the pressure guard, with the reader), kernel-raw (kernel "
                        "reclaim without the reader: survival only, no ratio); repeatable")
    controls.add_argument("--spare-reclaim", choices=("auto", "on", "off"), default=None,
                        help="swap: the objtier arm's reclaim runs ahead on a spare CPU "
                        "(auto, the default: where the unlimited run leaves a CPU idle and "
                        "one CPU can reclaim the pages the plan is predicted to swap; "
                        "docs/compare.md)")
    parser.add_argument("--algo", default=None,
                        choices=["rank", "spill", "reuse", "halving", "exact", "pages", "auto"],
                        help="placement algorithm (default: auto with --tier swap — spill, "
                        "which fills the mlock budget and splits the first object that does "
                        "not fit whole, keeping the split object's most-touched pages where "
                        "the profiles show pages never touched; spill with --tier numa)")
    parser.add_argument("--profile", default=None, metavar="KEY=VALUE,...",
                        help="how compare records the profiles it plans from: count=N "
                        "recordings (default 4 for --algo auto and pages, which sum their "
                        "samples per page, else 1), sampler=auto|fault|perf (auto), rate=HZ, "
                        f"the most access samples per second ({DEFAULT_RATE}: the profile run "
                        "is unlimited and short runs need the samples), sites=N: watch the N "
                        "small-block sites with the most bytes (record --sites), so that the "
                        "plan can lock the first chunks of their arenas (swap tier; default: "
                        "8 in the profiles after the first where small blocks hold a quarter "
                        "of the footprint or more; 0: never)")
    parser.add_argument("--phases", action=argparse.BooleanOptionalAction, default=None,
                        help="swap: one placement per phase the program marks (objtier_phase), "
                             "switched by the runtime as the phases change (default: where "
                             "the recording has phase markers; --no-phases: one for the run)")
    add_backfill(parser)
    parser.add_argument("--follow-forks", action="store_true",
                        help="swap: record and place the program's child processes too (a "
                        "launcher script, python, make, mpirun): the plan holds one section "
                        "per program and each process applies its own")
    parser.add_argument("--timeout", type=B.float_option(0, lo_open=True, unit="s"),
                        default=None, metavar="S",
                        help="kill a limited run after S seconds (default: max(300, 100 x the "
                        "unlimited run))")
    parser.add_argument("-o", "--output", default="compare-out",
                        help="output directory (default compare-out)")
    parser.add_argument("-f", "--force", action="store_true",
                        help="replace an earlier comparison in the output directory")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the table")
    add_nodes(parser, reserve=True)
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="-- CMD [ARGS...]: the program to compare")


PROFILE_KEYS = {"count": "profiles", "sampler": "sampler", "rate": "rate", "sites": "sites"}
PROFILE_SAMPLERS = ("auto", "fault", "perf")
DEFAULT_RATE = 20000   # the profile run is unlimited and short runs need the samples
_NOTES: list[str] = []   # deprecation notes, printed after the comparison


def rewrite_argv(words: list[str]) -> list[str]:
    """The earlier releases' --profiles N, --sampler S, --rate R as --profile count=N,...,
    and --fast-nodes/--slow-nodes/--fast-reserve as --nodes FAST/SLOW[,reserve=SIZE]."""
    _NOTES.clear()   # one command line, one set of notes
    words = rewrite_nodes(words, _NOTES, reserve=True)
    words, found = old_spelling(words, {"--profiles": "count", "--sampler": "sampler",
                                        "--rate": "rate"}, _NOTES, "--profile KEY=VALUE,...")
    checks = {"count": ("--profiles", B.int_option(1)),
              "rate": ("--rate", B.int_option(1, B.RATE_MAX, "samples per second"))}
    for key, (flag, check) in checks.items():
        if key in found:   # refused as argparse refused it, under the name given
            try:
                check(found[key])
            except argparse.ArgumentTypeError as error:
                raise UsageError(f"argument {flag}: {error}") from None
    if found.get("sampler", "auto") not in PROFILE_SAMPLERS:
        raise UsageError(f"argument --sampler: invalid choice: {found['sampler']!r} (choose "
                         f"from {', '.join(PROFILE_SAMPLERS)})")
    if found:
        words = ["--profile", ",".join(f"{k}={v}" for k, v in found.items())] + words
    return words


def read_profile(args: argparse.Namespace) -> None:
    """--profile count=N,sampler=S,rate=R,sites=N into args.profiles (None = the algorithm's
    default), args.sampler, args.rate and args.sites, checked."""
    args.profiles, args.sampler, args.rate, args.sites = None, "auto", DEFAULT_RATE, None
    for item in filter(None, (args.profile or "").split(",")):
        key, sep, value = (part.strip() for part in item.partition("="))
        if not sep or key not in PROFILE_KEYS:
            raise UsageError(f"--profile {item!r}: expected KEY=VALUE with KEY one of "
                             f"{', '.join(PROFILE_KEYS)}")
        if key == "sampler":
            if value not in PROFILE_SAMPLERS:
                raise UsageError(f"--profile sampler: one of {', '.join(PROFILE_SAMPLERS)}, "
                                 f"got {value!r}")
            args.sampler = value
            continue
        check = {"count": B.int_option(1), "sites": B.int_option(0, 256, "sites"),
                 "rate": B.int_option(1, B.RATE_MAX, "samples per second")}[key]
        try:
            setattr(args, PROFILE_KEYS[key], check(value))
        except argparse.ArgumentTypeError as error:
            raise UsageError(f"--profile {key}: {error}") from None


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, float):
        if math.isinf(value):
            return "inf"
        return f"{value:.{digits}g}"
    return str(value)


def print_table(result) -> None:
    from rich.console import Console
    from rich.table import Table

    from objtier.units import format_bytes

    console = Console(stderr=False, width=None if sys.stdout.isatty() else 150)
    from objtier.experiments.results import survival_text

    console = Console(stderr=False, width=None if sys.stdout.isatty() else 160)
    table = Table(title="objtier compare: per run and medians")
    for name in ("run", "config", "status", "wall s", "user s", "sys s", "FoM", "timed s",
                 "swap-outs", "swap-ins", "majflt", "memcg refaults", "peak RSS", "locked",
                 "flush reads"):
        text = name in ("config", "status")
        table.add_column(name, justify="left" if text else "right", no_wrap=text)
    for r in result.rows:
        table.add_row(str(r.order), r.config, r.status, _fmt(r.wall_s), _fmt(r.user_s),
                      _fmt(r.system_s), _fmt(r.fom_value),
                      _fmt(r.fom_seconds), str(r.pswpout), str(r.pswpin), str(r.major_faults),
                      _fmt(r.memcg_refault_anon), format_bytes(r.max_rss_bytes),
                      "-" if r.locked_bytes is None else format_bytes(r.locked_bytes),
                      str(r.stat_flush_reads) if r.stat_flush_ms else "off")
    medians = result.summary["medians"]
    for config, m in medians.items():
        alive = f"{m['finished']}/{m['runs']} ok" + (
            f", {m['oom_killed']} OOM" if m["oom_killed"] else "")
        table.add_row("median", config, alive,
                      _fmt(m["wall_s"]), _fmt(m["user_s"]), _fmt(m["system_s"]),
                      _fmt(m["fom_value"]), _fmt(m["fom_seconds"]),
                      _fmt(m["pswpout"]), _fmt(m["pswpin"]), _fmt(m["major_faults"]),
                      _fmt(m["memcg_refault_anon"]),
                      "-" if m["max_rss_bytes"] is None else format_bytes(m["max_rss_bytes"]),
                      "-" if m["locked_bytes"] is None else format_bytes(m["locked_bytes"]),
                      "", style="bold")
    console.print(table)
    flush = result.summary["stat_flush"]
    console.print(
        f"stat-flush reader: memory.stat every {_fmt(flush['period_ms'])} ms in "
        f"{', '.join(flush['arms_with_reader']) or 'no arm'}"
        + (f"; without it: {', '.join(flush['arms_without_reader'])} (survival only)"
           if flush["arms_without_reader"] and flush["period_ms"] else ""))
    console.print("survival: " + "; ".join(f"{c} {survival_text(m)}"
                                           for c, m in medians.items()))
    unit = medians["baseline"]["fom_value"] is not None
    for arm, r in result.summary["arm_ratios"].items():
        if r["withheld"]:
            console.print(f"{arm}: no ratio — {r['withheld']}")
            continue
        console.print(f"{arm}: speedup (baseline / {arm} median wall time): "
                      f"{_fmt(r['speedup'])}x; timed region: {_fmt(r['timed_speedup'])}x"
                      + ("" if unit else " (wall time: no FOM line)")
                      + (f"; FoM ratio ({arm} / baseline): {_fmt(r['fom_ratio'])}"
                         if unit else ""))
        console.print(f"{arm}: swap-outs cut {_fmt(r['swapout_reduction'])}x, swap-ins cut "
                      f"{_fmt(r['swapin_reduction'])}x, major faults cut "
                      f"{_fmt(r['major_fault_reduction'])}x (baseline / {arm} medians)")
        if arm == "objtier" and result.summary.get("same_command"):
            console.print("objtier: the plan did nothing, so both arms ran the same command "
                          "alone: these ratios are the spread between identical runs")


def run(args: argparse.Namespace) -> int:
    from objtier.experiments.compare_swap import CompareSettings, run_compare
    from objtier.record.launch import resolve_command
    from objtier.units import parse_size

    read_profile(args)
    read_nodes(args, reserve=True)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    command = resolve_command(command)
    if args.repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {args.repeat}")
    if args.rate <= 0:
        raise UsageError(f"--rate must be positive, got {args.rate}")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError(f"--timeout must be positive, got {args.timeout}")
    if args.mlock_margin is not None:
        parse_size(args.mlock_margin, "--mlock-margin")
    if args.profiles is not None and args.profiles < 1:
        raise UsageError(f"--profiles must be at least 1, got {args.profiles}")
    if args.tier == "numa":
        args.algo = args.algo or "spill"
        if args.stat_flush is not None or args.arms:
            raise UsageError("--stat-flush and --arm apply to --tier swap only")
        if not args.guard:
            raise UsageError("--no-guard applies to --tier swap only")
        if args.profiles is not None and args.profiles > 1:
            raise UsageError("--profiles applies to --tier swap only")
        if args.phases:
            raise UsageError("--phases applies to --tier swap only")
        if args.backfill is not None:
            raise UsageError("--backfill applies to --tier swap only")
        if args.spare_reclaim is not None:
            raise UsageError("--spare-reclaim applies to --tier swap only")
        if args.follow_forks:
            raise UsageError("--follow-forks applies to --tier swap only")
        return _with_notes(run_numa(args, command))
    if args.nodes is not None:
        raise UsageError("--nodes applies to --tier numa only")
    from objtier.experiments.compare_swap import check_stat_flush
    from objtier.plan import NEEDS_PAGE_SAMPLES
    from objtier.enforcement import parse_large_folio

    stat_flush = stat_flush_period(args)
    check_stat_flush(stat_flush)
    if "objtier-noguard" in args.arms and not args.guard:
        raise UsageError("--arm objtier-noguard with --no-guard: the objtier arm already runs "
                         "without the guard")
    folio = large_folio(args)
    parse_large_folio(folio)  # a bad size fails now, not after the profiles
    args.algo = args.algo or "auto"
    if args.profiles is not None and args.profiles > 1 and args.algo not in NEEDS_PAGE_SAMPLES:
        raise UsageError("--profiles applies to --algo auto and pages (the other algorithms "
                         "plan from one recording)")
    settings = CompareSettings(local=args.local, repeat=args.repeat, swap=args.swap,
                               algo=args.algo, backfill=backfill(args, swap_tier=True),
                               guard=args.guard,
                               stat_flush_ms=stat_flush, arms=tuple(dict.fromkeys(args.arms)),
                               sampler=args.sampler, large_folio=folio,
                               margin=args.mlock_margin,
                               rate=args.rate, profiles=args.profiles, phases=args.phases,
                               sites=args.sites, timeout_s=args.timeout,
                               follow_forks=args.follow_forks,
                               spare_reclaim=args.spare_reclaim or "auto",
                               output=Path(args.output), force=args.force)

    def say(text: str) -> None:
        if not args.quiet:
            sys.stderr.write(f"objtier compare: {text}\n")

    from objtier.experiments.compare_swap import NO_FLUSH_WARNING

    if not stat_flush:   # said before the long runs, not after them
        sys.stderr.write(f"objtier compare: warning: {NO_FLUSH_WARNING}\n")
    result = run_compare(command, settings, say)
    for warning in result.warnings:
        if warning != NO_FLUSH_WARNING:
            sys.stderr.write(f"objtier compare: warning: {warning}\n")
    print_table(result)
    out = settings.output
    print(f"wrote {out / 'compare.csv'}, {out / 'summary.json'} and {out / 'compare.png'}")
    from objtier.experiments.results import run_warnings

    for warning in run_warnings(result.rows):   # also in summary.json's warnings
        sys.stderr.write(f"objtier compare: warning: {warning}\n")
    return _with_notes(0)


def _with_notes(code: int) -> int:
    for note in dict.fromkeys(_NOTES):
        sys.stderr.write(f"objtier compare: note: {note}; the old spelling goes in the next "
                         f"release\n")
    _NOTES.clear()
    return code


def run_numa(args: argparse.Namespace, command: list[str]) -> int:
    """`objtier compare --tier numa`: --local is PCT of the fast nodes' free memory or SIZE."""
    from objtier.experiments.compare_numa import NumaCompareSettings, run_numa_compare
    from objtier.units import parse_size

    local = args.local
    settings = NumaCompareSettings(
        local=local, repeat=args.repeat, algo=args.algo,
        sampler="fault" if args.sampler == "auto" else args.sampler, rate=args.rate,
        fast_nodes=getattr(args, "fast_nodes", None), slow_nodes=getattr(args, "slow_nodes", None),
        fast_reserve=(parse_size(args.fast_reserve, "--fast-reserve")
                      if getattr(args, "fast_reserve", None) else 0),
        timeout_s=args.timeout or 900.0, output=Path(args.output), force=args.force)

    def say(text: str) -> None:
        if not args.quiet:
            sys.stderr.write(f"objtier compare: {text}\n")

    result = run_numa_compare(command, settings, say=say)
    for warning in result.warnings:
        sys.stderr.write(f"objtier compare: warning: {warning}\n")
    print_numa_table(result)
    out = settings.output
    print(f"wrote {out / 'compare.csv'}, {out / 'objects.csv'} and {out / 'summary.json'}")
    return 0


def print_numa_table(result) -> None:
    """The NUMA comparison's runs and per-object slow shares (a NumaCompareResult)."""
    def fmt(v: Any) -> str:
        return "-" if v is None else (f"{v:.3g}" if isinstance(v, float) else str(v))

    print(f"{'run':>4} {'config':8} {'rc':>3} {'wall s':>8} {'FoM':>9} {'hint flt':>9} "
          f"{'promoted':>9} {'demoted':>9} {'slow share':>10}")
    for r in result.rows:
        print(f"{r.order:>4} {r.config:8} {r.returncode:>3} {fmt(r.wall_s):>8} "
              f"{fmt(r.fom_value):>9} {fmt(r.numa_hint_faults):>9} "
              f"{fmt(r.pgpromote_success):>9} {fmt(r.pgdemote):>9} {fmt(r.slow_share):>10}")
    print("slow-node share per object (median over runs):")
    for key, o in result.summary["objects"].items():
        print(f"  {o['label'][:48] or key:48} {o['size'] >> 20:>6} MiB  planned {o['planned']:9}"
              f" kernel {fmt(o.get('kernel_slow_share'))}  objtier "
              f"{fmt(o.get('objtier_slow_share'))}")
