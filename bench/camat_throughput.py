#!/usr/bin/env python3
"""Throughput of the C-AMAT timing model (native, one thread): accesses simulated per second
on synthetic streams of known shape and on a recorded stream.

    .venv/bin/python bench/camat_throughput.py [--accesses N] [--repeat R] [--recording DIR]
                                               [--baseline NATIVE_DIR] [--sample PERIOD
                                                [--sample-unit U] [--sample-warm W]]

Prints one line per stream: median CPU seconds of R runs (process time, so that other load on
a shared machine does not count) and M accesses/s per core (the model is single-threaded), with
the spread of the R rates as min..max. With --baseline (a directory holding
lib/libobjtier_camat.so, e.g. an install of an older commit), every repeat runs the baseline
library and the built one back to back on the same stream (interleaved A/B) and the line adds
the baseline's rate, the median of the per-repeat speedups, and whether both libraries give the
same counts on the stream (integers equal, shares of cycles within 1e-9). With --sample, every
repeat runs the exact model and the sampled one (one unit of U measured accesses per PERIOD)
back to back on the same stream, and the line adds the sampled rate, the median of the
per-repeat speedups, whether accesses and misses are equal at every level, and the largest
relative error of the sampled C-AMAT (and of any of C-AMAT, C_M, pAMP) against the exact ones
over the levels the sample supports (objtier.camat.sampling.compare), whether all are within
objtier.camat.sampling.TOLERANCE, and the units' 95 % confidence half-width of the L1 C-AMAT.
With --sample and --baseline, every repeat also runs the baseline library's sampled model on the
same stream, beside the built one's (after it in even repeats, before it in odd ones: A B, B A),
and the line adds the baseline's sampled rate, the median of the per-repeat sampled speedups,
and whether the two libraries' sampled results are identical (every count, share and unit bit
for bit)."""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from objtier.camat.model import (ACCESS_DTYPE, DEFAULT_UNIT, Sampling, SimConfig, default_warm,
                                 hierarchy, simulate)
from objtier.camat.sampling import compare, max_error, unit_interval, within_tolerance


def synthetic(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    a = np.zeros(n, dtype=ACCESS_DTYPE)
    a["flags"] = 8 << 8
    if kind == "l1-resident loop":        # 16 KiB working set: L1 hits
        a["addr"] = 0x100000 + (np.arange(n) % 2048) * 8
    elif kind == "sequential 8-byte":     # 8 accesses per line, streaming through memory
        a["addr"] = 0x10000000 + np.arange(n, dtype=np.uint64) * 8
    elif kind == "random 64 MiB":         # independent random loads
        a["addr"] = 0x10000000 + rng.integers(0, 1 << 26, n, dtype=np.uint64) // 8 * 8
    elif kind == "pointer chase 64 MiB":  # dependent random loads
        a["addr"] = 0x10000000 + rng.integers(0, 1 << 26, n, dtype=np.uint64) // 8 * 8
        a["dep"] = 1
    elif kind == "mix 80/15/5, 2 threads":
        pick = rng.random(n)
        hot = 0x100000 + rng.integers(0, 4096, n, dtype=np.uint64) * 8
        seq = 0x10000000 + np.arange(n, dtype=np.uint64) * 8
        rnd = 0x40000000 + rng.integers(0, 1 << 27, n, dtype=np.uint64) // 8 * 8
        a["addr"] = np.where(pick < 0.8, hot, np.where(pick < 0.95, seq, rnd))
        a["core"] = np.arange(n) % 2
        a["flags"] |= (rng.random(n) < 0.25).astype(np.uint16)
    return a


def _use_library(native_dir) -> None:
    from objtier.camat import model

    model.NATIVE_DIR = native_dir
    model._library.cache_clear()


def timed_sampled(stream: np.ndarray, cores: int, repeat: int, sample, current,
                  baseline=None) -> tuple:
    """CPU seconds per run, exact and sampled alternating within each repeat (and the
    baseline's sampled run beside the sampled one: after it in even repeats, before it in odd
    ones); the last runs' counts, and whether every repeat's sampled results of the two
    libraries were identical (None without a baseline)."""
    cfg = SimConfig(hierarchy("skylake"), cores, 1, int(stream["region"].max()) + 1)
    exact_s, sampled_s, base_s, last, same = [], [], [], (None, None), None
    for r in range(repeat):
        _use_library(current)
        t = time.process_time()
        ex = simulate(stream, cfg)
        exact_s.append(time.process_time() - t)
        runs = [(current, sampled_s), (baseline, base_s)] if baseline is not None else [
            (current, sampled_s)]
        results = {}
        for native_dir, times in runs if r % 2 == 0 else runs[::-1]:  # A B, then B A
            _use_library(native_dir)
            t = time.process_time()
            results[native_dir] = simulate(stream, cfg, sample=sample)
            times.append(time.process_time() - t)
        sm = results[current]
        last = (ex, sm)
        if baseline is not None:
            same = identical(sm, results[baseline]) and same is not False
    _use_library(current)
    return exact_s, sampled_s, base_s, last, same


def identical(a, b) -> bool:
    """Are two results the same bit for bit (counts, shares, cycles, sample info, units)?"""
    parts = [(a.totals, b.totals), (a.by_object, b.by_object), (a.by_region, b.by_region)]
    if a.units is not None or b.units is not None:
        parts.append((a.units, b.units))
    return (a.cycles == b.cycles and a.sample == b.sample
            and all(x is not None and y is not None and x.tobytes() == y.tobytes()
                    for x, y in parts))


def timed(stream: np.ndarray, cores: int, repeat: int, libraries: list) -> list[list[float]]:
    """CPU seconds per run, one list per library; the libraries alternate within each repeat."""
    cfg = SimConfig(hierarchy("skylake"), cores, 1, int(stream["region"].max()) + 1)
    out: list[list[float]] = [[] for _ in libraries]
    for _ in range(repeat):
        for i, native_dir in enumerate(libraries):
            _use_library(native_dir)
            t = time.process_time()  # CPU time: the machine is shared, wall time is not ours
            simulate(stream, cfg)
            out[i].append(time.process_time() - t)
    return out


def same_counts(stream: np.ndarray, cores: int, libraries: list) -> bool:
    """Do the two libraries give the same counts on stream (integers equal, shares of cycles
    within 1e-9)?"""
    cfg = SimConfig(hierarchy("skylake"), cores, 1, int(stream["region"].max()) + 1)
    runs = []
    for native_dir in libraries:
        _use_library(native_dir)
        runs.append(simulate(stream, cfg))
    a, b = runs
    if a.cycles != b.cycles:
        return False
    for part in ("totals", "by_object", "by_region"):
        x, y = getattr(a, part), getattr(b, part)
        for f in x.dtype.names:
            if x.dtype[f].kind == "f":
                if not np.allclose(x[f], y[f], rtol=1e-9, atol=1e-6):
                    return False
            elif not np.array_equal(x[f], y[f]):
                return False
    return True


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--accesses", type=int, default=5_000_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--recording", help="a recording with an access stream (run.otr/)")
    p.add_argument("--baseline", help="NATIVE_DIR with lib/libobjtier_camat.so to compare with")
    p.add_argument("--library", help="NATIVE_DIR of the library to measure (default: the "
                                     "built one, src/objtier/_native)")
    p.add_argument("--only", help="comma-separated starts of the stream names to run, e.g. "
                                  "'random,mix' (default: all)")
    p.add_argument("--sample", type=int, metavar="PERIOD",
                   help="also time the sampled model: one unit per PERIOD accesses")
    p.add_argument("--sample-unit", type=int, default=DEFAULT_UNIT, metavar="U")
    p.add_argument("--verbose", action="store_true", help="--sample: the errors per level")
    p.add_argument("--sample-warm", type=int, metavar="W",
                   help="default: objtier.camat.model.default_warm of the skylake preset")
    args = p.parse_args()
    from pathlib import Path

    from objtier.camat import model

    current = Path(args.library) if args.library else model.NATIVE_DIR
    libraries = [current]
    if args.baseline:
        libraries = [Path(args.baseline), current]
    names = ["l1-resident loop", "sequential 8-byte", "random 64 MiB", "pointer chase 64 MiB",
             "mix 80/15/5, 2 threads"]
    if args.recording:
        names.append(f"recorded {args.recording}")
    if args.only:
        wanted = {w.strip() for w in args.only.split(",")}
        names = [k for k in names if any(k.startswith(w) for w in wanted if w)]

    def make(name: str) -> np.ndarray:  # one stream in memory at a time
        if not name.startswith("recorded "):
            return synthetic(name, args.accesses, np.random.default_rng(1))
        from objtier.camat.stream import load_stream
        from objtier.trace import open_trace

        a = load_stream(open_trace(args.recording)).accesses.copy()
        a["object"] = 0  # the code regions stay: the sampled model's strata
        return a

    sample = None
    if args.sample:
        warm = args.sample_warm if args.sample_warm is not None else default_warm(
            hierarchy("skylake"))
        sample = Sampling(args.sample, args.sample_unit, warm)
        sample.check()
        print(f"sampled: period {sample.period}, unit {sample.unit}, warm-up {sample.warm} "
              f"({100 * (sample.unit + 2 * sample.warm) / sample.period:.2f} % timed)")
    head = f"{'stream':32s} {'accesses':>10s} {'median s':>9s} {'M acc/s':>8s}  range"
    if sample:
        head += (f"  {'sampled M acc/s':>15s} {'range':>11s} {'speedup':>8s}  counts  "
                 f"{'C-AMAT err':>10s} {'any err':>7s}  tolerance  L1 C-AMAT ci95")
        if args.baseline:
            head += f"  {'baseline sampled':>16s} {'range':>11s} {'vs baseline':>11s}  results"
    elif args.baseline:
        head += f"  {'baseline M acc/s':>16s} {'speedup (median)':>16s}  counts"
    print(head)
    for name in names:
        stream = make(name)
        cores = int(stream["core"].max()) + 1
        if sample:
            times, stimes, btimes, (ex, sm), same = timed_sampled(
                stream, cores, args.repeat, sample, current,
                Path(args.baseline) if args.baseline else None)
        else:
            runs = timed(stream, cores, args.repeat, libraries)
            times = runs[-1]
        med = statistics.median(times)
        rates = sorted(len(stream) / t / 1e6 for t in times)
        line = (f"{name:32s} {len(stream):10d} {med:9.3f} {len(stream) / med / 1e6:8.1f}  "
                f"{rates[0]:.1f}..{rates[-1]:.1f}")
        if args.baseline and not sample:
            base = statistics.median(runs[0])
            speedup = statistics.median(b / t for b, t in zip(runs[0], times))
            line += f"  {len(stream) / base / 1e6:16.2f} {speedup:15.2f}x"
            line += "  equal" if same_counts(stream, cores, libraries) else "  DIFFER"
        if sample:
            srates = sorted(len(stream) / t / 1e6 for t in stimes)
            speedup = statistics.median(e / t for e, t in zip(times, stimes))
            rows = compare(ex, sm)
            equal = all(r["accesses_equal"] and r["misses_equal"] for r in rows)
            err, err_camat = max_error(rows), max_error(rows, "camat")
            ci = unit_interval(sm.units, sm.levels)[0]["camat_ci95_relative"]
            line += (f"  {len(stream) / statistics.median(stimes) / 1e6:15.1f} "
                     f"{srates[0]:5.1f}..{srates[-1]:<5.1f} {speedup:7.2f}x  "
                     f"{'equal ' if equal else 'DIFFER'}  "
                     f"{'-' if err_camat is None else f'{100 * err_camat:9.2f}%'} "
                     f"{'-' if err is None else f'{100 * err:6.2f}%'}  "
                     f"{'within   ' if within_tolerance(rows) else 'OUTSIDE  '}  "
                     f"{'-' if ci is None else f'±{100 * ci:.2f}%'}")
            if btimes:
                brates = sorted(len(stream) / t / 1e6 for t in btimes)
                vs = statistics.median(b / t for b, t in zip(btimes, stimes))
                line += (f"  {len(stream) / statistics.median(btimes) / 1e6:16.1f} "
                         f"{brates[0]:5.1f}..{brates[-1]:<5.1f} {vs:10.2f}x  "
                         f"{'identical' if same else 'DIFFER'}")
        print(line, flush=True)
        if sample and args.verbose:
            for r in rows:
                print("    " + "  ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}"
                                         for k, v in r.items()))
        del stream


if __name__ == "__main__":
    main()
