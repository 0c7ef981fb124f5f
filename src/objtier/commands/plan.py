"""`objtier plan`: choose which objects go to fast memory and write plan.json."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from objtier import bounds as B
from objtier.commands._swap_options import add_backfill, backfill
from objtier.errors import UsageError

NAME = "plan"
HELP = "choose which objects go to fast memory (whole, split, per phase) and write a plan"

PAGE_BYTES_MAX = 1 << 30   # the largest page a placement can be planned in (1 GiB huge page)
EXPONENT_MAX = 16.0        # halving's exponents: beyond this accesses^alpha overflows doubles

# --param KEY=VALUE: (what reads it, argparse-style type, the attribute of args, the default
# shown, what it is); the options of earlier releases (--alpha, --max-cells, --min-phase-ms, ...)
# are rewritten to these by rewrite_argv
PARAMS = {
    "alpha": ("halving", B.float_option(0, EXPONENT_MAX), "alpha", 1,
              f"accesses exponent, 0 to {EXPONENT_MAX:g}"),
    "beta": ("halving", B.float_option(0, EXPONENT_MAX), "beta", 1,
             f"size exponent, 0 to {EXPONENT_MAX:g}"),
    "max_cells": ("exact", B.int_option(1), "max_cells", "N",
                  "largest objects x pages table before falling back to rank"),
    "min_phase_ms": ("phases", B.float_option(0, B.INTERVAL_MS_MAX, unit="ms"), "min_phase_ms",
                     10, "merge phases shorter than this per execution"),
    "similarity": ("phases", B.float_option(0, 1), "similarity", 0.9,
                   "merge a phase whose access mix has this cosine similarity to its parent's"),
    "hint_budget": ("phases", B.int_option(0, B.COUNT_MAX, "phases"), "hint_budget", "N",
                    "at most this many phases with their own plan"),
}
PARAM_DEFAULTS = {"alpha": None, "beta": None, "max_cells": None, "min_phase_ms": 10.0,
                  "similarity": 0.9, "hint_budget": None}
_NOTES: list[str] = []   # deprecation notes, printed after the plan is written


def rewrite_argv(words: list[str]) -> list[str]:
    """--alpha X, --beta X, --max-cells N, --min-phase-ms MS, --similarity S and
    --hint-budget N (earlier releases) as --param KEY=VALUE, each with a note."""
    _NOTES.clear()   # one command line, one set of notes
    out: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        flag, eq, value = word.partition("=")
        key = flag[2:].replace("-", "_") if flag.startswith("--") else ""
        if key in PARAMS and word != "--":
            if not eq:
                if i + 1 >= len(words):
                    raise UsageError(f"argument {flag}: expected one argument")
                value = words[i + 1]
                i += 1
            try:   # refused as argparse refused it, under the name given
                PARAMS[key][1](value)
            except argparse.ArgumentTypeError as error:
                raise UsageError(f"argument {flag}: {error}") from None
            out += ["--param", f"{key}={value}"]
            _NOTES.append(f"{flag} is now --param {key}=VALUE")
        elif word == "--":
            out += words[i:]
            break
        else:
            out.append(word)
        i += 1
    return out


def _read_params(args: argparse.Namespace) -> None:
    """--param KEY=VALUE into args (args.alpha, args.min_phase_ms, ...), checked."""
    for name, value in PARAM_DEFAULTS.items():
        setattr(args, name, value)
    for item in args.param:
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in PARAMS:
            raise UsageError(f"--param {item!r}: expected KEY=VALUE with KEY one of "
                             f"{', '.join(PARAMS)}")
        try:
            setattr(args, PARAMS[key][2], PARAMS[key][1](value.strip()))
        except argparse.ArgumentTypeError as error:
            raise UsageError(f"--param {key}: {error}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", nargs="+",
                        help="a recording (run.otr/) or an object table (.parquet, .csv); "
                        "--algo pages and auto take several recordings of one program and sum "
                        "their samples per page")
    parser.add_argument("--fast", metavar="SIZE|PCT",
                        help="fast-tier budget: a size (8G, 512M, 1.5GiB, bytes) or a "
                        "percentage of the footprint (70%%)")
    parser.add_argument("--local", metavar="SIZE|PCT",
                        help="swap tier: the memory the program will run in (run --local), a "
                        "size or a percentage of its recorded footprint; the kernel model then "
                        "chooses what to lock among candidates (locking nothing, --algo's "
                        "placement, spill, its own) by predicted swap-ins, and prints them")
    parser.add_argument("--algo", default=None,
                        choices=["rank", "spill", "reuse", "halving", "exact", "pages", "auto"],
                        help="placement algorithm (default: halving; with --local, auto: the "
                        "kernel model chooses among candidates, as compare's default does — "
                        "any other --algo is kept, and the model only predicts it)")
    parser.add_argument("--page-bytes", type=B.int_option(1, PAGE_BYTES_MAX, "bytes"),
                        default=None,
                        help="placement granularity in bytes (default: the trace's page size)")
    parser.add_argument("--footprint", default=None, metavar="SIZE",
                        help="footprint a percentage refers to (default: peak live bytes, "
                        "else the sum of object sizes)")
    parser.add_argument("--no-lifetimes", action="store_true",
                        help="count every object against the budget as if all were live at "
                        "once (default: when the table has alloc_ns/free_ns, the budget bounds "
                        "the fast bytes live at the same moment)")
    add_backfill(parser)
    parser.add_argument("--phases", action="store_true", help="one hot set per program phase")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="an algorithm's or the phase merge's setting (repeatable): "
                        + "; ".join(f"{k}={v[3]} ({v[0]}: {v[4]})" for k, v in PARAMS.items()))
    parser.add_argument("--phase-table", default=None, help="phases of an object-table input "
                        "(.parquet/.csv: phase, parent, start_ns, end_ns)")
    parser.add_argument("--phase-accesses", default=None, help="per-phase accesses of an "
                        "object-table input (.parquet/.csv: phase, object, accesses)")
    parser.add_argument("--sensitivity", default=None, metavar="FILE",
                        help="rank the objects measured in FILE (sensitivity.csv of `objtier "
                        "sweep per-object`) by measured loss per byte instead of sampled "
                        "accesses (docs/planning.md)")
    parser.add_argument("--per-rank", action="store_true",
                        help="a multi-process recording of an MPI-style program: one section "
                        "per rank (OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID) instead of "
                        "one per program")
    parser.add_argument("--exe", default=None, help="the program's binary (default: from the "
                        "recording)")
    parser.add_argument("--explain", action="store_true",
                        help="print why each object went where it went")
    parser.add_argument("--explain-rows", type=B.int_option(0), default=40,
                        help="rows of --explain per phase (0 = all; default 40)")
    parser.add_argument("--sites", type=B.int_option(0, 256), default=0, metavar="N",
                        help="also place the N small-block sites with the most sampled "
                        "accesses per byte fast, through arenas (objtier.plan.sites)")
    parser.add_argument("--cold-sites", type=B.int_option(0, 256), default=0, metavar="N",
                        help="also place the N largest small-block sites with no sampled "
                        "access slow, through arenas")
    parser.add_argument("-o", "--output", default="plan.json", help="plan file (plan.json)")
    parser.add_argument("--text", default=None, metavar="PATH",
                        help="also write the plan's text form (for OBJTIER_PLAN)")


def _read_table_file(path: Path) -> Any:
    """A .parquet or .csv file as a pyarrow.Table."""
    try:
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq
            return pq.read_table(path)
        if path.suffix == ".csv":
            import pyarrow.csv as pacsv
            convert = pacsv.ConvertOptions(column_types={"context_key": "string",
                                                         "label": "string", "phase": "string",
                                                         "parent": "string"})
            return pacsv.read_csv(path, convert_options=convert)
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error}".splitlines()[0]) from None
    except Exception as error:  # pyarrow raises ArrowInvalid and friends for bad content
        raise UsageError(f"cannot read {path}: {error}".splitlines()[0]) from None
    raise UsageError(f"{path}: expected a recording directory, a .parquet or a .csv file")


def _profile(args: argparse.Namespace):
    """The pipeline.Profile of the input: a recording (the first and, for an algorithm that
    counts samples per page, any further ones of the same program) or an object table."""
    from objtier.plan import pipeline as planning
    from objtier.plan import NEEDS_PAGE_SAMPLES

    path = Path(args.input[0])
    for given in args.input:
        if not Path(given).exists():
            raise UsageError(f"{given} does not exist")
    more = [Path(p) for p in args.input[1:]]
    if more and args.algo not in NEEDS_PAGE_SAMPLES:
        raise UsageError(f"several inputs are summed per page for --algo "
                         f"{'/'.join(sorted(NEEDS_PAGE_SAMPLES))} only; "
                         f"--algo {args.algo} takes one")
    if more and not all(p.is_dir() for p in [path] + more):
        raise UsageError("several inputs must all be recordings (run.otr/ directories)")
    if path.is_file() and path.suffix in (".parquet", ".csv"):
        phases = accesses = None
        if args.phases:
            if not (args.phase_table and args.phase_accesses):
                raise UsageError("--phases with an object-table input needs --phase-table and "
                                 "--phase-accesses")
            phases = _read_table_file(Path(args.phase_table))
            accesses = _read_table_file(Path(args.phase_accesses))
        return planning.Profile(_read_table_file(path), exe=args.exe, source=str(path),
                                executions=phases, phase_accesses=accesses)
    return planning.read_recordings([path] + more, phases=args.phases, exe=args.exe,
                                    min_phase_ns=int(args.min_phase_ms * 1e6),
                                    similarity=args.similarity)


def recorded_settings(profile) -> dict[str, int] | None:
    """The runtime settings the (first) recording was made with that `run` must repeat: the
    stack depth (context keys hash that many frames) and the smallest tracked allocation
    [bytes]; None for an object-table input or a recording that does not say."""
    if not getattr(profile, "traces", None) or not profile.traces[0].processes:
        return None
    config = profile.traces[0].processes[0].config
    try:
        return {"stack_depth": int(config["OBJTIER_STACK_DEPTH"]),
                "min_size": int(config["OBJTIER_MIN_SIZE"])}
    except (KeyError, ValueError):
        return None


def _processes(profile) -> list[Any]:
    """The first recording's processes, for the plan's per-program sections ([] for an
    object-table input)."""
    if not profile.traces:
        return []
    from objtier.analysis.processes import process_programs

    return process_programs(profile.traces[0])


def _params(args: argparse.Namespace) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if args.sensitivity and (args.phases or args.algo in ("pages", "auto")):
        raise UsageError("--sensitivity ranks whole objects over the whole run: not with "
                         "--phases or --algo pages/auto")
    if args.alpha is not None or args.beta is not None:
        if args.algo != "halving":
            raise UsageError("--param alpha and beta apply to --algo halving only")
        if args.alpha is not None:
            params["alpha"] = args.alpha
        if args.beta is not None:
            params["beta"] = args.beta
    if args.max_cells is not None:
        if args.algo != "exact":
            raise UsageError("--param max_cells applies to --algo exact only")
        params["max_cells"] = args.max_cells
    return params


def _with_sensitivity(args: argparse.Namespace, objects: Any) -> tuple[Any, list[str]]:
    """(objects re-weighted by a --sensitivity table, warnings); unchanged without one."""
    if not args.sensitivity:
        return objects, []
    from objtier.plan.sensitivity import read_sensitivity, weight_by_sensitivity

    return weight_by_sensitivity(objects, read_sensitivity(args.sensitivity))


def _model_memory(args: argparse.Namespace, profile: Any, peak: int | None):
    """--local: the ModelMemory the kernel model plans for (None without --local)."""
    if args.local is None:
        return None
    from objtier.plan.pipeline import ModelMemory, other_bytes, recorded_footprint

    footprint = peak or recorded_footprint(profile) or profile.footprint_bytes()
    local = planner_budget_bytes(args.local, footprint)
    return ModelMemory(local, other_bytes(footprint, profile.objects, profile.traces),
                       footprint_bytes=footprint,
                       choose=getattr(args, "model_chooses", True))


def planner_budget_bytes(text: str, footprint: int) -> int:
    from objtier import plan as planner

    return planner.parse_budget(text, footprint).bytes


def model_lines(made: Any, memory: Any) -> list[str]:
    """What `plan --local` prints of the kernel model's choice."""
    if made.choice is None:
        return [f"kernel model not used: {made.model_note}"]
    c = made.choice
    mib = 1 << 20
    sites = sum(s.get("lock_bytes") or 0 for s in c.sites or [])
    locking = (f", locking {c.placement.used_bytes / mib:.1f} MiB" if c.placement is not None
               else " (one plan per phase)") + (f" + {sites / mib:.0f} MiB of sites' arenas"
                                                if sites else "")
    out = [f"kernel model (estimated): local {memory.local_bytes / mib:.1f} MiB, of it "
           f"{c.other_bytes / mib:.1f} MiB held outside tracked objects; chose "
           f"'{c.name}'{locking}: {c.chosen.swapins:,.0f} swap-ins predicted, "
           f"{c.nothing.swapins:,.0f} with nothing locked",
           "  candidates: " + ", ".join(f"{k} {v:,.0f}" for k, v in c.predictions.items())]
    if made.model_note:
        out.append(f"  {made.model_note}")
    return out


def run(args: argparse.Namespace) -> int:
    from objtier import plan as planner
    from objtier.plan.pipeline import make_plan, write_plan_files

    # --local without --algo, or with --algo auto: the kernel model chooses, as in compare
    args.model_chooses = args.algo in (None, "auto")
    _read_params(args)
    args.algo = args.algo or ("auto" if args.local is not None else "halving")
    params = _params(args)
    profile = _profile(args)
    # a --sensitivity table re-weights the objects every placement below reads (cached)
    profile.objects, measured_notes = _with_sensitivity(args, profile.objects)
    peak = B.parse_bytes(args.footprint, "--footprint", 1) if args.footprint else None
    if (args.fast is None) == (args.local is None):
        raise UsageError("give one of --fast SIZE|PCT (a fast-tier budget) or --local SIZE|PCT "
                         "(the memory the program will run in, planned by the kernel model)")
    memory = _model_memory(args, profile, peak)
    # with --local the footprint is the model's (the recorded resident + swapped peak), so
    # that `run --local PCT` of this plan means the same memory
    budget = planner.parse_budget(
        args.fast if args.fast is not None else str(memory.local_bytes),
        memory.footprint_bytes if memory is not None else profile.footprint_bytes(peak))
    made = make_plan(profile, args.algo, budget, phases=args.phases,
                     backfill=backfill(args, swap_tier=args.local is not None),
                     lifetimes=not args.no_lifetimes,
                     page_bytes=args.page_bytes, params=params,
                     min_phase_ns=int(args.min_phase_ms * 1e6), similarity=args.similarity,
                     hint_budget=args.hint_budget, source=" ".join(args.input) + (
                         f" --sensitivity {args.sensitivity}" if args.sensitivity else ""),
                     processes=_processes(profile), per_rank=args.per_rank, memory=memory)
    plan, exe = made.plan, profile.exe
    recorded = recorded_settings(profile)
    if recorded is not None:
        plan["recording"] = recorded   # run repeats them (no --stack-depth needed)
    plan["warnings"].extend(measured_notes)
    if plan["binary"]["path"] and plan["binary"]["size"] is None:
        plan["warnings"].append(f"the program's binary {exe} is not on this machine: the plan "
                                f"has no build-id to check against")
    if not exe:
        plan["warnings"].append("the program's binary is unknown (pass --exe): the plan "
                                "cannot be checked against the binary it is used with")
    site_lines = []
    if args.sites or args.cold_sites:
        from objtier.plan.sites import add_sites
        site_lines = add_sites(plan, getattr(profile, "traces", None) or [], args.sites,
                               args.cold_sites)
    write_plan_files(plan, args.output, args.text)
    for line in site_lines:
        print(line)

    from objtier.objects_view import accesses_basis
    from objtier.plan.explain import explain, explain_phases, summary_line
    raw = profile.table
    basis = accesses_basis(raw)
    loads_stores = None
    if "loads" in raw.column_names and "stores" in raw.column_names:   # exact counts
        loads_stores = {int(o): (int(ld), int(st)) for o, ld, st in zip(
            *(raw.column(c).to_pylist() for c in ("object", "loads", "stores")))}
    if args.explain:
        if args.phases:
            explain_phases(made.result.merge)
        for phase, placement in made.placements.items():
            explain(made.objects, placement, phase if args.phases else None, args.explain_rows,
                    basis=basis, loads_stores=loads_stores)
    for phase, placement in made.placements.items():
        print(summary_line(placement, phase if args.phases else None, basis))
    if getattr(profile, "traces", None):   # how much of the footprint the plan can see
        from objtier.analysis.coverage import coverage, coverage_line

        print(coverage_line(coverage(profile.traces[0])))
    if memory is not None:
        for line in model_lines(made, memory):
            print(line)
    for i, program in enumerate(plan.get("programs", [])):
        rank = "" if program["rank"] is None else f" rank {program['rank']}"
        count = sum(1 for e in plan["entries"] if e["program"] == i)
        print(f"section {i}: {program['path']}{rank} (build id "
              f"{(program['build_id'] or 'none')[:12]}, {len(program['pids'])} process(es)): "
              f"{count} entries")
    print(f"plan written to {args.output}" + (f" and {args.text}" if args.text else ""))
    for warning in plan["warnings"]:
        sys.stderr.write(f"objtier plan: warning: {warning}\n")
    for note in dict.fromkeys(_NOTES):
        sys.stderr.write(f"objtier plan: note: {note}; the old spelling goes in the next "
                         f"release\n")
    _NOTES.clear()
    return 0
