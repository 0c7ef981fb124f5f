"""Allocation sites to place: the plan's `sites` list and its text records.

A site (objtier.analysis.sites) is the calling context of small heap blocks. A plan may name
sites whose blocks the runtime serves from segregated arenas — pages that hold only that site's
blocks (docs/runtime.md, "Arenas") — so that the tier keeps them fast (mlock on the swap tier,
the fast nodes on NUMA) or slow (MADV_COLD of full arena chunks, the slow nodes). In plan.json:

    "sites": [{"context_key": "85a36dc5f2dd851d", "frame0_key": "3b1f...", "tier": "fast",
               "est_peak_bytes": 3497500, "est_samples": 120, "label": "main (app) <- ..."}]

context_key is the site's stable context key (as entries'), frame0_key the key of its
innermost frame alone (the runtime looks a call's return address up by it before it unwinds),
tier fast, slow or apart (an arena of its own and no tier action: its blocks stop sharing
pages with other blocks, so that the kernel's LRU can tell its pages apart); lock_bytes
(optional, fast sites on the swap tier) the most bytes of the site's arena chunks the runtime
locks, its first chunks in allocation order (the model's split of a site swept cyclically,
plan.site_rows); the other fields are informative. Text form:
`site KEY FRAME0 TIER [LOCK_BYTES]`.

Choosing (`objtier plan --sites N [--cold-sites M]`): sites ranked by estimated sampled
accesses per byte of their peak live bytes (est_samples / est_peak_bytes); the first N with
any samples go fast; the M largest sites with no sampled access go slow. The samplers that
arm only tracked objects (pageout, fault, wp) never sample small blocks, so from their
recordings only --cold-sites can choose anything — unless the recording watched sites
(`record --sites N`, analysis.site_watch): then the watched sites come first, ranked by their
measured access (estimated touches per byte, est_touches / est_peak_bytes): the N with the most
go fast, the M with the fewest go slow (fewest first, then larger first), and only then the
unwatched sites by the rules above. Such entries carry "est_touches", "armed_share" and
"access": "pageout windows on the site's arena (estimated)".
"""

from __future__ import annotations

import re
from typing import Any

from objtier.analysis.site_watch import access_per_byte
from objtier.errors import UsageError

SITE_TIERS = ("fast", "slow", "apart")   # apart: an arena of its own, no tier action
MAX_SITES = 256            # RT_SARENA_MAX_SITES (native/runtime/place/arena_site.h)
_KEY = re.compile(r"[0-9a-f]{16}")


def frame0_keys(trace) -> dict[tuple[int, int], str]:
    """(pid, context) -> the key of the context's innermost frame alone."""
    from objtier.trace.contexts import context_key

    ctx = trace.contexts
    out = {}
    for pid, cid, frames in zip(ctx.column("pid").to_pylist(), ctx.column("context").to_pylist(),
                                ctx.column("frames").to_pylist()):
        if frames:
            out[(pid, cid)] = context_key([(frames[0]["module"] or "", frames[0]["offset"])])
    return out


def choose_sites(traces: list[Any], hot: int, cold: int) -> list[dict[str, Any]]:
    """The sites to place (module docstring), hot ones first; one entry per context key."""
    from objtier.analysis.sites import has_sites, site_table

    rows: dict[str, dict[str, Any]] = {}
    for trace in traces:
        if not has_sites(trace):
            continue
        first = frame0_keys(trace)
        for r in site_table(trace, labels=True).to_pylist():
            key, f0 = r["context_key"], first.get((r["pid"], r["context"]))
            if not key or not f0 or r["est_peak_bytes"] <= 0:
                continue
            old = rows.get(key)
            # measured: its arena's pages were armed by scan windows (pageout); a watched
            # site with no window (another sampler) is ranked by its samples, as any other
            watched = bool(r.get("watched")) and r.get("touch_rate") is not None
            if old is None:
                old = rows[key] = {"context_key": key, "frame0_key": f0,
                                   "est_peak_bytes": 0, "est_samples": 0, "label": r["label"],
                                   "_watched": 0, "_touches": 0.0, "_armed": 0.0}
            # the same site in several processes or recordings: summed (armed share weighed
            # by bytes)
            old["est_peak_bytes"] += r["est_peak_bytes"]
            old["est_samples"] += r["est_samples"]
            if watched:
                old["_watched"] += r["est_peak_bytes"]
                old["_touches"] += r.get("est_touches") or 0.0
                old["_armed"] += (r.get("armed_share") or 0.0) * r["est_peak_bytes"]
    for r in rows.values():
        if r.pop("_watched"):
            r["est_touches"] = round(r["_touches"])
            r["armed_share"] = round(r["_armed"] / r["est_peak_bytes"], 3)
            r["access"] = "pageout windows on the site's arena (estimated)"
        del r["_touches"], r["_armed"]
    watched = [r for r in rows.values() if "est_touches" in r]
    by_access = sorted(watched, key=lambda r: (-access_per_byte(r), -r["est_peak_bytes"],
                                               r["context_key"]))
    fast = [r for r in by_access if r["est_touches"] > 0][:hot]
    chosen = {r["context_key"] for r in fast}
    slow = [r for r in by_access if r["context_key"] not in chosen]
    slow = sorted(slow, key=lambda r: (access_per_byte(r), -r["est_peak_bytes"],
                                       r["context_key"]))[:cold]
    rest = [r for r in rows.values() if "est_touches" not in r]
    sampled = sorted((r for r in rest if r["est_samples"] > 0),
                     key=lambda r: (-r["est_samples"] / r["est_peak_bytes"],
                                    -r["est_peak_bytes"], r["context_key"]))
    unsampled = sorted((r for r in rest if r["est_samples"] == 0),
                       key=lambda r: (-r["est_peak_bytes"], r["context_key"]))
    out = [dict(r, tier="fast") for r in (fast + sampled)[:hot]]
    out += [dict(r, tier="slow") for r in (slow + unsampled)[:cold]]
    return out[:MAX_SITES]


def add_sites(plan: dict[str, Any], traces: list[Any], hot: int, cold: int) -> list[str]:
    """Puts the chosen sites in plan["sites"]; returns lines to print."""
    sites = choose_sites(traces, hot, cold)
    plan["sites"] = sites
    if not sites:
        msg = ("sites: none chosen (the recording has no sampled small blocks"
               + (" with sampled accesses" if hot and not cold else "") + ")")
        plan.setdefault("warnings", []).append(msg)
        return [msg]
    lines = [f"sites: {len(sites)} placed through arenas "
             f"({sum(s['tier'] == 'fast' for s in sites)} fast, "
             f"{sum(s['tier'] == 'slow' for s in sites)} slow)"]
    for s in sites:
        if "est_touches" in s:   # watched while recording: measured access
            lines.append(f"  {s['tier']:4} {s['context_key']} peak {s['est_peak_bytes']} B "
                         f"touches {s['est_touches']} ({s['armed_share']:.0%} of its bytes "
                         f"armed; estimated)  {s['label']}")
            continue
        lines.append(f"  {s['tier']:4} {s['context_key']} peak {s['est_peak_bytes']} B "
                     f"samples {s['est_samples']} (estimated)  {s['label']}")
    return lines


def check_sites(where: str, sites: Any) -> None:
    """UsageError (one line) unless sites is a list of valid site entries."""
    if not isinstance(sites, list):
        raise UsageError(f"{where}: sites must be a list")
    if len(sites) > MAX_SITES:
        raise UsageError(f"{where}: {len(sites)} sites; the runtime takes at most {MAX_SITES}")
    for i, s in enumerate(sites):
        if not isinstance(s, dict):
            raise UsageError(f"{where}: site {i} is not an object")
        for field in ("context_key", "frame0_key"):
            if not isinstance(s.get(field), str) or not _KEY.fullmatch(s[field]):
                raise UsageError(f"{where}: site {i}: {field} must be 16 lowercase hex digits")
        if s.get("tier") not in SITE_TIERS:
            raise UsageError(f"{where}: site {i}: tier must be fast, slow or apart")
        cap = s.get("lock_bytes")
        if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool) or cap < 0
                                or s["tier"] != "fast"):
            raise UsageError(f"{where}: site {i}: lock_bytes must be a byte count >= 0, and "
                             f"only on a fast site")


def text_lines(plan: dict[str, Any]) -> list[str]:
    """The plan's `site` records (textexport.to_text)."""
    return [f"site {s['context_key']} {s['frame0_key']} {s['tier']}"
            + (f" {s['lock_bytes']}" if s.get("lock_bytes") else "")
            for s in plan.get("sites") or []]


def parse_record(fields: list[str]) -> dict[str, Any]:
    """A `site KEY FRAME0 TIER [LOCK_BYTES]` record's fields; ValueError when malformed."""
    if len(fields) not in (4, 5) or not _KEY.fullmatch(fields[1]) \
            or not _KEY.fullmatch(fields[2]) or fields[3] not in SITE_TIERS \
            or (len(fields) == 5 and (not fields[4].isdigit() or fields[3] != "fast")):
        raise ValueError(" ".join(fields))
    out = {"context_key": fields[1], "frame0_key": fields[2], "tier": fields[3]}
    if len(fields) == 5:
        out["lock_bytes"] = int(fields[4])
    return out
