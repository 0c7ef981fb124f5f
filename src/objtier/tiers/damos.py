"""A plan as DAMON operation schemes (DAMOS): objtier's object knowledge for the kernel's own
access-aware reclaim, without the preload.

A plan names objects by allocation context; DAMOS works on address ranges of one process
(`vaddr` operations) or of physical memory (`paddr`). Object addresses exist only while a
process runs, so the export starts from a trace that has them — a recording, or the trace of an
`objtier run` — and maps every object the plan covers and the trace shows alive at a moment
(by default the trace's end) to byte ranges:

    planned-slow bytes  -> one `pageout` scheme per range: reclaim them once DAMON has seen
                           them idle for min_age_s (access pattern: 0 accesses, age >= min_age)
    planned-fast bytes  -> one `stat` scheme per range: `lru_prio` (the kernel's hot-page
                           protection) is implemented for `paddr` only, and physical addresses
                           of an object are not known; `stat` lets DAMON count how much of the
                           planned-fast set it saw accessed. Hot ranges are never paged out,
                           because every pageout scheme is limited to its own cold range.

Each scheme is limited to its range by one `addr` filter with matching false ("filter out what
is not in [start, end)"), which kernels since 6.3 understand the same way (6.14 added `allow`,
default false, the same meaning). Ranges are page-aligned: cold ranges inward (never a hot
byte paged out), hot ranges outward.

The scheme set is written in the JSON layout of `damo` (the DAMON user-space tool: `damo start
FILE` applies it), plus an `objtier` record (plan, trace, time, per-range labels, the cgroup
v2 settings the plan implies: `memory.low` = the planned-fast bytes alive). `sysfs_writes`
renders the same set as the writes to /sys/kernel/mm/damon/admin an apply performs, in order.

`damon_status` reads (never writes) the DAMON sysfs tree and says whether a kdamond is busy:
objtier never stops or reconfigures a kdamond that runs.

Units: addresses and sizes in bytes; DAMON intervals in microseconds; a scheme's age in
aggregation intervals, its nr_accesses in samples per aggregation interval (sysfs units).
"""
from __future__ import annotations

import datetime as _dt
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from objtier.errors import UsageError

DAMON_SYSFS = Path("/sys/kernel/mm/damon/admin")
SAMPLE_US = 5_000            # DAMON's defaults: sample every 5 ms,
AGGR_US = 100_000            # aggregate every 100 ms,
UPDATE_US = 1_000_000        # update the target's regions every 1 s
MIN_REGIONS, MAX_REGIONS = 10, 1000
MAX_SCHEMES = 256            # more ranges than this are merged, closest first
VADDR_ACTIONS = ("pageout", "stat", "cold", "willneed", "hugepage", "nohugepage")
PADDR_ACTIONS = ("pageout", "lru_prio", "lru_deprio", "stat")


@dataclass(frozen=True)
class Range:
    start: int       # first byte [address]
    end: int         # one past the last byte [address]
    hot: bool        # planned fast (True) or planned slow (False)
    label: str       # the objects it came from

    @property
    def size(self) -> int:
        return self.end - self.start


def _entry_for(entries: list[dict[str, Any]], key: str, occurrence: int, size: int):
    """The plan entry that governs an object (as the runtime matches): context key, occurrence
    (null = any) and size range; an exact occurrence wins over a null one."""
    best = None
    for e in entries:
        if e["context_key"] != key or not e["size_min"] <= size <= e["size_max"]:
            continue
        if e.get("occurrence") == occurrence:
            return e
        if e.get("occurrence") is None:
            best = best or e
    return best


def _fast_spans(entry: dict[str, Any], addr: int, size: int, page: int) -> list[tuple[int, int]]:
    """[start, end) byte spans of an object the entry makes fast. A pages entry's ranges count
    from the object's first whole page."""
    if entry.get("ranges"):
        base = -(-addr // page) * page
        return [(base + off, min(base + off + length, addr + size))
                for off, length in entry["ranges"]]
    fast = min(int(entry["fast_bytes"]), size)
    return [(addr, addr + fast)] if fast else []


def _cold_spans(addr: int, size: int, fast: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out, at = [], addr
    for start, end in sorted(fast):
        if start > at:
            out.append((at, start))
        at = max(at, end)
    if at < addr + size:
        out.append((at, addr + size))
    return out


def plan_ranges(plan: dict[str, Any], trace, at_ns: int | None = None, pid: int | None = None,
                phase: str = "*") -> tuple[list[Range], int]:
    """The hot and cold ranges of the objects alive at at_ns (default: the trace's end) that
    the plan's `phase` entries cover, page-aligned (hot outward, cold inward), merged where
    adjacent and of one kind. Returns (ranges, pid). pid: the process of the trace to take
    (default: the one with most allocations)."""
    from objtier.analysis.objects import object_table
    from objtier.trace.columns import trace_end_ns

    entries = [e for e in plan.get("entries", []) if e.get("phase", "*") == phase]
    if not entries:
        raise UsageError(f"the plan has no entries for phase {phase!r}: nothing to export")
    table = object_table(trace, labels=True).to_pydict()
    if not table["pid"]:
        raise UsageError("the trace holds no objects: nothing to export")
    pids = np.asarray(table["pid"])
    if pid is None:
        values, counts = np.unique(pids, return_counts=True)
        pid = int(values[np.argmax(counts)])
    elif pid not in set(pids.tolist()):
        raise UsageError(f"the trace has no objects of process {pid}")
    page = next((p.page_bytes for p in trace.processes if p.pid == pid and p.page_bytes), 4096)
    at = trace_end_ns(trace) if at_ns is None else at_ns
    spans: list[Range] = []
    for i in range(len(table["pid"])):
        free = table["free_ns"][i]
        if table["pid"][i] != pid or table["alloc_ns"][i] > at or (free is not None
                                                                   and free <= at):
            continue
        addr, size = int(table["addr"][i]), int(table["size"][i])
        entry = _entry_for(entries, table["context_key"][i], table["occurrence"][i], size)
        if entry is None:
            continue
        label = (table.get("label") or [""] * len(table["pid"]))[i] or table["context_key"][i]
        fast = _fast_spans(entry, addr, size, page)
        for start, end in fast:
            spans.append(Range(start // page * page, -(-end // page) * page, True, label))
        for start, end in _cold_spans(addr, size, fast):
            start, end = -(-start // page) * page, end // page * page
            if end > start:
                spans.append(Range(start, end, False, label))
    return _merge(spans), pid


def _merge(spans: list[Range]) -> list[Range]:
    """Sorted, and where a hot and a cold range overlap (page rounding), the hot one wins;
    adjacent ranges of one kind become one."""
    hot = sorted((r for r in spans if r.hot), key=lambda r: r.start)
    out: list[Range] = []
    for r in sorted(spans, key=lambda r: (r.start, not r.hot)):
        start, end = r.start, r.end
        if not r.hot:       # cut cold ranges around every hot one
            for h in hot:
                if h.end <= start or h.start >= end:
                    continue
                if h.start <= start:
                    start = max(start, h.end)
                else:
                    end = min(end, h.start)
            if end <= start:
                continue
        if out and out[-1].hot == r.hot and out[-1].end >= start:
            last = out[-1]
            labels = last.label if r.label in last.label.split("; ") else \
                f"{last.label}; {r.label}"
            out[-1] = Range(last.start, max(last.end, end), r.hot, labels)
        else:
            out.append(Range(start, end, r.hot, r.label))
    return out


def _capped(ranges: list[Range], limit: int) -> list[Range]:
    """At most `limit` ranges of each kind: the closest neighbours of a kind merged first
    (a merged cold range never spans a hot one: the gap holds no hot range or it is kept)."""
    for hot in (True, False):
        mine = [r for r in ranges if r.hot == hot]
        others = [r for r in ranges if r.hot != hot]
        while len(mine) > limit:
            gaps = [(b.start - a.end, i) for i, (a, b) in enumerate(zip(mine, mine[1:]))
                    if hot or not any(o.hot and a.end <= o.start < b.start for o in others)]
            if not gaps:
                break
            _, i = min(gaps)
            a, b = mine[i], mine[i + 1]
            mine[i:i + 2] = [Range(a.start, b.end, hot, f"{a.label}; {b.label}")]
        ranges = sorted(mine + others, key=lambda r: r.start)
    return ranges


def _scheme(r: Range, min_age_aggr: int) -> dict[str, Any]:
    """One DAMOS scheme for a range, in damo's JSON layout."""
    if r.hot:
        pattern = {"sz_bytes": {"min": "0 B", "max": "max"},
                   "nr_accesses": {"min": "0 %", "max": "100 %"},
                   "age": {"min": "0 ns", "max": "max"}}
    else:
        pattern = {"sz_bytes": {"min": "4096 B", "max": "max"},
                   "nr_accesses": {"min": "0 %", "max": "0 %"},
                   "age": {"min": f"{min_age_aggr * AGGR_US} us", "max": "max"}}
    return {"action": "stat" if r.hot else "pageout", "target_nid": None,
            "access_pattern": pattern,
            "quotas": {"time_ms": 0, "sz_bytes": 0, "reset_interval_ms": 0,
                       "goals": [], "weights": {"sz_permil": 0, "nr_accesses_permil": 0,
                                                "age_permil": 0}},
            "watermarks": {"metric": "none", "interval_us": 0, "high_permil": 0,
                           "mid_permil": 0, "low_permil": 0},
            "filters": [{"filter_type": "addr", "matching": False, "allow": False,
                         "address_range": {"start": r.start, "end": r.end}}]}


def scheme_set(ranges: list[Range], pid: int, min_age_s: float = 1.0,
               source: dict[str, Any] | None = None) -> dict[str, Any]:
    """The damo kdamonds JSON for one vaddr context on process pid, one scheme per range."""
    if min_age_s < 0:
        raise UsageError(f"--min-age must be >= 0 s, got {min_age_s:g}")
    if not ranges:
        raise UsageError("no object the plan covers is alive in the trace at that time: "
                         "nothing to export")
    ranges = _capped(ranges, MAX_SCHEMES // 2)
    min_age_aggr = round(min_age_s * 1e6 / AGGR_US)
    hot = sum(r.size for r in ranges if r.hot)
    return {
        "kdamonds": [{"state": None, "pid": None, "contexts": [{
            "ops": "vaddr", "addr_unit": None,
            "targets": [{"pid": pid, "regions": []}],
            "intervals": {"sample_us": f"{SAMPLE_US} us", "aggr_us": f"{AGGR_US} us",
                          "ops_update_us": f"{UPDATE_US} us"},
            "nr_regions": {"min": MIN_REGIONS, "max": MAX_REGIONS},
            "schemes": [_scheme(r, min_age_aggr) for r in ranges]}]}],
        "objtier": {
            **(source or {}),
            "exported": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "pid": pid, "min_age_s": min_age_s,
            "ranges": [{"start": r.start, "end": r.end, "tier": "fast" if r.hot else "slow",
                        "action": "stat" if r.hot else "pageout", "objects": r.label}
                       for r in ranges],
            "hot_bytes": hot, "cold_bytes": sum(r.size for r in ranges if not r.hot),
            "cgroup_v2": {"memory.low": hot},
            "notes": ["lru_prio is a paddr action: the planned-fast ranges get stat schemes "
                      "(counted, never paged out)",
                      "the addresses belong to process pid of the trace; another run of the "
                      "program has other addresses: export again from its trace",
                      "cgroup_v2 memory.low protects the planned-fast bytes of the program's "
                      "cgroup from reclaim as a whole, not per object"]}}


def validate_scheme_set(doc: Any) -> list[str]:
    """Problems of a scheme set (the damo layout this module writes); [] when it is sound."""
    problems: list[str] = []
    try:
        contexts = [c for k in doc["kdamonds"] for c in k["contexts"]]
    except (KeyError, TypeError):
        return ["no kdamonds[].contexts[]"]
    for ci, ctx in enumerate(contexts):
        ops = ctx.get("ops")
        allowed = VADDR_ACTIONS if ops in ("vaddr", "fvaddr") else PADDR_ACTIONS \
            if ops == "paddr" else ()
        if not allowed:
            problems.append(f"context {ci}: unknown ops {ops!r}")
        targets = ctx.get("targets") or []
        if ops in ("vaddr", "fvaddr") and not all(isinstance(t.get("pid"), int) and
                                                  t["pid"] > 0 for t in targets):
            problems.append(f"context {ci}: a vaddr target needs a pid")
        spans = []
        for si, s in enumerate(ctx.get("schemes") or []):
            where = f"context {ci} scheme {si}"
            if s.get("action") not in allowed:
                problems.append(f"{where}: action {s.get('action')!r} is not one {ops} "
                                f"implements")
            for f in s.get("filters") or []:
                if f.get("filter_type") != "addr":
                    continue
                a = f.get("address_range") or {}
                start, end = a.get("start"), a.get("end")
                if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end):
                    problems.append(f"{where}: address range {start}..{end} is empty or "
                                    f"not integers")
                elif start % 4096 or end % 4096:
                    problems.append(f"{where}: address range {start:#x}..{end:#x} is not "
                                    f"page-aligned")
                else:
                    spans.append((start, end, where))
        spans.sort()
        for (_, end, where), (start, _, other) in zip(spans, spans[1:]):
            if start < end:
                problems.append(f"{other}: its range overlaps that of {where}")
    return problems


def sysfs_writes(doc: dict[str, Any], kdamond: int = 0) -> list[tuple[str, str]]:
    """(path under the DAMON admin dir, value) in the order an apply writes them: the scheme set
    as the kernel's sysfs interface takes it (intervals in us, age in aggregation intervals,
    nr_accesses in samples per aggregation interval). Nothing here writes them."""
    ctx = doc["kdamonds"][0]["contexts"][0]
    aggr, sample = AGGR_US, SAMPLE_US
    per_aggr = aggr // sample
    base = f"kdamonds/{kdamond}/contexts/0"
    out = [("kdamonds/nr_kdamonds", str(kdamond + 1)),
           (f"kdamonds/{kdamond}/contexts/nr_contexts", "1"),
           (f"{base}/operations", ctx["ops"]),
           (f"{base}/monitoring_attrs/intervals/sample_us", str(sample)),
           (f"{base}/monitoring_attrs/intervals/aggr_us", str(aggr)),
           (f"{base}/monitoring_attrs/intervals/update_us", str(UPDATE_US)),
           (f"{base}/monitoring_attrs/nr_regions/min", str(ctx["nr_regions"]["min"])),
           (f"{base}/monitoring_attrs/nr_regions/max", str(ctx["nr_regions"]["max"])),
           (f"{base}/targets/nr_targets", str(len(ctx["targets"])))]
    for ti, t in enumerate(ctx["targets"]):
        out.append((f"{base}/targets/{ti}/pid_target", str(t["pid"])))
    out.append((f"{base}/schemes/nr_schemes", str(len(ctx["schemes"]))))
    for si, s in enumerate(ctx["schemes"]):
        d = f"{base}/schemes/{si}"
        age_us = int(s["access_pattern"]["age"]["min"].split()[0]) \
            if s["access_pattern"]["age"]["min"] != "0 ns" else 0
        hot = s["action"] != "pageout"
        out += [(f"{d}/action", s["action"]),
                (f"{d}/access_pattern/sz/min", "0" if hot else "4096"),
                (f"{d}/access_pattern/sz/max", str((1 << 64) - 1)),
                (f"{d}/access_pattern/nr_accesses/min", "0"),
                (f"{d}/access_pattern/nr_accesses/max", str(per_aggr if hot else 0)),
                (f"{d}/access_pattern/age/min", str(age_us // aggr)),
                (f"{d}/access_pattern/age/max", str((1 << 32) - 1)),
                (f"{d}/filters/nr_filters", str(len(s["filters"])))]
        for fi, f in enumerate(s["filters"]):
            out += [(f"{d}/filters/{fi}/type", "addr"),
                    (f"{d}/filters/{fi}/matching", "N"),
                    (f"{d}/filters/{fi}/addr_start", str(f["address_range"]["start"])),
                    (f"{d}/filters/{fi}/addr_end", str(f["address_range"]["end"]))]
    return out


@dataclass
class DamonStatus:
    available: bool               # the kernel has the DAMON sysfs interface
    kdamonds: list[dict[str, Any]]  # index, state, pid, ops of each
    busy: list[int]               # indexes of kdamonds that run

    def message(self) -> str:
        if not self.available:
            return "this kernel has no DAMON sysfs interface (/sys/kernel/mm/damon/admin)"
        if not self.busy:
            return (f"DAMON is free here ({len(self.kdamonds)} kdamond(s), none running): "
                    f"apply the scheme set with `damo start FILE`")
        running = ", ".join(f"kdamond {k['index']} (pid {k['pid']}, ops "
                            f"{'/'.join(k['ops']) or '?'})" for k in self.kdamonds
                            if k["index"] in self.busy)
        return (f"DAMON is busy here: {running} runs; objtier never stops or reconfigures a "
                f"running kdamond — apply the scheme set where DAMON is free, or add it as a "
                f"new kdamond yourself")


def damon_status(root: Path = DAMON_SYSFS) -> DamonStatus:
    """Read (only read) the DAMON sysfs tree: its kdamonds, which run, and their ops."""
    kdamonds_dir = root / "kdamonds"
    try:
        count = int((kdamonds_dir / "nr_kdamonds").read_text())
    except (OSError, ValueError):
        return DamonStatus(False, [], [])
    found = []
    for i in range(count):
        d = kdamonds_dir / str(i)
        state = _read(d / "state")
        contexts = d / "contexts"
        n = int(_read(contexts / "nr_contexts") or 0)
        ops = [_read(contexts / str(c) / "operations") for c in range(n)]
        found.append({"index": i, "state": state, "pid": _read(d / "pid"), "ops": ops})
    return DamonStatus(True, found, [k["index"] for k in found if k["state"] == "on"])


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def write_scheme_set(doc: dict[str, Any], path: Path) -> None:
    """0600, not following a symlink at the destination."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(doc, indent=1) + "\n")
