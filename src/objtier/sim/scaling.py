"""From samples to estimated accesses: how much of the program each sample stands for, and
whether the samples can support the answer.

A sampled recording holds a thinned access stream. By default a fault-sampled recording is
replayed as the page touches its scan windows estimate (expand_fault_samples, below); with
--param expand=0, and for the other samplers, every sample stands for `k` accesses of its
object, k from the sampler:

  fault  a sample is the first touch of an armed page; the objects table estimates each
         object's touch episodes over its lifetime (est_touches = touch rate x pages x
         lifetime, analysis.objects). k = est_touches / samples of the object = 1 / the share
         of its page-time the sampler watched; objects never watched (and samples in no
         object) get the recording's overall ratio. A swap-in happens at a touch of a
         non-resident page, seen only when that page was armed: with probability 1/k. So the
         simulated swap-ins of an object are scaled by its k too.
  perf   a sample's weight is the sampler's period (accesses per sample) and already counts
         accesses: k = 1 (weights 0 take --param period). Swap-ins are not scaled (a swapped
         page's next access is sampled with a probability the recording does not give): they
         are a lower bound.
  trace  exact: every access is in the trace (or its first --trace-limit ones): k = 1.

The answer cannot be supported when the samples are too few to tell hot pages from cold ones
at the fast tier's size; thresholds below, printed with the warning.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from objtier.trace.format import SOURCE_FAULT, SOURCE_TRACE

# Fewer samples (in tracked objects) than this many per page of the fast tier: the placement
# and swap answer rest on pages nobody sampled.
MIN_SAMPLES_PER_FAST_PAGE = 0.5
# An object of at least this share of the footprint needs this many samples for its access
# share to be known within about +-30 % (Poisson: 1 / sqrt(10)).
LARGE_OBJECT_SHARE = 0.01
MIN_OBJECT_SAMPLES = 10
# A swap-in estimate scaled by more than this (each seen swap-in standing for this many) is
# an extrapolation: said so.
MAX_SWAP_SCALE = 100.0


@dataclass
class SampleScale:
    """How sample counts become estimated accesses for one recording."""

    kind: str                      # "exact", "fault", "perf" or "user" (--param scale)
    per_object: np.ndarray         # k per object (trace.allocations rows), float64
    overall: float                 # k of samples in no object (and the recording's mean)
    description: str               # one line, printed
    exact: bool = False
    swap_scaled: bool = False      # simulated swap-ins are multiplied by per_object
    warnings: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """What absolute figures are: "exact" or "estimate"."""
        return "exact" if self.exact else "estimate"

    def per_sample(self, sample_obj: np.ndarray) -> np.ndarray:
        """k per sample, from the object each falls in (-1: none)."""
        k = np.full(len(sample_obj), self.overall, dtype=np.float64)
        hit = sample_obj >= 0
        k[hit] = self.per_object[sample_obj[hit]]
        return k


def _kind(trace) -> str:
    source = trace.samples.column("source").to_numpy(zero_copy_only=False)
    if not len(source):
        return "exact" if trace.access_counts.num_rows else "none"
    if np.all(source == SOURCE_TRACE):
        return "exact"
    if np.all(source == SOURCE_FAULT):
        return "fault"
    return "perf"


def replay_problem(trace) -> str | None:
    """Why `trace` holds nothing the policies can replay (one line that says what to record),
    or None. Every policy replays accesses with their addresses in time order: an exact
    recording without --trace-limit holds only counts per (object, context), and a sampler
    may have taken no sample at all. Either would replay as a table of zeros."""
    if trace.samples.num_rows:
        return None
    sampler = (trace.processes[0].config.get("OBJTIER_SAMPLER", "") if trace.processes
               else "") or "unknown"
    counts = trace.access_counts
    config = trace.processes[0].config if trace.processes else {}
    limit = config.get("OBJTIER_TRACE_LIMIT", "0") or "0"
    if sampler == "trace" and limit != "0":
        # the address trace holds accesses to tracked objects only (docs/exact.md)
        return (f"the recording's address trace (--trace-limit {int(limit):,}) is empty: none "
                f"of the traced accesses fell in a tracked object "
                f"({trace.allocations.num_rows:,} tracked; objects smaller than --min-size "
                f"{config.get('OBJTIER_MIN_SIZE', '?')} bytes are not): record with a lower "
                f"--min-size")
    if counts.num_rows:
        loads = int(np.asarray(counts.column("loads")).sum(dtype=np.uint64))
        stores = int(np.asarray(counts.column("stores")).sum(dtype=np.uint64))
        return (f"the recording holds exact access counts ({loads:,} loads, {stores:,} "
                f"stores) but no address trace, and every policy replays addresses in time "
                f"order: record again with --sampler trace --trace-limit N (an address trace "
                f"of the first N accesses) or with a sampler (--sampler fault)")
    if sampler == "trace":
        return ("the recording holds neither exact counts nor an address trace (sampler "
                "trace): build the program with objtier cc and record with --sampler trace "
                "--trace-limit N")
    return (f"the recording holds 0 access samples (sampler {sampler}): nothing to replay; "
            f"record a longer run, with a higher --rate, or with --sampler trace --trace-limit "
            f"N on a binary built with objtier cc")


def mapped_problem(sample_obj: np.ndarray, objects: int) -> str | None:
    """Why no policy can place anything (one line), or None: every policy places the pages of
    tracked objects, and none of the samples falls in one (they hit the stack, globals or
    objects below --min-size)."""
    if len(sample_obj) and not np.any(sample_obj >= 0):
        return (f"none of the recording's {len(sample_obj):,} samples falls in one of its "
                f"{objects:,} tracked objects (stack, globals, or objects below --min-size): "
                f"nothing to place; record with a lower --min-size")
    return None


def sample_scale(trace, sample_obj: np.ndarray, objects: int,
                 user_scale: float | None = None) -> SampleScale:
    """The scale of `trace`'s samples (sample_obj: object per sample, -1 = none)."""
    if user_scale is not None:
        return SampleScale("user", np.full(objects, float(user_scale)), float(user_scale),
                           f"every sample weight multiplied by {user_scale:g} (--param scale)")
    kind = _kind(trace)
    ones = np.ones(objects)
    if kind in ("exact", "none"):
        limit = trace.processes[0].config.get("OBJTIER_TRACE_LIMIT", "0") \
            if trace.processes else "0"
        what = "exact accesses (trace sampler)"
        if limit not in ("", "0"):
            what += f": the first {int(limit):,} accesses of the run only (--trace-limit)"
        return SampleScale(kind, ones, 1.0, what, exact=True)
    if kind == "perf":
        return SampleScale("perf", ones, 1.0,
                           "sampled accesses x the sampler's period (sample weights); swap-ins "
                           "are those of sampled accesses only: a lower bound")
    if trace.windows.num_rows == 0:   # fault samples of a recording without scan windows
        return SampleScale("fault-unwindowed", ones, 1.0,
                           "fault samples without scan windows (an older recording): replayed "
                           "as recorded; counts and swap-ins are those of the samples, a lower "
                           "bound")
    from objtier.analysis.objects import object_table

    table = object_table(trace, labels=False)
    est = np.nan_to_num(table.column("est_touches").to_numpy(zero_copy_only=False)
                        .astype(np.float64))
    samples = table.column("samples").to_numpy().astype(np.float64)
    watched = (est > 0) & (samples > 0)
    overall = float(est[watched].sum() / samples[watched].sum()) if watched.any() else 1.0
    overall = max(overall, 1.0)
    k = np.full(objects, overall)
    k[watched] = np.maximum(est[watched] / samples[watched], 1.0)
    return SampleScale("fault", k, overall,
                       f"each fault sample stands for its object's estimated touch episodes per "
                       f"sample (est_touches / samples; {overall:.3g} over the recording): "
                       f"accesses, swap-ins and stall are estimates", swap_scaled=True)


def support_warnings(scale: SampleScale, sample_obj: np.ndarray, sizes: np.ndarray,
                     fast_bytes: int, page_bytes: int, footprint: int) -> list[str]:
    """One line per reason the samples cannot support the answer (empty when they can)."""
    if scale.exact:
        return []
    out = []
    mapped = sample_obj[sample_obj >= 0]
    fast_pages = max(fast_bytes // max(page_bytes, 1), 1)
    per_page = len(mapped) / fast_pages
    if per_page < MIN_SAMPLES_PER_FAST_PAGE:
        out.append(f"{len(mapped):,} samples in tracked objects for a fast tier of "
                   f"{fast_pages:,} pages: {per_page:.2f} per page, below the "
                   f"{MIN_SAMPLES_PER_FAST_PAGE:g} needed to tell its hot pages from cold "
                   f"ones; record longer or with a higher --rate")
    counts = np.bincount(mapped, minlength=len(sizes))
    large = sizes >= LARGE_OBJECT_SHARE * max(footprint, 1)
    thin = int((large & (counts < MIN_OBJECT_SAMPLES)).sum())
    if thin:
        out.append(f"{thin} object(s) of at least {LARGE_OBJECT_SHARE:.0%} of the footprint "
                   f"have fewer than {MIN_OBJECT_SAMPLES} samples: their share of the accesses "
                   f"is not known within +-30 %")
    if scale.swap_scaled and scale.overall > MAX_SWAP_SCALE:
        out.append(f"each simulated swap-in stands for about {scale.overall:.0f} (more than "
                   f"{MAX_SWAP_SCALE:g}): the swap-in estimate is an extrapolation")
    return out


# At most this many synthetic touches are generated (about 40 bytes each in the event array);
# above it the expansion keeps this many and weights each by the excess ratio.
MAX_EXPANDED = 20_000_000
# Objects with at least this share of short forward steps (the objects table's `sequential`)
# are replayed as sweeps.
SWEPT_SHARE = 0.8


def expand_fault_samples(trace, source, bin_ns: int, seed: int = 0) -> tuple[np.ndarray, float]:
    """A synthetic page-touch stream standing for what the fault sampler estimated: for each
    object and time bin, Poisson(est_touches of the object x its share of the object's
    samples in that bin) touches, at uniform times within the bin (and the object's
    lifetime) on uniform pages of the object, or in page order for a swept object. Returns (ACCESS events sorted by time, weight
    per event). Samples in no object are kept as they are, weighted by the overall ratio.

    Why: replaying the thinned samples themselves under-counts swap-ins by far more than the
    sampling ratio (a swap-in needs two sampled touches of one page with an eviction between
    them), so the replay is fed the estimated touches instead; docs/simulator.md."""
    from objtier.analysis.objects import object_table
    from objtier.sim.engine import EV_ACCESS, EVENT, NO_OBJ

    table = object_table(trace, labels=False)
    est = np.nan_to_num(table.column("est_touches").to_numpy(zero_copy_only=False)
                        .astype(np.float64))
    samples = table.column("samples").to_numpy().astype(np.float64)
    watched = (est > 0) & (samples > 0)
    overall = max(float(est[watched].sum() / samples[watched].sum()), 1.0) \
        if watched.any() else 1.0
    est = np.where((est <= 0) & (samples > 0), samples * overall, est)  # sampled, unwatched
    ev = source.sample_ev
    obj = source.sample_obj
    n = source.objects
    t0, t1 = int(source.start_ns), int(source.end_ns) + 1
    bins = max((t1 - t0 + bin_ns - 1) // bin_ns, 1)
    hit = obj >= 0
    b = np.minimum((ev["time_ns"][hit].astype(np.int64) - t0) // bin_ns, bins - 1)
    # sparse (object, bin) cells with samples, sorted by object then bin
    cells, per_cell = np.unique(obj[hit].astype(np.int64) * bins + b, return_counts=True)
    o_cell, b_cell = cells // bins, cells % bins
    expected = est[o_cell] * per_cell / samples[o_cell]
    total = float(expected.sum())
    weight = 1.0
    if total > MAX_EXPANDED:
        weight = total / MAX_EXPANDED
        expected /= weight
    rng = np.random.default_rng(seed)
    reps = rng.poisson(expected)
    o_ev = np.repeat(o_cell, reps)
    b_ev = np.repeat(b_cell, reps)
    alloc = source.alloc_ns.astype(np.int64)
    free = np.where(source.free_ns >= 0, source.free_ns, t1).astype(np.int64)
    lo = np.maximum(t0 + b_ev * bin_ns, alloc[o_ev])
    hi = np.minimum(t0 + (b_ev + 1) * bin_ns, free[o_ev])
    hi = np.maximum(hi, lo + 1)
    times = lo + (rng.random(len(o_ev)) * (hi - lo)).astype(np.int64)
    pages = np.maximum(source.size[o_ev] // 4096, 1)
    offset = (rng.random(len(o_ev)) * pages).astype(np.int64) * 4096
    # swept objects (analysis.sequential: mostly short forward steps) are touched in page order,
    # cycling through the object, as the program does: LRU sees a cyclic sweep, not the random
    # order that would let it keep most of the object
    sequential = np.nan_to_num(table.column("sequential").to_numpy(zero_copy_only=False)
                               .astype(np.float64))
    starts = np.concatenate([[0], np.cumsum(np.bincount(o_ev, minlength=n))]) \
        if len(o_ev) else np.zeros(n + 1, dtype=np.int64)
    for o in np.flatnonzero(sequential >= SWEPT_SHARE):
        first, last = int(starts[o]), int(starts[o + 1])
        if last - first < 2:
            continue
        block = slice(first, last)   # o_ev is grouped by object, bins ascending
        order = np.lexsort((times[block], b_ev[block]))   # by bin, then time
        times[block] = times[block][order]
        offset[block] = (np.arange(last - first) % pages[first]) * 4096
    out = np.zeros(len(o_ev), dtype=EVENT)
    out["time_ns"] = times.astype(np.uint64)
    out["addr"] = source.addr[o_ev].astype(np.uint64) + offset.astype(np.uint64)
    out["size"] = 1
    out["obj"] = o_ev.astype(np.uint32)
    space_of_obj = np.zeros(max(n, 1), dtype=np.uint32)
    space_of_obj[source.alloc_ev["obj"].astype(np.int64)] = source.alloc_ev["space"]
    out["space"] = space_of_obj[o_ev]
    out["type"] = EV_ACCESS
    rest = ev[~hit].copy()
    rest["obj"] = NO_OBJ
    merged = np.concatenate([out, rest])
    return merged[np.argsort(merged["time_ns"], kind="stable")], weight
