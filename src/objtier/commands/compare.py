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
from objtier.errors import UsageError

NAME = "compare"
HELP = "measure a program under limited local memory: kernel reclaim vs an objtier plan (A/B)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tier", default="swap", choices=["swap", "numa"],
                        help="the slow tier (swap: memory cgroup + swap; needs root)")
    parser.add_argument("--local", default="70%", metavar="SIZE|PCT",
                        help="local (fast) memory: PCT of the measured footprint or a SIZE "
                        "(default 70%%)")
    parser.add_argument("--repeat", type=B.int_option(1), default=5,
                        help="runs per configuration (5)")
    parser.add_argument("--swap", default="zram", metavar="zram|DEVICE",
                        help="swap behind the cgroup (default: a new zram device)")
    parser.add_argument("--algo", default=None,
                        choices=["rank", "spill", "reuse", "halving", "exact", "pages", "auto"],
                        help="placement algorithm (default: auto with --tier swap — spill, "
                        "which fills the mlock budget and splits the first object that does "
                        "not fit whole, keeping the split object's most-touched pages where "
                        "the profiles show pages never touched; spill with --tier numa)")
    parser.add_argument("--profiles", type=B.int_option(1), default=None, metavar="N",
                        help="recordings of the program to plan from (default 4 for --algo "
                             "auto and pages, which sum their samples per page, else 1)")
    parser.add_argument("--phases", action=argparse.BooleanOptionalAction, default=None,
                        help="swap: one placement per phase the program marks (objtier_phase), "
                             "switched by the runtime as the phases change (default: where "
                             "the recording has phase markers; --no-phases: one for the run)")
    parser.add_argument("--backfill", action="store_true",
                        help="swap: let colder objects fill the gaps the first object that "
                             "does not fit leaves (off: unlocked memory goes to the kernel)")
    parser.add_argument("--no-guard", dest="guard", action="store_false",
                        help="swap: no pressure guard (no MADV_COLD of planned-slow pages when the "
                        "cgroup's inactive list runs dry): faster where kernel reclaim copes, "
                        "but the cgroup's OOM killer may end a run (docs/compare.md)")
    parser.add_argument("--stat-flush", type=float, default=None, metavar="MS",
                        help="swap: every arm but kernel-raw runs with a reader of the "
                        "cgroup's memory.stat every MS ms, which flushes the memcg LRU "
                        "statistics kernel reclaim decides from (default 10, the pressure "
                        "guard's period, and 2 while the cgroup's major faults grow; 0: off "
                        "— the kernel arm may be OOM-killed and the ratios are not fair)")
    parser.add_argument("--spare-reclaim", choices=("auto", "on", "off"), default=None,
                        help="swap: the objtier arm's reclaim runs ahead on a spare CPU "
                        "(auto, the default: where the unlimited run leaves a CPU idle and "
                        "one CPU can reclaim the pages the plan is predicted to swap; "
                        "docs/compare.md)")
    parser.add_argument("--arm", dest="arms", action="append", default=[],
                        choices=["objtier-noguard", "kernel-raw"],
                        help="swap: add an arm to each repetition: objtier-noguard (the plan "
                        "without the pressure guard, with the reader), kernel-raw (kernel "
                        "reclaim without the reader: survival only, no ratio); repeatable")
    parser.add_argument("--large-folio", default=None, metavar="SIZE|off",
                        help="swap: folio size for the objects the plan marks as swept, enabled "
                        "for madvised memory during both arms (default 16K; off: base pages)")
    parser.add_argument("--follow-forks", action="store_true",
                        help="swap: record and place the program's child processes too (a "
                        "launcher script, python, make, mpirun): the plan holds one section "
                        "per program and each process applies its own")
    parser.add_argument("--sampler", default="auto", choices=["auto", "fault", "perf"],
                        help="profile sampler (default auto)")
    parser.add_argument("--mlock-margin", default=None, metavar="SIZE",
                        help="local memory left unlocked; plan budget = local - margin "
                        "(default: fitted: room for the objects a first plan leaves wholly "
                        "unlocked, at least 8M, at most 10%% of local or 32M)")
    parser.add_argument("--rate", type=B.int_option(1, B.RATE_MAX, "samples per second"),
                        default=20000,
                        help="profile: most access samples per second (20000: the profile run "
                        "is unlimited and short runs need the samples)")
    parser.add_argument("--timeout", type=B.float_option(0, lo_open=True, unit="s"),
                        default=None, metavar="S",
                        help="kill a limited run after S seconds (default: max(300, 100 x the "
                        "unlimited run))")
    parser.add_argument("-o", "--output", default="compare-out",
                        help="output directory (default compare-out)")
    parser.add_argument("-f", "--force", action="store_true",
                        help="replace an earlier comparison in the output directory")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the table")
    add_numa_arguments(parser)
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="-- CMD [ARGS...]: the program to compare")


def add_numa_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `objtier compare` that only the NUMA tier reads."""
    group = parser.add_argument_group("--tier numa (in the two-node guest)")
    group.add_argument("--fast-nodes", default=None, metavar="LIST",
                       help="fast NUMA nodes (default: detected from memory tiers, HMAT, CPUs)")
    group.add_argument("--slow-nodes", default=None, metavar="LIST",
                       help="slow NUMA nodes (default: detected)")
    group.add_argument("--fast-reserve", default=None, metavar="SIZE",
                       help="hold SIZE of hugetlb pages on the fast nodes during the experiment, "
                       "so that a small program overflows them")


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


def run(args: argparse.Namespace) -> int:
    from objtier.experiments.compare_swap import CompareSettings, run_compare
    from objtier.record.launch import resolve_command
    from objtier.units import parse_size

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
        if args.spare_reclaim is not None:
            raise UsageError("--spare-reclaim applies to --tier swap only")
        if args.follow_forks:
            raise UsageError("--follow-forks applies to --tier swap only")
        return run_numa(args, command)
    from objtier.record.enforce import DEFAULT_LARGE_FOLIO, parse_large_folio
    from objtier.plan import NEEDS_PAGE_SAMPLES

    from objtier.experiments.compare_swap import check_stat_flush
    from objtier.tiers.statflush import DEFAULT_PERIOD_MS

    stat_flush = DEFAULT_PERIOD_MS if args.stat_flush is None else args.stat_flush
    check_stat_flush(stat_flush)
    if "objtier-noguard" in args.arms and not args.guard:
        raise UsageError("--arm objtier-noguard with --no-guard: the objtier arm already runs "
                         "without the guard")
    large_folio = args.large_folio or DEFAULT_LARGE_FOLIO
    parse_large_folio(large_folio)  # a bad size fails now, not after the profiles
    args.algo = args.algo or "auto"
    if args.profiles is not None and args.profiles > 1 and args.algo not in NEEDS_PAGE_SAMPLES:
        raise UsageError("--profiles applies to --algo auto and pages (the other algorithms "
                         "plan from one recording)")
    settings = CompareSettings(local=args.local, repeat=args.repeat, swap=args.swap,
                               algo=args.algo, backfill=args.backfill, guard=args.guard,
                               stat_flush_ms=stat_flush, arms=tuple(dict.fromkeys(args.arms)),
                               sampler=args.sampler, large_folio=large_folio,
                               margin=args.mlock_margin,
                               rate=args.rate, profiles=args.profiles, phases=args.phases,
                               timeout_s=args.timeout, follow_forks=args.follow_forks,
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
    return 0


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
