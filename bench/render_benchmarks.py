"""Render docs/benchmarks.md from the results files in bench/results/ (objtier.bench_results).

    .venv/bin/python bench/render_benchmarks.py [--results bench/results] [-o docs/benchmarks.md]
        [--check]

--check writes nothing: exit 1 when the page differs from what the results files give.
A bad results file is a one-line error (exit 2).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from objtier import bench_results
from objtier.errors import ObjtierError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=bench_results.RESULTS_DIR)
    parser.add_argument("-o", "--output", type=Path, default=bench_results.PAGE)
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the page is not what the results files give")
    args = parser.parse_args(argv)
    try:
        text = bench_results.render(bench_results.read_all(args.results))
    except ObjtierError as error:
        print(f"render_benchmarks: {error}", file=sys.stderr)
        return error.exit_code
    if args.check:
        current = args.output.read_text() if args.output.exists() else ""
        if current != text:
            print(f"render_benchmarks: {args.output} is not what {args.results} gives "
                  "(run make bench-doc)", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text)
    print(f"written {args.output} from {len(list(args.results.glob('*.json')))} results files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
