"""Access streams and model settings that pin the C-AMAT model's counts down: the regression
cases of test_model_golden.py. The expected counts in fixtures/model_golden.json were written
by `python -m tests.camat.model_cases` against the model before its hot path was rebuilt
(commit ff5b14e); a change to the model that moves any count fails that test. One case was
rewritten since, on purpose: "sequential-haswell" (every 7th access depends on the one three
before) when an access waiting for its producer stopped holding back the accesses after it
(out-of-order issue past a dependence; its cycles went from 233 052 to 139 040).

Streams are made by numpy's PCG64 from fixed seeds (stable across numpy releases)."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from objtier.camat.model import ACCESS_DTYPE, COUNTS_DTYPE, SimConfig, hierarchy, simulate

GOLDEN = Path(__file__).resolve().parent / "fixtures" / "model_golden.json"
INT_FIELDS = [f for f in COUNTS_DTYPE.names if COUNTS_DTYPE[f].kind == "u"]
FLOAT_FIELDS = [f for f in COUNTS_DTYPE.names if COUNTS_DTYPE[f].kind == "f"]


def stream(kind: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = np.zeros(n, dtype=ACCESS_DTYPE)
    a["flags"] = 8 << 8
    a["object"] = rng.integers(0, 3, n)
    a["region"] = (np.arange(n) // 997) % 2
    if kind == "random":
        a["addr"] = 0x10000000 + rng.integers(0, 1 << 24, n, dtype=np.uint64) // 8 * 8
        a["flags"] |= (rng.random(n) < 0.3).astype(np.uint16)
    elif kind == "chase":
        a["addr"] = 0x10000000 + rng.integers(0, 1 << 24, n, dtype=np.uint64) // 8 * 8
        a["dep"] = 1
    elif kind == "sequential":
        a["addr"] = 0x20000000 + np.arange(n, dtype=np.uint64) * 8
        a["flags"] |= (np.arange(n) % 4 == 0).astype(np.uint16)
        a["dep"] = (np.arange(n) % 7 == 0) * 3
    elif kind == "mixed":
        pick = rng.random(n)
        hot = 0x100000 + rng.integers(0, 4096, n, dtype=np.uint64) * 8
        seq = 0x10000000 + np.arange(n, dtype=np.uint64) * 8
        rnd = 0x40000000 + rng.integers(0, 1 << 25, n, dtype=np.uint64) // 8 * 8
        a["addr"] = np.where(pick < 0.7, hot, np.where(pick < 0.9, seq, rnd))
        a["flags"] |= (rng.random(n) < 0.25).astype(np.uint16)
    elif kind == "sharing":  # 4 threads writing neighbouring words of few lines
        a["core"] = np.arange(n) % 4
        word = rng.integers(0, 64, n, dtype=np.uint64)
        a["addr"] = 0x300000 + word * 8 + np.where(rng.random(n) < 0.5, 0, 0x10000 + word * 64)
        a["flags"] |= (rng.random(n) < 0.4).astype(np.uint16)
    a["core"] = a["core"] if kind == "sharing" else (np.arange(n) // 50) % (
        2 if kind == "mixed" else 1)
    return a


# name -> (stream kind, accesses, seed, preset, overrides, local pages, pinned object 0)
CASES = {
    "random-skylake": ("random", 40_000, 1, "skylake", {}, 0, False),
    "chase-small": ("chase", 20_000, 2, "small", {}, 0, False),
    "sequential-haswell": ("sequential", 40_000, 3, "haswell", {}, 0, False),
    "mixed-2core-zen3": ("mixed", 40_000, 4, "zen3", {}, 0, False),
    "mixed-2core-lag": ("mixed", 40_000, 5, "small", {"reorder": 0, "lag": 64}, 0, False),
    "sharing-4core": ("sharing", 40_000, 6, "small", {}, 0, False),
    "random-far": ("random", 30_000, 7, "small", {"far_cycles": 2000}, 600, False),
    "random-far-pinned": ("random", 30_000, 8, "small", {"far_cycles": 2000, "far_mshrs": 2},
                          600, True),
    "chase-narrow": ("chase", 20_000, 9, "small", {"issue_width": 1, "window": 16}, 0, False),
}


def run_case(name: str):
    kind, n, seed, preset, over, local, pin = CASES[name]
    a = stream(kind, n, seed)
    cores = int(a["core"].max()) + 1
    cfg = SimConfig(replace(hierarchy(preset), **over), cores, 3, 2, local_pages=local)
    if pin:
        cfg = replace(cfg, pinned=np.array([1, 0, 0], dtype=np.uint8), pinned_pages=100)
    return simulate(a, cfg)


def as_dict(counts) -> dict:
    def rows(arr):
        return [{f: (int(r[f]) if f in INT_FIELDS else float(r[f])) for f in COUNTS_DTYPE.names}
                for r in arr.reshape(-1)]

    return {"cycles": counts.cycles, "totals": rows(counts.totals),
            "by_object": rows(counts.by_object), "by_region": rows(counts.by_region)}


def main() -> None:
    doc = {name: as_dict(run_case(name)) for name in CASES}
    GOLDEN.write_text(json.dumps(doc, indent=None, separators=(",", ":")) + "\n")
    print(f"wrote {GOLDEN}", file=sys.stderr)


if __name__ == "__main__":
    main()
