"""The swap tier's options, defined once for `run`, `compare` and `sweep`, with one set of
defaults (docs/cli.md, "The swap tier's options"):

    --local SIZE|PCT     memory the program runs in: a memory cgroup limit, swap behind it
    --swap zram|DEVICE   the swap behind the cgroup (zram: a new zram device)
    --mlock-margin SIZE  local memory left unlocked (default: the margin the plan was made
                         with, else fitted: enforce.fitted_margin)
    --no-guard           no pressure guard (MADV_COLD of planned-slow pages near the limit)
    --large-folio SIZE   folio size of the plan's swept objects (default 16K; off)
    --stat-flush MS      the memory.stat reader's period (default 10 ms, 2 ms while the
                         cgroup's major faults grow; 0 = off): under "experiment controls"

Only --local's default differs: `compare` measures under a limit, so it has one (70 %);
`run` without --local runs the program without a cgroup. Each function takes the parser (or
argument group) to add to; the values are read back as args.local, args.swap,
args.mlock_margin, args.guard, args.large_folio and args.stat_flush (None = the default, so
that a command can tell an option given from one left out)."""

from __future__ import annotations

import argparse

from objtier.enforcement import DEFAULT_LARGE_FOLIO
from objtier.tiers.statflush import DEFAULT_PERIOD_MS

DEFAULT_SWAP = "zram"
COMPARE_LOCAL = "70%"
EXPERIMENT_CONTROLS = "experiment controls"


def add_local(parser, default: str | None = None, numa: str = "") -> None:
    where = (f"default {default.replace('%', '%%')}" if default is not None
             else "default: no limit, no cgroup")
    parser.add_argument("--local", default=default, metavar="SIZE|PCT",
                        help="swap tier: local (fast) memory — a memory cgroup limited to SIZE "
                        "or PCT of the footprint (the plan's, or the measured one), swap "
                        f"behind it; needs root ({where}){numa}")


def add_swap_device(parser) -> None:
    parser.add_argument("--swap", default=DEFAULT_SWAP, metavar="zram|DEVICE",
                        help="swap tier: swap behind the cgroup (default: a new zram device)")


def add_margin(parser) -> None:
    parser.add_argument("--mlock-margin", default=None, metavar="SIZE",
                        help="swap tier: local memory left unlocked for the rest of the "
                        "program (default, as plan and compare planned it: for a plan the "
                        "kernel model chose, what the program holds outside its objects + 4M, "
                        "at least 8M; else fitted to the objects the plan leaves wholly "
                        "unlocked, at least 8M, at most 10%% of local or 32M and half of local)")


def add_guard(parser) -> None:
    parser.add_argument("--no-guard", dest="guard", action="store_false",
                        help="swap tier: no pressure guard (no MADV_COLD of planned-slow pages "
                        "when the cgroup's inactive list runs dry): faster where kernel "
                        "reclaim copes, but the cgroup's OOM killer may end the program "
                        "(docs/compare.md)")


def add_large_folio(parser) -> None:
    parser.add_argument("--large-folio", default=None, metavar="SIZE|off",
                        help="swap tier: folio size for the objects the plan marks as swept "
                        "(their slow pages are swapped in SIZE at a time), enabled for "
                        f"madvised memory while the program runs (default {DEFAULT_LARGE_FOLIO}; "
                        "off: base pages)")


def add_stat_flush(parser) -> None:
    parser.add_argument("--stat-flush", type=float, default=None, metavar="MS",
                        help="swap tier: a reader of the cgroup's memory.stat every MS ms runs "
                        "beside the program (in compare: beside every arm but kernel-raw), "
                        "flushing the memcg LRU statistics kernel reclaim decides from "
                        f"(default {DEFAULT_PERIOD_MS}, and 2 while the cgroup's major faults "
                        "grow; 0: off — on memory cgroup v1 the program may be OOM-killed "
                        "and compare's ratios are not fair)")


def experiment_controls(parser: argparse.ArgumentParser):
    """The argument group that --help shows under "experiment controls"."""
    return parser.add_argument_group(
        EXPERIMENT_CONTROLS, "for measuring objtier itself, not for using it")


def add_plan_run_options(parser: argparse.ArgumentParser, local: str | None = None,
                         numa: str = ""):
    """The options of running a plan on the swap tier (run, compare): --local, --swap,
    --mlock-margin, --no-guard, --large-folio, and --stat-flush in the returned
    "experiment controls" group (numa: what --local means on the NUMA tier, if anything)."""
    add_local(parser, local, numa)
    add_swap_device(parser)
    add_margin(parser)
    add_guard(parser)
    add_large_folio(parser)
    controls = experiment_controls(parser)
    add_stat_flush(controls)
    return controls


def add_backfill(parser) -> None:
    parser.add_argument("--backfill", action=argparse.BooleanOptionalAction, default=None,
                        help="let colder objects fill the gap the first object that does not "
                        "fit leaves (default: off on the swap tier — plan --local, compare — "
                        "where unlocked memory goes to the hottest pages anyway; on for a "
                        "--fast budget and the NUMA tier)")


def backfill(args: argparse.Namespace, swap_tier: bool) -> bool:
    """--backfill's value: the default of the tier where it was not given (plan and compare
    agree, so that `plan --local` + `run --local` places what `compare` measured)."""
    given = getattr(args, "backfill", None)
    return (not swap_tier) if given is None else given


def stat_flush_period(args: argparse.Namespace) -> float:
    """--stat-flush's period [ms]: the default where it was not given."""
    value = getattr(args, "stat_flush", None)
    return DEFAULT_PERIOD_MS if value is None else value


def large_folio(args: argparse.Namespace) -> str:
    """--large-folio's text: the default where it was not given."""
    return getattr(args, "large_folio", None) or DEFAULT_LARGE_FOLIO


# ---- the NUMA tier's nodes and compare's profiles: one option each ------------------------

def add_nodes(parser, reserve: bool = False) -> None:
    extra = ("; with ,reserve=SIZE (an experiment control of the guest) SIZE of hugetlb "
             "pages are held on the fast nodes during the experiment, so that a small program "
             "overflows them" if reserve else "")
    parser.add_argument("--nodes", default=None,
                        metavar="FAST/SLOW" + ("[,reserve=SIZE]" if reserve else ""),
                        help="numa tier: the fast and the slow NUMA nodes, e.g. 0/2 or 0-1/2,3; "
                        "either side empty or 'auto': detected from memory tiers, HMAT and "
                        f"CPUs (default auto){extra}")


def read_nodes(args: argparse.Namespace, reserve: bool = False) -> None:
    """--nodes FAST/SLOW[,reserve=SIZE] into args.fast_nodes, args.slow_nodes (None =
    detected) and, with reserve, args.fast_reserve (None = none)."""
    from objtier.errors import UsageError

    text = getattr(args, "nodes", None)
    args.fast_nodes = args.slow_nodes = None
    if reserve:
        args.fast_reserve = None
    if text is None:
        return
    nodes, _, rest = text.partition(",")
    if rest:
        key, sep, value = rest.partition("=")
        if not reserve or key.strip() != "reserve" or not sep or not value.strip():
            raise UsageError(f"bad --nodes {text!r}: expected FAST/SLOW"
                             + ("[,reserve=SIZE]" if reserve else ""))
        args.fast_reserve = value.strip()
    if nodes.strip() in ("", "auto"):
        return
    fast, sep, slow = nodes.partition("/")
    if not sep:
        raise UsageError(f"bad --nodes {text!r}: expected FAST/SLOW such as 0/2 (or auto)")
    args.fast_nodes = fast.strip() or None if fast.strip() != "auto" else None
    args.slow_nodes = slow.strip() or None if slow.strip() != "auto" else None


def old_spelling(words: list[str], flags: dict[str, str], notes: list[str],
                 new: str) -> tuple[list[str], dict[str, str]]:
    """(words without the earlier release's flags, {key: value} of those given): flags maps
    an old flag (taking one value, as `--flag V` or `--flag=V`) to its key in the new option
    `new`; only words before `--` are looked at. Each flag found leaves a note."""
    from objtier.errors import UsageError

    cut = words.index("--") if "--" in words else len(words)
    out, found, i = [], {}, 0
    while i < cut:
        flag, eq, value = words[i].partition("=")
        if flag in flags:
            if not eq:
                if i + 1 >= cut:
                    raise UsageError(f"argument {flag}: expected one argument")
                value = words[i + 1]
                i += 1
            found[flags[flag]] = value
            notes.append(f"{flag} is now {new}")
        else:
            out.append(words[i])
        i += 1
    return out + words[cut:], found


NODE_FLAGS = {"--fast-nodes": "fast", "--slow-nodes": "slow"}


def rewrite_nodes(words: list[str], notes: list[str], reserve: bool = False) -> list[str]:
    """--fast-nodes A --slow-nodes B [--fast-reserve S] (earlier releases) as --nodes A/B[,...]"""
    flags = dict(NODE_FLAGS, **({"--fast-reserve": "reserve"} if reserve else {}))
    words, found = old_spelling(words, flags, notes,
                                "--nodes FAST/SLOW" + ("[,reserve=SIZE]" if reserve else ""))
    if not found:
        return words
    spec = f"{found.get('fast', '')}/{found.get('slow', '')}"
    if "reserve" in found:
        spec += f",reserve={found['reserve']}"
    return ["--nodes", spec] + words
