"""`objtier record --sites N [--sites-from RUN]`: watch the N largest small-block sites.

With RUN, the sites are the N allocation sites (analysis.sites) with the most estimated peak
live bytes in RUN, an earlier recording of the same program (same binary, same --stack-depth:
sites are keyed by calling context). Without it the runtime learns them as the recording goes
(OBJTIER_ARENA_LEARN=N): the N contexts with the most sampled bytes once LEARN_BYTES of small
blocks were seen (an estimate from 1 in OBJTIER_SITE_PERIOD blocks); blocks allocated before
that stay with the program's allocator (analysis.site_watch's arena_share says how many). The runtime serves their blocks from segregated arenas while recording
(OBJTIER_ARENA_SITES, docs/watched-sites.md) and the pageout sampler arms those arenas'
pages as one region per site, so that the sites' accesses are sampled like objects' and
`objtier objects` / `plan --sites` rank them by access (analysis.site_watch). Only those N sites
are served from arenas; every other block stays with the program's allocator.
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import Any, Iterator

from objtier.errors import UsageError

MAX_WATCHED = 256          # RT_SARENA_MAX_SITES (native/runtime/place/arena_site.h)
LEARN_BYTES = 4 << 20      # OBJTIER_ARENA_LEARN_BYTES default (native/runtime/core/config.c)


def largest_sites(run: Path, n: int) -> list[dict[str, Any]]:
    """The n sites of recording `run` with the most estimated peak live bytes (summed over its
    processes), each {context_key, frame0_key, est_peak_bytes, label}."""
    from objtier.analysis.sites import has_sites, site_table
    from objtier.errors import TraceError
    from objtier.plan.sites import frame0_keys
    from objtier.trace import open_trace

    try:
        trace = open_trace(run)
    except (TraceError, OSError) as error:
        raise UsageError(f"--sites-from: {error}") from None
    if not has_sites(trace):
        raise UsageError(f"--sites-from {run}: the recording has no sampled small blocks "
                         f"(recorded with OBJTIER_SITE_PERIOD=0, or before format 1.4)")
    first = frame0_keys(trace)
    rows: dict[str, dict[str, Any]] = {}
    for r in site_table(trace, labels=True).to_pylist():
        key, f0 = r["context_key"], first.get((r["pid"], r["context"]))
        if not key or not f0 or r["est_peak_bytes"] <= 0:
            continue
        old = rows.setdefault(key, {"context_key": key, "frame0_key": f0, "est_peak_bytes": 0,
                                    "label": r["label"]})
        old["est_peak_bytes"] += r["est_peak_bytes"]
    ranked = sorted(rows.values(), key=lambda r: (-r["est_peak_bytes"], r["context_key"]))
    return ranked[:n]


def sites_text(sites: list[dict[str, Any]]) -> str:
    """The OBJTIER_ARENA_SITES file: `KEY FRAME0` a line."""
    lines = ["# objtier record --sites: sites served from watched arenas"]
    lines += [f"{s['context_key']} {s['frame0_key']}" for s in sites]
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def watched_sites(n: int, run: str | None, sampler: str, say) -> Iterator[dict[str, str]]:
    """The runtime settings that watch the n largest sites of `run` while recording ({} when
    n is 0); the sites file lives until the recording ends."""
    if not n:
        if run:
            raise UsageError("--sites-from needs --sites N")
        yield {}
        return
    if sampler != "pageout":
        say(f"note: only the pageout sampler arms the watched arenas' pages; with --sampler "
            f"{sampler} only samples that land in them count")
    if not run:
        say(f"watching the {n} small-block site(s) with the most sampled bytes after the first "
            f"{LEARN_BYTES >> 20} MiB of small blocks (those stay with the program's allocator)")
        yield {"OBJTIER_ARENA_LEARN": str(n)}
        return
    sites = largest_sites(Path(run), n)
    if not sites:
        raise UsageError(f"--sites-from {run}: no small-block site with a known context")
    say(f"watching {len(sites)} small-block site(s) of {run} through arenas "
        f"({sum(s['est_peak_bytes'] for s in sites) / 2**20:.1f} MiB peak, estimated)")
    with tempfile.TemporaryDirectory(prefix="objtier-sites-") as tmp:
        path = Path(tmp) / "sites.txt"
        path.write_text(sites_text(sites))
        yield {"OBJTIER_ARENA_SITES": str(path)}


def say_watched(output: Path, say) -> None:
    """After the recording: what the watched arenas held (nothing said when unreadable)."""
    from objtier.errors import TraceError
    from objtier.trace import open_trace

    try:
        line = watch_line(open_trace(output))
    except (TraceError, OSError):
        return
    say(line or "watched sites: no watched site got an arena (fewer small blocks than the "
        "learning needs, or another binary, other inputs or --stack-depth than --sites-from's)")


def watch_line(trace) -> str | None:
    """One line on the watched sites of a recording, None when it watched none."""
    from objtier.analysis.site_watch import has_watched_sites

    if not has_watched_sites(trace):
        return None
    regions = trace.site_regions
    keys = {(p, k) for p, k in zip(regions.column("pid").to_pylist(),
                                   regions.column("key").to_pylist())}
    total = sum(regions.column("len").to_pylist())
    return (f"watched sites: {len(keys)} with arenas, {regions.num_rows} chunks "
            f"({total / 2**20:.0f} MiB of arena)")
