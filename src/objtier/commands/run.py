"""`objtier run`: run a program with a plan enforced by the runtime (swap or NUMA tier)."""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from pathlib import Path

from objtier import bounds as B
from objtier.errors import UsageError
from objtier.commands._swap_options import (add_nodes, add_plan_run_options, large_folio,
                                            read_nodes, rewrite_nodes, stat_flush_period)
from objtier.tiers.statflush import check_period

NAME = "run"
HELP = "run a program with a placement plan enforced (mlock/madvise on swap, mbind on NUMA)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plan", required=True, help="plan file written by `objtier plan`")
    parser.add_argument("--tier", default="swap", choices=["swap", "numa"],
                        help="the slow tier: swap (mlock fast, MADV_COLD slow) or numa (mbind)")
    controls = add_plan_run_options(parser)
    controls.add_argument("--spare-reclaim", choices=("on", "off"), default="off",
                        help="with --local: reclaim for the program's cgroup on a spare CPU "
                        "ahead of its faults (cgroup v1; compare decides it per program, "
                        "docs/compare.md)")
    add_nodes(parser)
    parser.add_argument("--stack-depth", type=B.int_option(1, B.STACK_DEPTH_MAX, "frames"),
                        default=None,
                        help="frames per allocation context; must equal the recording's "
                        "(default: the depth the plan records, else 8)")
    parser.add_argument("--follow-forks", action="store_true",
                        help="apply the plan in child processes too (a launcher script, "
                        "python, make, mpirun): each process applies its own program's "
                        "section of a plan made from a --follow-forks recording")
    parser.add_argument("-o", "--output", default=None,
                        help="also write the run's trace (objects and placement actions) here")
    parser.add_argument("-f", "--force", action="store_true",
                        help="replace the output directory if it exists")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only warnings/errors")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="-- CMD [ARGS...]: the program to run")


_NOTES: list[str] = []   # deprecation notes, printed after the run


def rewrite_argv(words: list[str]) -> list[str]:
    """--fast-nodes/--slow-nodes (earlier releases) as --nodes FAST/SLOW, with a note."""
    _NOTES.clear()   # one command line, one set of notes
    return rewrite_nodes(words, _NOTES)


def _check_args(args: argparse.Namespace) -> None:
    read_nodes(args)
    if args.tier == "numa":
        if args.local is not None:
            raise UsageError("--local applies to --tier swap only (the NUMA tier's fast memory "
                             "is its fast nodes)")
        if args.mlock_margin is not None:
            raise UsageError("--mlock-margin applies to --tier swap only")
        if not args.guard:
            raise UsageError("--no-guard applies to --tier swap only")
        if args.large_folio is not None:
            raise UsageError("--large-folio applies to --tier swap only")
        if args.stat_flush is not None:
            raise UsageError("--stat-flush applies to --tier swap only")
    else:
        if args.nodes is not None:
            raise UsageError("--nodes applies to --tier numa only")
        if args.spare_reclaim == "on" and args.local is None:
            raise UsageError("--spare-reclaim needs --local (a memory cgroup to reclaim for)")
        if args.mlock_margin is not None and args.local is None:
            raise UsageError("--mlock-margin needs --local")
        if args.stat_flush is not None and args.local is None:
            raise UsageError("--stat-flush needs --local (without it there is no cgroup "
                             "to read)")
    if args.stat_flush is not None:
        check_period(args.stat_flush)


def run(args: argparse.Namespace) -> int:
    from objtier import enforcement as enforce
    from objtier.plan import load_plan, to_text
    from objtier.record.launch import exit_code, resolve_command, run_program, runtime_env
    from objtier.outputs import write_private
    from objtier.record.session import prepare_output
    from objtier.tiers.spare_reclaim import SpareReclaimer
    from objtier.tiers.spool import Spool
    from objtier.tiers.statflush import StatFlushReader, stats_line
    from objtier.tiers.swap import SwapTier, large_folio_swapin_note

    _check_args(args)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    command = resolve_command(command)
    folio_size = enforce.parse_large_folio(large_folio(args))
    plan = load_plan(args.plan)
    fast_nodes = enforce.check_nodes(args.fast_nodes, "--nodes FAST")
    slow_nodes = enforce.check_nodes(args.slow_nodes, "--nodes SLOW")
    local = margin = None
    if args.local is not None:
        local = enforce.parse_local(args.local, plan["budget"].get("footprint_bytes"))
        limit, margin = local_limit(plan, local, args.mlock_margin)
    else:
        limit = int(plan["budget"]["bytes"])  # the runtime also caps it at its memcg limit

    def warn(text: str) -> None:
        sys.stderr.write(f"objtier run: warning: {text}\n")

    def say(text: str) -> None:
        if not args.quiet:
            sys.stderr.write(f"objtier run: {text}\n")

    for text in enforce.plan_warnings(plan, command[0], args.follow_forks):
        warn(text)
    stack_depth, depth_warning = enforce.plan_stack_depth(plan, args.stack_depth)
    if depth_warning:
        warn(depth_warning)
    supported = enforce.runtime_supports_plans()
    with tempfile.TemporaryDirectory(prefix="objtier-run-") as scratch, \
            contextlib.ExitStack() as landing:
        scratch_dir = Path(scratch)
        plan_text = scratch_dir / "plan.txt"
        write_private(plan_text, to_text(plan), "text plan")
        if args.output:
            output = Path(args.output)
            prepare_output(output, args.force)
        else:
            output = scratch_dir / "run.otr"
            output.mkdir(mode=0o700)
        folio = folio_size if plan.get("large_folios") else None
        guarded = args.guard and enforce.locks_something(plan)  # nothing locked: no guard
        # under a memory limit, what the runtime writes waits on tmpfs (tiers.spool)
        spools = [landing.enter_context(Spool(output))] if local is not None else []
        trace_to = spools[0].path if spools else output
        settings = enforce.PlanRun(plan_text, limit, enforce.plan_min_size(plan),
                                   stack_depth, trace_to, args.tier, fast_nodes, slow_nodes,
                                   pressure_guard=guarded,
                                   large_folios=folio_size is not None,
                                   follow_forks=args.follow_forks)
        # on the swap tier a plan that does nothing runs the program alone, as compare does
        alone = local is not None and not enforce.acts(plan) and not args.output
        env = None if alone else runtime_env(settings.settings())
        if local is not None:
            say(f"local memory {local >> 20} MiB (memory cgroup + {args.swap} swap), "
                f"at most {limit >> 20} MiB locked ({margin >> 20} MiB margin)")
            if alone:
                say("the plan leaves the program to the kernel (nothing locked, no large "
                    "folios): it runs without the runtime, as compare's objtier arm does")
            elif args.guard and not guarded:
                say("the plan locks nothing: no pressure guard")
            if folio:
                say(f"{len(plan['large_folios'])} swept object(s) swapped in "
                    f"{folio >> 10} KiB folios")
                note = large_folio_swapin_note()
                if note:
                    say(note)
            tier = SwapTier(local, swap=args.swap, large_folio_bytes=folio)
            period = stat_flush_period(args)
            if not period:
                warn("--stat-flush 0: no stat-flush reader; on memory cgroup v1 kernel "
                     "reclaim may OOM-kill the program with swap mostly free")
        else:
            tier = None
        reader = None
        with tier if tier is not None else contextlib.nullcontext():
            if tier is not None:
                reader = StatFlushReader(tier.cgroup.path, period)
            helper = (SpareReclaimer(tier.cgroup.path) if tier is not None
                      and args.spare_reclaim == "on" and tier.cgroup.version == 1 else None)
            if tier is not None and args.spare_reclaim == "on" and helper is None:
                warn("--spare-reclaim on: this is memory cgroup v2; the reclaimer is built "
                     "for v1 and does not run")
            with reader if reader is not None else contextlib.nullcontext(), \
                    helper if helper is not None else contextlib.nullcontext():
                returncode = run_program(command, env, preexec=tier.preexec if tier else None,
                                         name="objtier run")
            memcg = tier.cgroup.stat() if tier is not None else None
        for spool in spools:
            spool.land()
        if reader is not None:
            say(stats_line(reader.stats))
        if args.follow_forks:
            _say_processes(plan, output, say, warn)
        found = None if alone else enforce.read_enforcement(plan, output)
        for text in [] if alone else enforce.enforcement_warnings(plan, found, supported):
            warn(text)
        if found is not None:
            folios = (f"{found.large_folio_bytes >> 20} MiB on large folios, "
                      if found.large_folio_bytes else "")
            sites = (f" (+ {found.site_locked_bytes / 2**20:.0f} MiB of the sites' arenas)"
                     if found.site_locked_bytes else "")
            say(f"{found.matched} of {found.objects} objects matched the plan; "
                f"{found.locked_bytes >> 20} MiB locked{sites}, "
                f"{found.cold_bytes >> 20} MiB advised cold, {folios}"
                f"{found.failed_actions} failed action(s)")
        if helper is not None:
            say(f"spare-CPU reclaim: {helper.reclaims:,} lowerings of the limit, "
                f"{helper.seconds:.2f} s of reclaim on CPU {helper.cpu}")
        if memcg is not None:
            for line in model_check_lines(plan, local, memcg):
                say(line)
        if args.output:
            say(f"trace written to {output}/")
    for note in dict.fromkeys(_NOTES):
        sys.stderr.write(f"objtier run: note: {note}; the old spelling goes in the next "
                         f"release\n")
    _NOTES.clear()
    return exit_code(returncode)


def local_limit(plan: dict, local: int, margin_text: str | None) -> tuple[int, int]:
    """(mlock limit, margin) [bytes] for `run --local`. --mlock-margin wins; else a plan the
    kernel model chose (plan --local, compare) keeps unlocked what the program holds outside
    its objects plus the model's slack — the margin plan and compare planned with; else
    compare's cap of a fitted margin (at most half of local memory), so that a small limit
    still leaves room to lock. (by_model.lock_cap: other + 4 MiB, at least 8 MiB.)"""
    from objtier.plan.by_model import lock_cap
    from objtier import enforcement as enforce

    model = plan.get("model") or {}
    if margin_text is None and model.get("chosen"):
        margin = min(local - 4096, local - lock_cap(local, int(model["other_bytes"])))
        return enforce.mlock_limit(local, str(max(0, margin)))
    return enforce.mlock_limit(local, margin_text, fitted=margin_text is None)


def model_check_lines(plan: dict, local: int, memcg: dict) -> list[str]:
    """The kernel model's prediction for this plan beside the run's swap-ins (the cgroup's
    anonymous refaults, pages)."""
    from objtier.model.check import FLOOR, OFF, is_off

    model = plan.get("model") or {}
    if not model.get("chosen"):
        return []
    measured = memcg.get("workingset_refault_anon", memcg.get("pgmajfault"))
    if measured is None:
        return []
    predicted = int(model["predicted_swapins"]["plan"])
    where = "" if model.get("local_bytes") == local else (
        f" (predicted for {model['local_bytes'] >> 20} MiB local, not this run's "
        f"{local >> 20} MiB)")
    text = (f"model: {predicted:,} swap-ins predicted (estimated, for the recorded run), "
            f"{measured:,} measured"
            f"{where}")
    if is_off(predicted, measured):
        text += f" — the model is off by more than {100 * OFF:.0f} % (and {FLOOR} swap-ins) here"
    return [text]


def _say_processes(plan, output, say, warn) -> None:
    """Following forks: per process, the section its runtime applied and what matched."""
    from objtier import enforcement as enforce

    processes = enforce.read_process_enforcement(plan, output)
    if processes is None:
        return
    for p in processes:
        section = {"all": "the whole plan", "none": "no section"}.get(p.section,
                                                                     f"section {p.section}")
        rank = "" if p.rank is None else f" rank {p.rank}"
        say(f"process {p.pid} ({Path(p.exe).name}{rank}): {section}, {p.matched} of "
            f"{p.objects} objects matched, {p.locked_bytes >> 20} MiB locked")
    for text in enforce.section_warnings(plan, processes):
        warn(text)
