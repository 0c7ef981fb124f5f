"""`objtier report run.otr [-o DIR] [--top N]`: the characterization page plus CSV/Parquet."""

from __future__ import annotations

from pathlib import Path

from objtier import bounds as B

NAME = "report"
HELP = "characterize a recording: objects, pages, tiers, counters (HTML + CSV/Parquet)"


def add_arguments(parser) -> None:
    parser.add_argument("trace", help="recording directory (run.otr/) or one .otr file; or a "
                        "`objtier sweep` output directory (writes its sweep.html again)")
    parser.add_argument("-o", "--output", metavar="DIR",
                        help="output directory (default: <trace>.report next to the trace)")
    parser.add_argument("--top", type=B.int_option(1), default=10, metavar="N",
                        help="objects in the summary table and Fig. 6 (default 10)")
    parser.add_argument("--no-symbols", action="store_true",
                        help="skip symbolization of allocation call stacks")


def run(args) -> int:
    from objtier.console import make_console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from objtier.report.build import build_report
    from objtier.report.summary import objects_rich_table
    from objtier.outputs import make_private_dir, private_umask
    from objtier.trace import open_trace

    trace_path = Path(args.trace)
    from objtier.sweep.page import is_sweep_dir, rewrite_sweep_page

    if is_sweep_dir(trace_path):
        print(f"report: {rewrite_sweep_page(trace_path)}", flush=True)
        return 0
    out = Path(args.output) if args.output else trace_path.with_name(
        trace_path.name.removesuffix(".otr") + ".report")
    console = make_console(stderr=True)
    trace = open_trace(trace_path)
    make_private_dir(out, "report directory", exist_ok=True)
    with private_umask(), Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        task = progress.add_task("reading the trace", total=None)
        report = build_report(trace, out, top=args.top, labels=not args.no_symbols,
                              progress=lambda text: progress.update(task, description=text))
    stdout = make_console()
    stdout.print(objects_rich_table(report.objects, args.top, exact=report.view.exact))
    stdout.print(report.view.outside_line)
    if report.coverage_line:
        stdout.print(report.coverage_line)
    print(f"report: {report.index_html}", flush=True)  # one unwrapped line, for scripts
    return 0
