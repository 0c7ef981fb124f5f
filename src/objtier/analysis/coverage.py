"""How much of a program's footprint its tracked objects cover, and what holds the rest.

coverage(trace) reads the counters timeline (record/counters.py): the footprint is the peak of
proc.rss_bytes + proc.swap_bytes (resident plus swapped memory of the recorded process), and
the tracked objects' bytes are the bytes of the objects live at the time of that peak
(requested sizes, resident or not; a share never exceeds 100 %). The rest is split where the
recording can tell, at the same counters sample:

  small      anonymous memory (proc.rss_anon_bytes + swap) less the tracked objects and the
             main thread's stack: heap in blocks below --min-size, allocator slack, thread
             stacks and other anonymous mappings the runtime does not track
  stack      the main thread's stack (VmStk: its mapped size, an upper bound)
  file       code and mapped files (RssFile: resident file-backed pages)
  shmem      shared memory (RssShmem)
  page_cache the memory cgroup's page cache (memcg.cache), only when the recording ran in a
             cgroup with a limit; file page cache is never part of RSS

Recordings made before the split counters existed give only the total outside the objects.
coverage_of(footprint, trace, basis) is the same for a footprint measured elsewhere (compare's
unlimited run): the objects' bytes are then their peak of live bytes.

When the recording has sampled small-block sites (analysis.sites), `sites_bytes` is their
estimated live bytes at the peak (sampled blocks times the sampling period: an estimate).

All sizes are bytes; times are seconds since trace.start_ns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# parts of the footprint outside the tracked objects, in the order lines print them
PART_NAMES = {
    "small": "heap in small blocks and other anonymous memory",
    "stack": "main stack",
    "file": "code and mapped files",
    "shmem": "shared memory",
}
WATCHING = ("fault", "pageout", "wp")   # window samplers: they arm tracked objects' pages only


@dataclass(frozen=True)
class Coverage:
    """The footprint and what holds it [bytes]."""

    footprint_bytes: int | None    # None: the recording has no RSS counters
    basis: str                     # what the footprint is ("peak RSS + swap", ...)
    objects_bytes: int             # tracked objects live at the peak (or their peak)
    peak_s: float | None = None    # time of the footprint's peak [s since start]
    parts: dict[str, int] = field(default_factory=dict)   # PART_NAMES keys -> bytes
    page_cache_bytes: int | None = None
    sites_bytes: int | None = None  # estimated small-block bytes of sampled sites
    unwatched_by: str = ""          # window sampler that watches tracked objects only
    watched_sites_bytes: int | None = None  # arena chunks of watched sites (record --sites)

    @property
    def covered_bytes(self) -> int:
        """Tracked-object bytes counted against the footprint (never above it)."""
        if self.footprint_bytes is None:
            return self.objects_bytes
        return min(self.objects_bytes, self.footprint_bytes)

    @property
    def share(self) -> float | None:
        """Fraction of the footprint the tracked objects cover; None without a footprint."""
        if not self.footprint_bytes:
            return None
        return self.covered_bytes / self.footprint_bytes

    @property
    def outside_bytes(self) -> int | None:
        if self.footprint_bytes is None:
            return None
        return self.footprint_bytes - self.covered_bytes

    @property
    def with_sites_share(self) -> float | None:
        """Fraction of the footprint the tracked objects and the sampled small-block sites
        cover together (an estimate: sites are sampled; never above 1); None without a
        footprint or without sites."""
        if not self.footprint_bytes or self.sites_bytes is None:
            return None
        return min(self.covered_bytes + self.sites_bytes, self.footprint_bytes) / \
            self.footprint_bytes

    @property
    def anonymous_share(self) -> float | None:
        """with_sites_share over the memory objects and sites can hold: the footprint less
        code and mapped files and shared memory (parts `file`, `shmem`); None where unknown."""
        if self.with_sites_share is None or "file" not in self.parts:
            return None
        anonymous = self.footprint_bytes - self.parts.get("file", 0) - self.parts.get("shmem", 0)
        if anonymous <= 0:
            return None
        return min(self.covered_bytes + self.sites_bytes, anonymous) / anonymous

    def as_dict(self) -> dict:
        """JSON-ready (summary.json's `coverage`)."""
        return {"footprint_bytes": self.footprint_bytes, "basis": self.basis,
                "objects_bytes": self.objects_bytes, "covered_share": self.share,
                "outside_bytes": self.outside_bytes, "peak_s": self.peak_s,
                "parts_bytes": dict(self.parts), "page_cache_bytes": self.page_cache_bytes,
                "sites_bytes_estimated": self.sites_bytes,
                "with_sites_share_estimated": self.with_sites_share,
                "anonymous_with_sites_share_estimated": self.anonymous_share,
                "unwatched_by": self.unwatched_by or None,
                "watched_sites_bytes": self.watched_sites_bytes}


def root_pids(trace) -> set[int]:
    """The recorded processes the counters describe: those whose parent was not recorded (the
    program the recorder launched, across its execs)."""
    processes = list(getattr(trace, "processes", []))
    pids = {p.pid for p in processes}
    return {p.pid for p in processes if p.ppid not in pids} or pids


def _live_bytes_at(allocs, frees, t_ns: int, pids: set[int] | None) -> int:
    """Bytes of the ranges of allocs live at t_ns (analysis.mapping.live_ranges)."""
    import numpy as np

    from objtier.analysis.mapping import live_ranges

    if not allocs.num_rows:
        return 0
    r = live_ranges(allocs, frees)
    live = (r.t_begin <= np.uint64(t_ns)) & (r.t_end > np.uint64(t_ns))
    if pids is not None:
        live &= np.isin(r.pid, np.fromiter(pids, np.uint32, len(pids)))
    return int((r.end[live] - r.start[live]).sum())


def _peak_live_bytes(allocs, frees) -> int:
    import numpy as np

    from objtier.analysis.mapping import live_ranges
    from objtier.plan.budget import peak_live_bytes

    if not allocs.num_rows:
        return 0
    r = live_ranges(allocs, frees)
    free_ns = np.where(r.t_end == np.iinfo(np.uint64).max, -1, r.t_end.astype(np.int64))
    return peak_live_bytes((r.end - r.start).astype(np.int64), r.t_begin.astype(np.int64),
                           free_ns)


def unwatched_by(trace) -> str:
    """The window sampler(s) the recording used, which watch tracked objects only ("" for
    perf and trace, whose samples fall anywhere)."""
    samplers = {p.config.get("OBJTIER_SAMPLER", "") for p in getattr(trace, "processes", [])}
    return "/".join(sorted(s for s in samplers if s in WATCHING))


def _sites_bytes(trace, t_ns: int | None) -> int | None:
    from objtier.analysis.sites import has_sites, live_site_bytes

    if not has_sites(trace):
        return None
    return live_site_bytes(trace, t_ns)


def _watched_bytes(trace, t_ns: int | None) -> int | None:
    """Bytes of the watched sites' arena chunks made by t_ns (all when None; analysis.
    site_watch): pages the pageout sampler arms besides the tracked objects'."""
    import numpy as np

    regions = getattr(trace, "site_regions", None)
    if regions is None or not regions.num_rows:
        return None
    made = regions.column("time_ns").to_numpy() <= np.uint64(t_ns if t_ns is not None
                                                             else np.iinfo(np.uint64).max)
    return int(regions.column("len").to_numpy()[made].sum())


def coverage(trace) -> Coverage:
    """The footprint of the recorded program and its split (module docstring)."""
    import numpy as np

    from objtier.analysis.timeline import counter_series

    series = counter_series(trace.counters, trace.start_ns)
    watch = unwatched_by(trace)
    if "proc.rss_bytes" not in series or not len(series["proc.rss_bytes"][0]):
        return Coverage(None, "no RSS counters in the recording",
                        _peak_live_bytes(trace.allocations, trace.frees),
                        sites_bytes=_sites_bytes(trace, None), unwatched_by=watch,
                        watched_sites_bytes=_watched_bytes(trace, None))
    t, rss, _ = series["proc.rss_bytes"]

    def at(name: str) -> np.ndarray | None:
        if name not in series or not len(series[name][0]):
            return None
        ts, values, _ = series[name]
        return np.interp(t, ts, values)

    swap = at("proc.swap_bytes")
    total = rss + (swap if swap is not None else 0.0)
    i = int(np.argmax(total))
    peak_ns = int(trace.start_ns + t[i] * 1e9)
    objects = _live_bytes_at(trace.allocations, trace.frees, peak_ns, root_pids(trace))
    footprint = int(total[i])
    parts = _parts_at(at, swap, i, objects)
    cache = at("memcg.cache")
    return Coverage(footprint, "peak RSS + swap", objects, float(t[i]), parts,
                    int(cache[i]) if cache is not None else None,
                    _sites_bytes(trace, peak_ns), watch, _watched_bytes(trace, peak_ns))


def _parts_at(at, swap, i: int, objects: int) -> dict[str, int]:
    """The footprint's parts outside the objects at counters sample i (PART_NAMES keys), for
    coverage and coverage_light alike: at(name) gives a counter's values at the RSS samples
    (numpy array or list), or None where the recording lacks it."""
    parts: dict[str, int] = {}
    anon = at("proc.rss_anon_bytes")
    if anon is not None:
        anon_i = anon[i] + (swap[i] if swap is not None else 0.0)
        stack = at("proc.stack_bytes")
        stack_i = min(float(stack[i]), anon_i) if stack is not None else 0.0
        parts["small"] = int(max(0.0, anon_i - min(objects, anon_i) - stack_i))
        parts["stack"] = int(stack_i)
        for key, name in (("file", "proc.rss_file_bytes"), ("shmem", "proc.rss_shmem_bytes")):
            values = at(name)
            if values is not None:
                parts[key] = int(values[i])
    return parts


COVERAGE_COUNTERS = {"proc.rss_bytes", "proc.swap_bytes", "proc.rss_anon_bytes",
                     "proc.stack_bytes", "proc.rss_file_bytes", "proc.rss_shmem_bytes",
                     "memcg.cache"}


def coverage_light(trace) -> Coverage:
    """coverage(trace) in plain Python for an objtier.trace.light.LightTrace (`record`'s
    summary): the same steps and float arithmetic. Raises light.Unsupported where it would
    need the columnar code (no RSS counters but objects or sampled sites)."""
    from objtier.trace.light import Unsupported, interp, live_ranges

    series = trace.counter_series(COVERAGE_COUNTERS)
    watch = unwatched_by(trace)
    if not series.get("proc.rss_bytes", ([], []))[0]:
        if trace.allocations or trace.has_sites:
            raise Unsupported
        return Coverage(None, "no RSS counters in the recording", 0, unwatched_by=watch)
    t, rss = series["proc.rss_bytes"]

    def at(name: str) -> list[float] | None:
        if name not in series or not series[name][0]:
            return None
        ts, values = series[name]
        return [interp(x, ts, values) for x in t]

    swap = at("proc.swap_bytes")
    total = [r + (s if swap is not None else 0.0)
             for r, s in zip(rss, swap if swap is not None else rss)]
    i = total.index(max(total))   # the first peak, as np.argmax
    peak_ns = int(trace.start_ns + t[i] * 1e9)
    pids = root_pids(trace)
    objects = sum(end - start for pid, start, end, t_begin, t_end, _
                  in live_ranges(trace.allocations, trace.frees)
                  if t_begin <= peak_ns < t_end and pid in pids)
    footprint = int(total[i])
    parts = _parts_at(at, swap, i, objects)
    cache = at("memcg.cache")
    return Coverage(footprint, "peak RSS + swap", objects, float(t[i]), parts,
                    int(cache[i]) if cache is not None else None,
                    trace.live_site_bytes(peak_ns) if trace.has_sites else None, watch,
                    trace.watched_site_bytes(peak_ns))


def coverage_of(footprint_bytes: int, trace, basis: str,
                page_cache_bytes: int | None = None) -> Coverage:
    """Coverage of a footprint measured in another run (compare's unlimited run) by the
    objects of `trace` (a recording of the same program): their peak of live bytes."""
    return Coverage(int(footprint_bytes), basis,
                    _peak_live_bytes(trace.allocations, trace.frees),
                    page_cache_bytes=page_cache_bytes, sites_bytes=_sites_bytes(trace, None),
                    unwatched_by=unwatched_by(trace),
                    watched_sites_bytes=_watched_bytes(trace, None))


def _mib(n: float) -> str:
    return f"{n / 2**20:.1f} MiB"


def coverage_line(c: Coverage) -> str:
    """One line (two with a window sampler): the footprint's coverage and its split."""
    if c.footprint_bytes is None:
        return (f"coverage: tracked objects peak at {_mib(c.objects_bytes)}; footprint unknown "
                f"({c.basis}: record with --counters-interval above 0)")
    when = f" at {c.peak_s:.2f} s" if c.peak_s is not None else ""
    text = (f"coverage: tracked objects {_mib(c.covered_bytes)} of the "
            f"{_mib(c.footprint_bytes)} footprint ({c.share:.1%}; {c.basis}{when})")
    if c.objects_bytes > c.footprint_bytes:
        text += f"; the objects' {_mib(c.objects_bytes)} are partly never touched"
    if c.parts:
        text += "; outside them: " + ", ".join(
            f"{_mib(c.parts[k])} {name}" for k, name in PART_NAMES.items()
            if c.parts.get(k) or k == "small")
    else:
        text += f"; {_mib(c.outside_bytes)} outside them"
    if c.sites_bytes is not None:
        text += f"; sampled small-block sites about {_mib(c.sites_bytes)} (estimate)"
        text += f"; objects and sites about {c.with_sites_share:.1%} of the footprint"
        if c.anonymous_share is not None:
            text += f", {c.anonymous_share:.1%} of its anonymous memory"
    if c.page_cache_bytes is not None:
        text += f"; page cache {_mib(c.page_cache_bytes)} (not in the footprint)"
    if c.unwatched_by and c.outside_bytes:
        arenas = min(c.watched_sites_bytes or 0, c.outside_bytes) \
            if "pageout" in c.unwatched_by else 0
        share = (c.outside_bytes - arenas) / c.footprint_bytes
        what = (f"tracked objects and about {_mib(arenas)} of watched sites' arenas" if arenas
                else "tracked objects")
        text += (f"\ncoverage: the {c.unwatched_by} sampler watches {what} only: "
                 f"accesses to the other {share:.1%} of the footprint are not sampled")
    return text

