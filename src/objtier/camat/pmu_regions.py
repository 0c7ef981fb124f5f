"""Per-region C-AMAT from counters read at the phase and region markers (`--source pmu
--regions`).

The runtime (native/runtime/sample/region_pmu.c, on with OBJTIER_REGION_PMU) opens one counting group
per thread on itself at the thread's first marker (objtier_phase, or objtier_region_begin/end of
<objtier/region.h>) and reads it at every later marker; the counts since a thread's previous
marker belong to what that marker put in force: the phase entered, the region opened, or after a
region's end the enclosing region (else the thread's phase; 0: outside every phase and region).
Phase and region names share one id space, so a region's counts carry its name. It writes them as COUNTER_DEF "camat.pmu.<term>.phase.<id>" + COUNTERS
records (cumulative per process: the largest value is the total), and a refused
perf_event_open as "camat.pmu.refused.<term>" holding the errno.

Per-object terms cannot come from counting events: a counter counts events, not the addresses
they touch. (Sampling with data addresses, PEBS load latency or AMD IBS, would give per-object
load latencies, i.e. AMAT-like figures, but not the overlap of accesses that C-AMAT counts.)
"""

from __future__ import annotations

import errno as errno_names
import os
import re

import numpy as np

from objtier.camat.pmu import Event, camat_from_counts
from objtier.errors import EnvironmentProblem

ENV = "OBJTIER_REGION_PMU"
OUTSIDE = "(outside phases and regions)"
_VALUE = re.compile(r"^camat\.pmu\.([a-z0-9_]+)\.phase\.(\d+)$")
_REFUSED = re.compile(r"^camat\.pmu\.refused\.([a-z0-9_]+)$")


def region_spec(events: dict[str, Event]) -> str:
    """The OBJTIER_REGION_PMU value for a family's events, in term order (leader first)."""
    return ",".join(f"{term}={event.type}:{event.config:#x}" for term, event in events.items())


def _file_counters(raw, decode_named, formats) -> dict[str, float]:
    """name -> largest value of one process file's counters."""
    defs = {}
    for body in raw.variable.get(formats.TAG_COUNTER_DEF, []):
        d = decode_named(body, formats.COUNTER_DEF_HEAD)
        defs[d["id"]] = d["name"]
    records = raw.records(formats.TAG_COUNTERS)
    out: dict[str, float] = {}
    for cid in np.unique(records["id"]).tolist() if len(records) else []:
        name = defs.get(cid)
        if name is not None and name.startswith("camat.pmu."):
            out[name] = float(records["value"][records["id"] == cid].max())
    return out


def region_counts(trace, events: dict[str, Event]) -> dict[str, dict[str, float]]:
    """phase name -> term -> count, summed over the recording's processes. EnvironmentProblem
    naming the event when the program's perf_event_open was refused."""
    from objtier.trace import format as formats
    from objtier.trace.reader import decode_named

    names = trace.names
    out: dict[str, dict[str, float]] = {}
    for raw in trace.files:
        if int(raw.header["kind"]) != formats.FILE_PROCESS:
            continue
        pid = int(raw.header["pid"])
        for name, value in _file_counters(raw, decode_named, formats).items():
            refused = _REFUSED.match(name)
            if refused:
                term = refused.group(1)
                event = events.get(term)
                what = event.name if event else term
                code = int(value)
                raise EnvironmentProblem(
                    f"the program's perf_event_open({what}) at its first phase marker was "
                    f"refused: {errno_names.errorcode.get(code, code)} ({os.strerror(code)}); "
                    "use --source sim")
            match = _VALUE.match(name)
            if not match:
                continue
            term, phase = match.group(1), int(match.group(2))
            label = OUTSIDE if phase == 0 else names.get((pid, phase), f"phase {phase}")
            region = out.setdefault(label, {})
            region[term] = region.get(term, 0.0) + value
    return out


def region_rows(counts: dict[str, dict[str, float]], terms: list[str]) -> list[dict]:
    """camat.json "regions" rows: the per-level terms of each phase's counts, busiest first
    (a term a region never counted is 0)."""
    rows = []
    for region, reading in counts.items():
        full = {term: reading.get(term, 0.0) for term in terms}
        levels = camat_from_counts(full)
        l1 = levels["levels"][0]
        rows.append({"region": region, "H": None, "C_H": None, "pMR": None, "pAMP": None,
                     "C_M": l1["C_M"], "kappa": l1["kappa"], "camat": l1["camat"],
                     "accesses": levels["derived"]["accesses"],
                     "apc": levels["derived"]["apc"], "levels": levels["levels"],
                     "l1_active_share": full.get("l1_active", 0.0),
                     "raw_counts": full})
    rows.sort(key=lambda r: -(r["accesses"] or 0))
    return rows
