"""Which per-page measure finds the pages worth locking on the swap tier? On an exact trace
(`objtier cc` + the trace sampler), lock the top pages by a score and count swap-ins with the
simulator (`objtier simulate --policy object --plan`, a plan of "pages" entries).

Scores (one per whole page of every object):
  counts        accesses (the oracle's measure)
  windows:MS    distinct MS-millisecond windows of the trace in which the page was touched
  arms:K:MS     the fault sampler, emulated: the page armed K times at random instants, a point
                for each arm followed by a touch within MS ms (trace time); ties at random
  arms:K:MS:C   the same, scores averaged over chunks of C pages

    .venv/bin/python bench/page_scores.py TRACE.otr --fast BYTES [--share 0.9]
        [--scores counts,windows:10,windows:100,arms:15:50,arms:50:50,arms:15:50:16] [-o DIR]

Pages are taken by falling score up to share x fast bytes (the rest of memory is left to the
simulated LRU, as the oracle policy does). Prints one line per score: swap-ins.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

PY = sys.executable


def whole_pages(trace):
    """Per sample: (object row, whole-page index) or -1; objects' first whole page numbers."""
    from objtier.analysis.mapping import sample_objects

    obj = sample_objects(trace)
    addr = trace.samples.column("addr").to_numpy()
    a_addr = trace.allocations.column("addr").to_numpy().astype(np.uint64)
    a_size = trace.allocations.column("size").to_numpy().astype(np.uint64)
    lo = (a_addr + np.uint64(4095)) >> np.uint64(12)
    hi = (a_addr + a_size) >> np.uint64(12)
    page = addr.astype(np.uint64) >> np.uint64(12)
    ok = obj >= 0
    ok[ok] &= (page[ok] >= lo[obj[ok]]) & (page[ok] < hi[obj[ok]])
    rel = np.full(len(addr), -1, dtype=np.int64)
    rel[ok] = (page[ok] - lo[obj[ok]]).astype(np.int64)
    return np.where(ok, obj, -1), rel, (hi - np.minimum(lo, hi)).astype(np.int64)


def scores(trace, spec: str, obj, rel, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(object, page, score) for every sampled whole page under score `spec`."""
    ok = obj >= 0
    o, p = obj[ok].astype(np.int64), rel[ok]
    t = trace.samples.column("time_ns").to_numpy()[ok].astype(np.int64)
    span = int(p.max()) + 1
    key = o * span + p
    parts = spec.split(":")
    if parts[0] == "counts":
        keys, value = np.unique(key, return_counts=True)
        value = value.astype(np.float64)
    elif parts[0] == "windows":
        window = (t - t.min()) // int(float(parts[1]) * 1e6)
        pairs = np.unique(np.stack([key, window], axis=1), axis=0)
        keys, value = np.unique(pairs[:, 0], return_counts=True)
        value = value.astype(np.float64)
    elif parts[0] == "arms":
        arms, dwell = int(parts[1]), int(float(parts[2]) * 1e6)
        order = np.lexsort((t, key))
        ks, ts = key[order], t[order]
        keys, start = np.unique(ks, return_index=True)
        end = np.append(start[1:], len(ks))
        index = np.searchsorted(keys, ks)
        composite = index * (1 << 42) + (ts - t.min())
        value = np.zeros(len(keys))
        for _ in range(arms):
            arm = rng.integers(t.min(), t.max(), len(keys))
            j = np.searchsorted(composite, np.arange(len(keys)) * (1 << 42) + (arm - t.min()))
            jj = np.minimum(j, len(ks) - 1)
            value += (j < end) & (ts[jj] - arm < dwell)
        if len(parts) > 3:
            chunk = int(parts[3])
            group = (keys // span) * span + (keys % span) // chunk
            _, inverse = np.unique(group, return_inverse=True)
            value = (np.bincount(inverse, weights=value) / np.bincount(inverse))[inverse]
        value = value + rng.random(len(keys)) * 1e-3
    else:
        raise SystemExit(f"unknown score {spec!r}")
    return keys // span, keys % span, value


def pages_plan(trace, objects, pages_total, o, p, value, budget_pages: int) -> dict:
    """A plan whose entries lock the top pages of each object ("pages" tier)."""
    from objtier.plan.pages import runs

    top = np.lexsort((p, o, -value))[:budget_pages]
    keys = objects.column("context_key").to_pylist()
    occ = objects.column("occurrence").to_pylist()
    size = objects.column("size").to_pylist()
    entries = []
    for row in np.unique(o[top]).tolist():
        chosen = p[top][o[top] == row]
        if not keys[row] or not len(chosen):
            continue
        r = runs(chosen) * 4096
        entries.append({"phase": "*", "context_key": keys[row], "occurrence": occ[row],
                        "size_min": size[row], "size_max": size[row], "objects": 1,
                        "tier": "pages", "fast_bytes": int(r[:, 1].sum()),
                        "ranges": r.tolist()})
    return {"format": "objtier-plan", "version": 1,
            "budget": {"bytes": budget_pages * 4096, "page_bytes": 4096},
            "phases": [{"name": "*", "target": "*"}], "entries": entries}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--fast", type=int, required=True, help="fast (local) bytes")
    parser.add_argument("--share", type=float, default=0.9, help="share of it locked (0.9)")
    parser.add_argument("--scores", default="counts,windows:10,windows:100,arms:15:50,"
                                            "arms:50:50,arms:15:50:16")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-o", "--output", default="bench-out/page-scores")
    args = parser.parse_args()
    from objtier.analysis.objects import object_table
    from objtier.trace import open_trace

    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    trace = open_trace(args.trace)
    objects = object_table(trace, labels=False)
    obj, rel, pages_total = whole_pages(trace)
    budget = int(args.fast * args.share) // 4096
    rows = []
    for spec in args.scores.split(","):
        o, p, value = scores(trace, spec, obj, rel, np.random.default_rng(args.seed))
        plan = pages_plan(trace, objects, pages_total, o, p, value, budget)
        name = spec.replace(":", "_")
        (out / f"plan-{name}.json").write_text(json.dumps(plan))
        sim_dir = out / f"sim-{name}"
        subprocess.run([PY, "-m", "objtier", "simulate", args.trace, "--fast", str(args.fast),
                        "--preset", "zram", "--policy", "object", "--plan",
                        str(out / f"plan-{name}.json"), "-o", str(sim_dir)],
                       check=True, capture_output=True)
        with open(sim_dir / "simulate.csv") as f:
            swap_ins = int(next(csv.DictReader(f))["swap_ins"])
        rows.append((spec, swap_ins))
        print(f"{spec}\t{swap_ins}", flush=True)
    with open(out / "page-scores.csv", "w") as f:
        csv.writer(f).writerows([("score", "swap_ins"), *rows])
    return 0


if __name__ == "__main__":
    sys.exit(main())
