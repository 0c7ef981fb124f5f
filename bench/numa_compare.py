"""`objtier compare --tier numa` in the two-node guest: kernel tiering vs objtier plan, mechanics.

    .venv/bin/python bench/numa_compare.py [--repeat 3] [--hot 32] [--cold 96] [--secs 6]
        [--left-free 100] [--budget 48M] [-o bench-out/numa-compare]

Boots its own guest (or uses the one `objtier testbed up` started), holds hugetlb pages on node 0
so that about --left-free MiB stay free, and runs the hot/cold program (objtier.experiments.
numa_hotcold) through objtier.experiments.compare_numa. Prints a Markdown table of per-run vmstat
deltas and per-object slow-node shares for docs/benchmarks.md. In the emulated guest both nodes
have the same speed: the numbers are mechanics (pages moved, where pages are), never timing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    from objtier.experiments.compare_numa import (NumaCompareSettings, guest,
                                                  node_free_bytes, run_numa_compare)
    from objtier.experiments.numa_hotcold import build_hotcold

    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hot", type=int, default=32)
    ap.add_argument("--cold", type=int, default=96)
    ap.add_argument("--secs", type=float, default=6)
    ap.add_argument("--left-free", type=int, default=100)
    ap.add_argument("--budget", default="48M")
    ap.add_argument("-o", "--output", default=str(REPO / "bench-out" / "numa-compare"))
    args = ap.parse_args()
    out = Path(args.output).resolve()
    exe = build_hotcold(out.parent / "numa-bin" / "hotcold")
    started = time.monotonic()
    with guest(say=lambda t: print(f"# {t}", file=sys.stderr)) as tb:
        free = node_free_bytes(tb, [0])
        settings = NumaCompareSettings(local=args.budget, repeat=args.repeat, rate=20000,
                                       output=out, force=True,
                                       fast_reserve=max(free - (args.left_free << 20), 0))
        result = run_numa_compare([str(exe), str(args.hot), str(args.cold), str(args.secs)],
                                  settings, testbed=tb,
                                  say=lambda t: print(f"# {t}", file=sys.stderr))
    s = result.summary
    print(f"guest kernel {s['guest']['kernel']}; node 0 free during runs "
          f"{s['fast_capacity_bytes'] >> 20} MiB; budget {s['budget']['bytes'] >> 20} MiB; "
          f"program hot {args.hot} MiB + cold {args.cold} MiB, {args.secs:g} s re-touch loop; "
          f"{args.repeat} runs per arm; {time.monotonic() - started:.0f} s in all\n")
    print("| arm | runs | hint faults | promoted (pgpromote_success) | demoted (pgdemote_*) "
          "| migrated | hot slow share | cold slow share |")
    print("|---|---|---|---|---|---|---|---|")
    per = {}
    for o in result.objects:
        per.setdefault((o["config"], o["label"].split()[0]), []).append(o["slow_share"])

    def rng(values):
        values = [v for v in values if v is not None]
        if not values:
            return "-"
        lo, hi = min(values), max(values)
        f = (lambda v: str(v)) if isinstance(lo, int) else (lambda v: f"{v:.3g}")
        return f(lo) if lo == hi else f"{f(lo)}–{f(hi)}"

    for config in ("kernel", "objtier"):
        rows = [r for r in result.rows if r.config == config and r.ok]
        print(f"| {config} | {len(rows)} | {rng([r.numa_hint_faults for r in rows])} | "
              f"{rng([r.pgpromote_success for r in rows])} | {rng([r.pgdemote for r in rows])} | "
              f"{rng([r.numa_pages_migrated for r in rows])} | "
              f"{rng(per.get((config, 'alloc_hot'), []))} | "
              f"{rng(per.get((config, 'alloc_cold'), []))} |")
    walls = {c: statistics.median([r.wall_s for r in result.rows if r.config == c])
             for c in ("kernel", "objtier")}
    print(f"\nplan: hot {[o['planned'] for o in result.objects if 'alloc_hot' in o['label']][0]}, "
          f"cold {[o['planned'] for o in result.objects if 'alloc_cold' in o['label']][0]}; "
          f"median wall s kernel {walls['kernel']:.2f}, objtier {walls['objtier']:.2f} "
          f"(emulated: not a timing result)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
