"""`objtier objects run.otr [--sort density|samples|size] [--top N]`: the objects table.

A recording made with --sampler trace shows exact loads, stores and LLC-model misses per
object and per calling context (objects_view decides which table a recording shows). Then the
coverage line (how much of the footprint the objects hold, analysis.coverage) and, when the
recording sampled small blocks, the allocation sites (analysis.sites)."""

from __future__ import annotations

from objtier import bounds as B

NAME = "objects"
HELP = "print the objects of a recording with their sample (or exact) access metrics"


def add_arguments(parser) -> None:
    parser.add_argument("trace", help="recording directory (run.otr/) or one .otr file")
    parser.add_argument("--sort", choices=("density", "samples", "size"), default="samples",
                        help="samples = the primary count: samples, or exact LLC-model "
                        "misses of a --sampler trace recording (default)")
    parser.add_argument("--top", type=B.int_option(1), default=20, metavar="N",
                        help="rows (default 20)")
    parser.add_argument("--no-symbols", action="store_true",
                        help="skip symbolization of allocation call stacks")


def run(args) -> int:
    from objtier.console import make_console

    from objtier.objects_view import objects_view
    from objtier.report.summary import contexts_rich_table, objects_rich_table
    from objtier.trace import open_trace

    trace = open_trace(args.trace)
    view = objects_view(trace, labels=not args.no_symbols)
    console = make_console()
    console.print(objects_rich_table(view.table, args.top, args.sort, exact=view.exact))
    if view.exact:
        from objtier.exact.tree import exact_context_table

        contexts = exact_context_table(trace, labels=not args.no_symbols)
        console.print(contexts_rich_table(contexts, args.top))
    console.print(view.outside_line)
    from objtier.analysis.coverage import coverage, coverage_line
    from objtier.analysis.sites import has_sites, site_table, sites_periods

    console.print(coverage_line(coverage(trace)))
    if has_sites(trace):
        from objtier.report.summary import sites_rich_table

        from objtier.analysis.site_watch import has_watched_sites, rank_by_access

        sites = site_table(trace, labels=not args.no_symbols)
        watched = has_watched_sites(trace)
        console.print(sites_rich_table(rank_by_access(sites) if watched else sites, args.top,
                                       sites_periods(trace), by_access=watched))
    if not args.no_symbols:
        from objtier.objects_view import missing_line_note

        note = missing_line_note(trace, view.table)
        if note:
            console.print(f"note: {note}")
    return 0
