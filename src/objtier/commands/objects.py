"""`objtier objects run.otr [--sort density|samples|size] [--top N]`: the objects table."""

from __future__ import annotations

from objtier import bounds as B

NAME = "objects"
HELP = "print the objects of a recording with their sample metrics"


def add_arguments(parser) -> None:
    parser.add_argument("trace", help="recording directory (run.otr/) or one .otr file")
    parser.add_argument("--sort", choices=("density", "samples", "size"), default="samples")
    parser.add_argument("--top", type=B.int_option(1), default=20, metavar="N",
                        help="rows (default 20)")
    parser.add_argument("--no-symbols", action="store_true",
                        help="skip symbolization of allocation call stacks")


def run(args) -> int:
    from objtier.console import make_console

    from objtier.analysis.objects import object_table, sample_objects, unmapped_count
    from objtier.report.summary import objects_rich_table
    from objtier.trace import open_trace

    trace = open_trace(args.trace)
    mapped = sample_objects(trace)
    table = object_table(trace, mapped, labels=not args.no_symbols)
    console = make_console()
    console.print(objects_rich_table(table, args.top, args.sort))
    console.print(f"{len(mapped)} samples; {unmapped_count(mapped)} outside every tracked object")
    return 0
