"""`objtier plan`: choose which objects go to fast memory and write plan.json."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from objtier import bounds as B
from objtier.errors import EnvironmentProblem, TraceError, UsageError

NAME = "plan"
HELP = "choose which objects go to fast memory (whole, split, per phase) and write a plan"

DEFAULT_PAGE_BYTES = 4096
PAGE_BYTES_MAX = 1 << 30   # the largest page a placement can be planned in (1 GiB huge page)
EXPONENT_MAX = 16.0        # halving's exponents: beyond this accesses^alpha overflows doubles


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", nargs="+",
                        help="a recording (run.otr/) or an object table (.parquet, .csv); "
                        "--algo pages and auto take several recordings of one program and sum "
                        "their samples per page")
    parser.add_argument("--fast", required=True, metavar="SIZE|PCT",
                        help="fast-tier budget: a size (8G, 512M, 1.5GiB, bytes) or a "
                        "percentage of the footprint (70%%)")
    parser.add_argument("--algo", default="halving",
                        choices=["rank", "spill", "reuse", "halving", "exact", "pages", "auto"],
                        help="placement algorithm (default: halving)")
    parser.add_argument("--alpha", type=B.float_option(0, EXPONENT_MAX), default=None,
                        help=f"halving: accesses exponent (1; 0 to {EXPONENT_MAX})")
    parser.add_argument("--beta", type=B.float_option(0, EXPONENT_MAX), default=None,
                        help=f"halving: size exponent (1; 0 to {EXPONENT_MAX})")
    parser.add_argument("--max-cells", type=B.int_option(1), default=None,
                        help="exact: largest objects x pages table before falling back to rank")
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
    parser.add_argument("--no-backfill", action="store_true",
                        help="stop at the first object that does not fit whole: no colder "
                             "object fills the gap (for the swap tier, where unlocked memory "
                             "goes to the hottest pages anyway)")
    parser.add_argument("--phases", action="store_true", help="one hot set per program phase")
    parser.add_argument("--min-phase-ms", type=B.float_option(0, B.INTERVAL_MS_MAX, unit="ms"),
                        default=10.0,
                        help="phases: merge phases shorter than this per execution (10)")
    parser.add_argument("--similarity", type=B.float_option(0, 1), default=0.9,
                        help="phases: merge a phase whose access mix has this cosine "
                        "similarity to its parent's (0.9)")
    parser.add_argument("--hint-budget", type=B.int_option(0, B.COUNT_MAX, "phases"),
                        default=None,
                        help="phases: at most this many phases with their own plan")
    parser.add_argument("--phase-table", default=None, help="phases of an object-table input "
                        "(.parquet/.csv: phase, parent, start_ns, end_ns)")
    parser.add_argument("--phase-accesses", default=None, help="per-phase accesses of an "
                        "object-table input (.parquet/.csv: phase, object, accesses)")
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


def _trace_exe(trace: Any, table: Any) -> str | None:
    """The traced program: the exe of the process whose objects have the most accesses
    (a wrapper shell or launcher has few), else of the first process that names one."""
    processes = [p for p in getattr(trace, "processes", None) or [] if getattr(p, "exe", "")]
    if not processes:
        return None
    if "pid" in getattr(table, "column_names", ()) and len(processes) > 1:
        pid = table.column("pid").to_numpy(zero_copy_only=False)
        acc = table.column("accesses").to_numpy(zero_copy_only=False)
        by_pid = {p.pid: float(acc[pid == p.pid].sum()) for p in processes}
        return str(max(processes, key=lambda p: by_pid[p.pid]).exe)
    return str(processes[0].exe)


def _load(args: argparse.Namespace) -> tuple[Any, Any, Any, str | None, int, Any]:
    """(object table, phase table, phase accesses, exe, page_bytes, recordings or None) from
    the input; the recordings (the first and any further ones of the same program) only for
    a recording planned with an algorithm that counts samples per page (NEEDS_PAGE_SAMPLES)."""
    path = Path(args.input[0])
    for given in args.input:
        if not Path(given).exists():
            raise UsageError(f"{given} does not exist")
    more = [Path(p) for p in args.input[1:]]
    from objtier.plan import NEEDS_PAGE_SAMPLES

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
        return _read_table_file(path), phases, accesses, args.exe, DEFAULT_PAGE_BYTES, None
    try:
        from objtier.analysis.view import objects_view
        from objtier.trace import open_trace
    except ImportError:
        raise EnvironmentProblem("this objtier cannot read recordings yet (objtier.trace / "
                                 "objtier.analysis.objects missing); pass an object table "
                                 "(.parquet or .csv) instead") from None
    trace = open_trace(path)
    phases = accesses = None
    view = objects_view(trace)   # exact counts for a --sampler trace recording
    table = view.table
    if view.exact:
        from objtier.exact.phases import phase_tables

        if args.phases:
            phases, accesses = phase_tables(trace, min_ns=int(args.min_phase_ms * 1e6),
                                            similarity=args.similarity)
    else:
        if args.phases:
            from objtier.analysis.phases import phase_accesses, phase_table

            # in the table's unit (estimated touches for the fault sampler)
            accesses = phase_accesses(trace, table.column("accesses").to_numpy())
            phases = phase_table(trace)
    pages = [p.page_bytes for p in getattr(trace, "processes", []) if p.page_bytes]
    page = min(pages) if pages else DEFAULT_PAGE_BYTES
    exe = args.exe or _trace_exe(trace, table)
    traces = [trace] + _same_program(more, exe) if args.algo in NEEDS_PAGE_SAMPLES else None
    from objtier.analysis.processes import process_programs

    args.processes = process_programs(trace)   # for the plan's per-program sections
    return table, phases, accesses, exe, page, traces


def _same_program(paths: list[Path], exe: str | None) -> list[Any]:
    """The further recordings, opened; each must have recorded the first one's program (its
    objects are matched to the first's by allocation context, which another binary does not
    share)."""
    from objtier.analysis.objects import object_table
    from objtier.trace import open_trace

    traces = []
    for path in paths:
        trace = open_trace(path)
        other = _trace_exe(trace, object_table(trace, labels=False))
        if exe and other and Path(other).name != Path(exe).name:
            raise UsageError(f"{path} recorded {other}, not {exe}: several recordings must be "
                             f"of one program")
        traces.append(trace)
    return traces


def _params(args: argparse.Namespace) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if args.alpha is not None or args.beta is not None:
        if args.algo != "halving":
            raise UsageError("--alpha and --beta apply to --algo halving only")
        if args.alpha is not None:
            params["alpha"] = args.alpha
        if args.beta is not None:
            params["beta"] = args.beta
    if args.max_cells is not None:
        if args.algo != "exact":
            raise UsageError("--max-cells applies to --algo exact only")
        params["max_cells"] = args.max_cells
    return params


def run(args: argparse.Namespace) -> int:
    from objtier import plan as planner

    params = _params(args)
    raw, phases, accesses, exe, page, traces = _load(args)
    merge_params = None
    if args.algo in planner.NEEDS_PAGE_SAMPLES:
        if traces is None:
            raise UsageError(f"--algo {args.algo} needs a recording (samples per page), not an "
                             f"object table")
        params["backfill"] = not args.no_backfill
        if args.phases:  # every phase's plan ranks the pages in one order (phase_page_order)
            from objtier.analysis.page_samples import phase_page_order

            def merge_params(merged) -> dict[str, Any]:
                return {"page_samples": phase_page_order(traces, merged)}
        else:
            from objtier.analysis.page_samples import merged_page_samples

            params["page_samples"] = merged_page_samples(traces)
    objects = planner.object_table(raw)
    page = args.page_bytes or page
    peak = B.parse_bytes(args.footprint, "--footprint", 1) if args.footprint else None
    foot = planner.footprint(objects.size, objects.alloc_ns, objects.free_ns, peak)
    budget = planner.parse_budget(args.fast, foot)
    if args.no_lifetimes:
        # lifetimes still set the footprint of a percentage budget (above), as before
        from dataclasses import replace
        objects = replace(objects, alloc_ns=None, free_ns=None)
    algo = planner.algorithm(args.algo)
    if args.phases:
        if phases is None:
            raise TraceError(f"{args.input[0]} has no phases")
        result: Any = planner.plan_phases(
            objects, phases, accesses, algo, budget.bytes, page,
            min_duration_ns=int(args.min_phase_ms * 1e6), similarity=args.similarity,
            hint_budget=args.hint_budget, merge_params=merge_params, **params)
        if args.no_backfill:
            result.placements.update({name: planner.without_backfill(objects, placed)
                                      for name, placed in result.placements.items()})
        placements = result.placements
    else:
        result = algo(objects, budget.bytes, page, **params)
        if args.no_backfill:
            result = planner.without_backfill(objects, result)
        placements = {planner.ROOT: result}
    binary = planner.identity(exe) if exe else None
    sections = planner.program_sections(raw, objects, getattr(args, "processes", []),
                                        args.per_rank)
    plan = planner.build_plan(objects, result, budget, binary, source=" ".join(args.input),
                              sections=sections)
    if binary and binary["size"] is None:
        plan["warnings"].append(f"the program's binary {exe} is not on this machine: the plan "
                                f"has no build-id to check against")
    if not exe:
        plan["warnings"].append("the program's binary is unknown (pass --exe): the plan "
                                "cannot be checked against the binary it is used with")
    planner.write_plan(plan, args.output)
    if args.text:
        from objtier.outputs import write_private

        write_private(args.text, planner.to_text(plan), "text plan")

    from objtier.analysis.view import accesses_basis
    from objtier.plan.explain import explain, explain_phases, summary_line
    basis = accesses_basis(raw)
    loads_stores = None
    if "loads" in raw.column_names and "stores" in raw.column_names:   # exact counts
        loads_stores = {int(o): (int(ld), int(st)) for o, ld, st in zip(
            *(raw.column(c).to_pylist() for c in ("object", "loads", "stores")))}
    if args.explain:
        if args.phases:
            explain_phases(result.merge)
        for phase, placement in placements.items():
            explain(objects, placement, phase if args.phases else None, args.explain_rows,
                    basis=basis, loads_stores=loads_stores)
    for phase, placement in placements.items():
        print(summary_line(placement, phase if args.phases else None, basis))
    for i, program in enumerate(plan.get("programs", [])):
        rank = "" if program["rank"] is None else f" rank {program['rank']}"
        count = sum(1 for e in plan["entries"] if e["program"] == i)
        print(f"section {i}: {program['path']}{rank} (build id "
              f"{(program['build_id'] or 'none')[:12]}, {len(program['pids'])} process(es)): "
              f"{count} entries")
    print(f"plan written to {args.output}" + (f" and {args.text}" if args.text else ""))
    for warning in plan["warnings"]:
        sys.stderr.write(f"objtier plan: warning: {warning}\n")
    return 0
