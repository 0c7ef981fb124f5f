"""C-AMAT of a recording from the timing model: per level, per object, per code region, and
with the far level behind a local buffer of X % of the footprint (Xmem(X %)).

Everything here is a pure function of the stream and the parameters; I/O is in output.py.
"""

from __future__ import annotations

import math
import platform

import numpy as np

import objtier
from objtier.camat.model import LEVELS, Hierarchy, Sampling, SimConfig, SimCounts, simulate
from objtier.camat.sampling import unit_interval
from objtier.camat.stream import Stream
from objtier.camat.terms import apc_identity_error, level_terms, recursive_camat, schema_level
from objtier.errors import UsageError

FILLS = ("lru", "objects")
MEM = 3


def local_pages(stream: Stream, percent: float) -> int:
    if not 0 < percent <= 100:
        raise UsageError(f"--local must be in (0, 100] %, got {percent:g}")
    return max(1, math.ceil(stream.footprint_pages * percent / 100.0))


def object_pages(stream: Stream, page_bytes: int) -> np.ndarray:
    return (stream.object_bytes + page_bytes - 1) // page_bytes


def pinned_objects(counts: SimCounts, stream: Stream, pages: int, page_bytes: int) -> np.ndarray:
    """Object-aware fill of the local buffer: objects by memory accesses per page, densest
    first, while they fit; the untracked object (0) never. Flags per object (uint8)."""
    mem = counts.by_object[MEM]["accesses"].astype(np.float64)
    size = object_pages(stream, page_bytes)
    density = np.where(size > 0, mem / np.maximum(size, 1), 0.0)
    pinned = np.zeros(len(size), dtype=np.uint8)
    used = 0
    for i in np.argsort(-density, kind="stable").tolist():
        if i == 0 or mem[i] == 0 or used + int(size[i]) > pages:
            continue
        pinned[i] = 1
        used += int(size[i])
    return pinned


def window_sampling(stream: Stream, hier: Hierarchy, unit: int | None = None,
                    warm: int | None = None) -> tuple[Sampling, Hierarchy]:
    """Sampled timing of a stream of windows: one timed unit in each window (period = the
    windows' common length), and clock-ordered interleaving that never looks past the window's
    functional accesses after the unit (so it never takes an access of the next window)."""
    from dataclasses import replace

    from objtier.camat.model import DEFAULT_UNIT, default_warm

    length = stream.coverage["window"]
    warm = default_warm(hier) if warm is None else warm
    unit = min(DEFAULT_UNIT, length - 2 * warm) if unit is None else unit
    if unit < 1 or unit + 2 * warm > length:
        raise UsageError(f"the stream's windows hold {length:,} accesses: too few for a timed "
                         f"unit and twice {warm:,} warm-up accesses (record with a larger "
                         "--window, or give a smaller --sample-unit / --sample-warm)")
    rest = length - unit - 2 * warm
    if hier.reorder:
        hier = replace(hier, reorder=max(1, min(hier.reorder, rest // 2)))
    return Sampling(length, unit, warm), hier


def run_model(stream: Stream, hier: Hierarchy, local_percent: float | None = None,
              fill: str = "lru", sample: Sampling | None = None) -> tuple[SimCounts, dict]:
    """Counts of one model run (every access timed, or sampled units), and its parameters as
    recorded in camat.json."""
    if fill not in FILLS:
        raise UsageError(f"--fill must be one of {', '.join(FILLS)}, not {fill!r}")
    cores = int(stream.accesses["core"].max()) + 1 if len(stream.accesses) else 1
    base = SimConfig(hier, cores, len(stream.object_labels), len(stream.region_labels))
    params = {"hierarchy": hier.to_dict(), "cores": cores, "accesses": int(len(stream.accesses)),
              "footprint_pages": stream.footprint_pages, "local_percent": local_percent,
              "local_pages": 0, "fill": None}
    if local_percent is None:
        return simulate(stream.accesses, base, sample=sample), params
    pages = local_pages(stream, local_percent)
    params.update(local_pages=pages, fill=fill)
    cfg = SimConfig(hier, cores, base.objects, base.regions, local_pages=pages)
    if fill == "objects":
        pinned = pinned_objects(simulate(stream.accesses, base, sample=sample), stream, pages,
                                hier.page_bytes)  # memory accesses per object: exact either way
        pinned_pages = int(object_pages(stream, hier.page_bytes)[pinned == 1].sum())
        cfg = SimConfig(hier, cores, base.objects, base.regions, local_pages=pages,
                        pinned=pinned, pinned_pages=pinned_pages)
        params["pinned_objects"] = [stream.object_labels[i] for i in np.flatnonzero(pinned)]
    return simulate(stream.accesses, cfg, sample=sample), params


def _entry(key: str, label: str, rows: np.ndarray, levels: int) -> dict:
    """One object or region: top-level terms of its accesses that go to memory, and levels."""
    per_level = [level_terms(rows[l], totals=False) for l in range(levels)]
    top = per_level[MEM]
    entry = {key: label, **{k: top[k] for k in ("H", "C_H", "pMR", "pAMP", "C_M", "kappa",
                                                 "camat")},
             "levels": [schema_level(LEVELS[l], per_level[l]) for l in range(levels)
                        if per_level[l]["accesses"]],
             "level_accesses": {LEVELS[l]: per_level[l]["accesses"] for l in range(levels)
                                if per_level[l]["accesses"]}}
    return entry


def report(stream: Stream, counts: SimCounts, params: dict) -> dict:
    """The camat.json document."""
    n = counts.levels
    totals = [level_terms(counts.totals[l], totals=True) for l in range(n)]
    rec = recursive_camat(totals)
    objects = []
    order = np.argsort(-(counts.by_object[0]["hit_share"] + counts.by_object[0]["pure_share"]),
                       kind="stable")
    for i in order.tolist():
        if counts.by_object[0][i]["accesses"]:
            e = _entry("object", stream.object_labels[i], counts.by_object[:, i], n)
            e["accesses"] = int(counts.by_object[0][i]["accesses"])
            e["bytes"] = int(stream.object_bytes[i])
            e["l1_active_share"] = float(counts.by_object[0][i]["hit_share"]
                                         + counts.by_object[0][i]["pure_share"])
            objects.append(e)
    regions = []
    order = np.argsort(-(counts.by_region[0]["hit_share"] + counts.by_region[0]["pure_share"]),
                       kind="stable")
    for i in order.tolist():
        r = counts.by_region[0][i]
        if r["accesses"]:
            e = _entry("region", stream.region_labels[i], counts.by_region[:, i], n)
            e.update(accesses=int(r["accesses"]),
                     l1_camat=level_terms(r, totals=False)["camat"],
                     l1_active_share=float(r["hit_share"] + r["pure_share"]),
                     coherence_misses=int(r["coherence_misses"]),
                     false_sharing_misses=int(r["false_sharing"]),
                     invalidations=int(counts.by_region[2][i]["invalidations"]))
            regions.append(e)
    errors = [apc_identity_error(t) for t in totals]
    timing = timing_mode(counts)
    coverage = stream.coverage
    if coverage is not None and coverage["mode"] == "windows":
        coverage = {**coverage, "mem_first_touch_share": first_touch_share(
            stream, counts, int(params["hierarchy"]["line_bytes"]))}
    if stream.coverage is not None and timing["mode"] == "sampled":
        timing["counts_of"] = ("the modelled windows" if stream.coverage["mode"] == "windows"
                               else "the stream")
    if counts.sample:
        for row, ci in zip(totals, timing["confidence"]):
            row["ci"] = ci
    return {
        "tool": "objtier camat",
        "tool_version": objtier.__version__,
        "machine": machine_info(),
        "source": "sim",
        "timing": timing,
        "coverage": coverage,
        "parameters": params,
        "levels": [schema_level(LEVELS[l], totals[l]) for l in range(n)],
        "objects": objects,
        "regions": regions,
        "counts": [{"level": LEVELS[l], "accesses": t["accesses"], "apc": t["apc"],
                    "active_cycles": t["active_cycles"], "camat_recursive": rec[l],
                    "coherence_misses": int(counts.totals[l]["coherence_misses"]),
                    "false_sharing_misses": int(counts.totals[l]["false_sharing"]),
                    "invalidations": int(counts.totals[l]["invalidations"]),
                    **({"camat_ci95": t["ci"]["camat_ci95"],
                        "measured_accesses": t["ci"]["measured_accesses"]} if "ci" in t else {})}
                   for l, t in enumerate(totals)],
        "cycles": None if counts.sample else counts.cycles,
        "checks": {"apc_identity_max_error": max((e for e in errors if e is not None),
                                                 default=None)},
    }


def first_touch_share(stream: Stream, counts: SimCounts, line_bytes: int) -> float | None:
    """Distinct cache lines of the modelled accesses over the accesses that reached memory: how
    many of the memory accesses can be a line's first touch in the model. With windows, a line
    the run touched between two windows looks new to the model, so this share bounds the
    memory accesses that the gaps may have turned from LLC hits into misses (1 = all of them
    may be). None without memory accesses."""
    mem = int(counts.totals[MEM]["accesses"])
    if not mem:
        return None
    shift = max(line_bytes.bit_length() - 1, 0)
    lines = np.unique(stream.accesses["addr"] >> np.uint64(shift))
    return min(1.0, len(lines) / mem)


EXACT_TERMS = ["MR", "accesses", "misses", "coherence_misses", "false_sharing_misses",
               "invalidations"]
ESTIMATED_TERMS = ["H", "C_H", "pMR", "pAMP", "C_M", "kappa", "camat", "amat", "apc",
                   "active_cycles", "camat_recursive"]


def timing_mode(counts: SimCounts) -> dict:
    """camat.json's "timing": exact (every access timed), or sampled with the units' figures:
    which terms are exact and which estimated, the share of accesses timed, the confidence of
    each level's C-AMAT from the spread of the units, and the accounting check of the timed
    accesses (their shares of the active cycles sum to the cycles the model counted)."""
    if not counts.sample:
        return {"mode": "exact"}
    s = counts.sample
    acc = max(s["accesses"], 1)
    accounting = [abs(c - a) / c for c, a in zip(s["counted_active"], s["shared_active"]) if c]
    return {"mode": "sampled", "period": s["period"], "unit": s["unit"], "warm": s["warm"],
            "units": s["units"], "accesses": s["accesses"], "timed_accesses": s["detailed"],
            "measured_accesses": s["measured"], "timed_fraction": s["detailed"] / acc,
            "measured_fraction": s["measured"] / acc, "exact_terms": EXACT_TERMS,
            "estimated_terms": ESTIMATED_TERMS,
            "confidence": unit_interval(counts.units, counts.levels),
            "accounting_max_error": max(accounting, default=None)}


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info() -> dict:
    return {"hostname": platform.node(), "kernel": platform.release(),
            "arch": platform.machine(), "cpu": _cpu_model()}


LATENCY_BOUND_CM = 1.5   # L1 miss concurrency below this: misses are served one at a time
SIGNIFICANT_SHARE = 0.05 # of the L1 active cycles
FALSE_SHARING_MIN = 100     # false-sharing misses of a region worth a finding ...
FALSE_SHARING_SHARE = 0.01  # ... and at least this share of its accesses


def findings(doc: dict) -> list[str]:
    """One-line readings of the report: latency-bound objects, regions that lose lines to
    other threads' stores (false sharing), and what dominates C-AMAT."""
    out = []
    objs = doc.get("objects", [])
    total = sum(o.get("l1_active_share", 0.0) for o in objs) or 1.0
    for o in objs:
        share = o.get("l1_active_share", 0.0) / total
        l1 = next((lv for lv in o["levels"] if lv["level"] == "L1"), None)
        if share < SIGNIFICANT_SHARE or not l1 or l1["C_M"] is None:
            continue
        if l1["C_M"] < LATENCY_BOUND_CM:
            out.append(f"object {o['object']}: latency-bound, L1 miss concurrency "
                       f"{l1['C_M']:.1f} (its misses wait one after the other), "
                       f"{100 * share:.0f} % of L1 active cycles")
    regs = doc.get("regions", [])
    for r in regs:
        fs = r.get("false_sharing_misses", 0)
        if fs >= FALSE_SHARING_MIN and fs >= FALSE_SHARING_SHARE * r.get("accesses", 0):
            l1 = next((lv for lv in r["levels"] if lv["level"] == "L1"), {})
            out.append(f"region {r['region']}: {fs} false-sharing misses (lines another thread's "
                       f"stores invalidated, on bytes those stores did not write); its L1 C-AMAT "
                       f"{l1.get('camat') or 0:.1f} cycles vs {doc['levels'][0]['camat']:.1f} "
                       "overall")
    return out
