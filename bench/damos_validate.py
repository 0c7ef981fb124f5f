"""Parse an `objtier export-damos` scheme set with damo's own classes (offline: nothing is
applied and DAMON's sysfs is never opened) and print how damo reads each scheme.

    python bench/damos_validate.py --damo-site DIR SCHEMES.json

DIR is the site-packages directory holding damo's `damo/` package (pip install damo into any
virtual environment; damo is not a dependency of objtier). Exit status 1 when damo cannot
parse the file, or when a scheme does not come back with the action and address range the
file gives.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--damo-site", required=True, type=Path)
    parser.add_argument("schemes", type=Path)
    args = parser.parse_args()
    sys.path.insert(0, str(args.damo_site / "damo"))
    import _damon  # noqa: E402  (damo's module, found through --damo-site)

    doc = json.loads(args.schemes.read_text())
    kdamond = _damon.Kdamond.from_kvpairs(doc["kdamonds"][0])
    ctx = kdamond.contexts[0]
    print(f"ops {ctx.ops}, targets {[t.pid for t in ctx.targets]}, sample "
          f"{ctx.intervals.sample:g} us, aggr {ctx.intervals.aggr:g} us")
    bad = 0
    wanted = doc["kdamonds"][0]["contexts"][0]["schemes"]
    for scheme, want in zip(ctx.schemes, wanted):
        rng = want["filters"][0]["address_range"]
        got = scheme.filters[0].address_range
        same = (scheme.action == want["action"] and got.start == rng["start"]
                and got.end == rng["end"] and scheme.filters[0].matching is False)
        bad += not same
        print(f"{'ok ' if same else 'BAD'} {scheme.action:8} "
              f"{scheme.access_pattern.to_str(False).replace(chr(10), ' | ')} | "
              f"{scheme.filters[0]}")
    print(f"{len(ctx.schemes) - bad} of {len(ctx.schemes)} scheme(s) read back as written")
    return 1 if bad or len(ctx.schemes) != len(wanted) else 0


if __name__ == "__main__":
    raise SystemExit(main())
