"""The plan file: versioned JSON keyed by allocation context (schema in docs/planning.md).

Entry semantics (what the runtime enforces): an object allocated from context `context_key`
whose occurrence number equals `occurrence` (null = any occurrence) and whose size lies in
[size_min, size_max] gets bytes [0, min(fast_bytes, size)) fast and the rest slow, while phase
`phase` is the plan in force ("*" = the whole program). tier restates it: "fast" (whole object,
fast_bytes >= size), "slow" (fast_bytes = 0) or "split" (fast_bytes a page multiple < size).
A "pages" entry (objtier.plan.pages) instead makes fast the byte ranges `ranges`, a list of
[offset, length] pairs counted from the object's first whole page (page multiples, sorted,
disjoint; their lengths sum to fast_bytes), and every other page slow.
`large_folios` (optional) lists the objects — context_key, occurrence (null = any), size range —
whose planned-slow pages the swap tier faults in as large folios (objtier.plan.folios).
A context whose objects all got the same whole-object tier is written as one entry with
occurrence null and the size range of its objects; otherwise one entry per object.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from objtier import __version__
from objtier.errors import UsageError
from objtier.outputs import write_private
from objtier.plan.budget import Budget
from objtier.plan.folios import large_folio_objects
from objtier.plan.per_phase import ROOT, PhasePlacement
from objtier.plan.placement import TIERS, Placement
from objtier.plan.table import ObjectTable

FORMAT = "objtier-plan"
VERSION = 1
DYNAMIC_VERSION = 2  # plans with a dynamic schedule (removed): refused with a reason
_KEY = re.compile(r"^[0-9a-f]{16}$")
MAX_BYTES = (1 << 63) - 1      # sizes, fast_bytes, budget: int64 in tables, u64 in the runtime
MAX_PAGE_BYTES = 1 << 30       # the largest planning page (a 1 GiB huge page)
MAX_OCCURRENCE = (1 << 63) - 1  # the runtime reserves UINT64_MAX for "*"
MAX_PHASES = 256               # RT_PLAN_MAX_PHASES (native/runtime/place/plan.h)
MAX_PHASE_NAME_BYTES = 255     # RT_PLAN_MAX_NAME: bytes of a decoded phase name
_HEX = re.compile(r"[0-9a-fA-F]+")
_BUILD_ID = re.compile(r"^(?:[0-9a-f]{2}){1,32}$")  # the runtime reads at most 32 bytes


def plan_entries(objects: ObjectTable, placement: Placement, phase: str = ROOT,
                 mask: np.ndarray | None = None) -> list[dict[str, Any]]:
    """Entries of one phase, grouping contexts whose objects share a whole-object tier.
    Objects with an unknown context get no entry; with mask, only the objects it selects
    (one program's, objtier.plan.programs) get entries."""
    known = objects.plannable if mask is None else objects.plannable & mask
    if not known.all():
        objects = replace(objects, **{f: getattr(objects, f)[known] for f in (
            "object", "context_key", "occurrence", "size", "accesses", "label")},
            alloc_ns=None, free_ns=None, retouch_us=None, sequential=None, recurs=None)
        placement = replace(placement, **{f: getattr(placement, f)[known] for f in (
            "object", "size", "accesses", "tier", "fast_bytes", "priority", "order",
            "cumulative_fill", "reason")}, ranges=None if placement.ranges is None else
            tuple(r for r, k in zip(placement.ranges, known) if k))
    keys, inverse = np.unique(objects.context_key.astype(str), return_inverse=True)
    code = np.select([placement.tier == "fast", placement.tier == "slow"], [0, 1], 2)
    lo = np.full(len(keys), 3)
    hi = np.full(len(keys), -1)
    np.minimum.at(lo, inverse, code)
    np.maximum.at(hi, inverse, code)
    count = np.bincount(inverse, minlength=len(keys))
    grouped = (lo == hi) & (lo < 2) & (count > 1)
    entries = []
    by_group = np.split(np.argsort(inverse, kind="stable"), np.cumsum(count)[:-1])
    for g in np.flatnonzero(grouped).tolist():
        rows = by_group[g]
        size = objects.size[rows]
        fast = placement.tier[rows[0]] == "fast"
        entries.append({
            "phase": phase, "context_key": str(keys[g]), "occurrence": None,
            "size_min": int(size.min()), "size_max": int(size.max()), "objects": int(len(rows)),
            "tier": "fast" if fast else "slow", "fast_bytes": int(size.max()) if fast else 0,
            "accesses": float(objects.accesses[rows].sum()),
            "label": str(objects.label[rows[0]]),
        })
    for row in np.flatnonzero(~grouped[inverse]).tolist():
        entry = {
            "phase": phase, "context_key": str(objects.context_key[row]),
            "occurrence": int(objects.occurrence[row]),
            "size_min": int(objects.size[row]), "size_max": int(objects.size[row]), "objects": 1,
            "tier": str(placement.tier[row]), "fast_bytes": int(placement.fast_bytes[row]),
            "accesses": float(placement.accesses[row]), "label": str(objects.label[row]),
        }
        if entry["tier"] == "pages":
            entry["ranges"] = placement.ranges[row].tolist()
        entries.append(entry)
    entries.sort(key=lambda e: (e["context_key"], -1 if e["occurrence"] is None
                                else e["occurrence"]))
    return entries


def _summary(phase: str, placement: Placement) -> dict[str, Any]:
    total = float(placement.accesses.sum())
    return {
        "phase": phase, "objects": len(placement),
        "fast_objects": int((placement.tier == "fast").sum()),
        "split_objects": int(np.isin(placement.tier, ("split", "pages")).sum()),  # partly fast
        "fast_bytes": placement.used_bytes,
        "peak_fast_bytes": placement.peak_bytes,
        "fast_access_share": placement.fast_accesses / total if total > 0 else 0.0,
    }


def build_plan(objects: ObjectTable, result: Placement | PhasePlacement, budget: Budget,
               binary: dict[str, Any] | None, source: str | None = None,
               sections: Any = None) -> dict[str, Any]:
    """The plan document for a Placement (one phase, "*") or a PhasePlacement. With sections
    (objtier.plan.programs.ProgramSections, from a multi-process recording) the plan holds one
    section per program: `programs` and each entry's and large_folios record's `program`."""
    if isinstance(result, PhasePlacement):
        placements = result.placements
        merge = result.merge
        phases = [{"name": n, "parent": p or None, "target": t, "mean_duration_ns": d,
                   "executions": e, "similarity": None if s != s else round(s, 6), "reason": r}
                  for n, p, t, d, e, s, r in zip(merge.name, merge.parent, merge.target,
                                                 merge.mean_duration_ns, merge.executions,
                                                 merge.similarity, merge.reason)]
    else:
        placements = {ROOT: result}
        phases = [{"name": ROOT, "parent": None, "target": ROOT, "mean_duration_ns": None,
                   "executions": 1, "similarity": None, "reason": "the whole program"}]
    first = next(iter(placements.values()))
    warnings: list[str] = []
    unknown = int((objects.context_key == "").sum())
    if objects.recurs is not None and (~objects.recurs).any():
        gone = ~objects.recurs & (objects.context_key != "")
        warnings.append(f"{int(gone.sum())} object(s) ({int(objects.size[gone].sum())} bytes) "
                        f"not made again in every recording are not in the plan")
    if unknown:
        warnings.append(f"{unknown} object(s) with an unknown allocation context "
                        f"({int(objects.size[objects.context_key == ''].sum())} bytes) are not "
                        f"in the plan")
    for placement in placements.values():
        warnings.extend(w for w in placement.warnings if w not in warnings)
    entries = []
    folios = large_folio_objects(objects, placements)
    if sections is None:
        for phase, placement in placements.items():
            entries.extend(plan_entries(objects, placement, phase))
    else:
        entries, folios = sections.split(objects, placements, plan_entries, folios)
        warnings.extend(sections.warnings())
    plan = {
        "format": FORMAT, "version": VERSION,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "generator": f"objtier {__version__}",
        "binary": binary or {"path": None, "build_id": None, "size": None},
        "source": source,
        "budget": {"given": budget.given, "bytes": budget.bytes, "percent": budget.percent,
                   "footprint_bytes": budget.footprint_bytes, "page_bytes": first.page_bytes},
        "algorithm": {"name": first.algorithm, "params": first.params},
        "warnings": warnings,
        "phases": phases,
        "summary": [_summary(p, pl) for p, pl in placements.items()],
        "large_folios": folios,
        "entries": entries,
    }
    if sections is not None:
        plan["programs"] = sections.programs
        plan["binary"] = binary or sections.main_binary()
    return plan


def dumps(plan: dict[str, Any]) -> str:
    """JSON text of a plan: indented header, then one entry per line (diffable, fast)."""
    head = {k: v for k, v in plan.items() if k != "entries"}
    text = json.dumps(head, indent=1)
    assert text.endswith("\n}")
    entries = ",\n".join("  " + json.dumps(e) for e in plan.get("entries", []))
    return text[:-2] + ',\n "entries": [\n' + entries + ("\n" if entries else "") + " ]\n}\n"


def write_plan(plan: dict[str, Any], path: str | os.PathLike) -> None:
    """Validate and write a plan as JSON (atomically: temp file + rename)."""
    validate_plan(plan, str(path))
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    try:
        write_private(tmp, dumps(plan), "plan")  # mode 0600: plans name binaries and paths
        os.replace(tmp, target)
    except (OSError, UsageError) as error:
        tmp.unlink(missing_ok=True)
        reason = error.strerror if isinstance(error, OSError) else str(error).rpartition(": ")[2]
        raise UsageError(f"cannot write {path}: {reason}") from None


def load_plan(path: str | os.PathLike) -> dict[str, Any]:
    """Read and validate a plan; UsageError with one line for anything wrong."""
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise UsageError(f"cannot read plan {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not a plan file (not UTF-8 text)") from None
    try:
        plan = json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(f"{path} is not a plan file (bad JSON at line {error.lineno})") from None
    validate_plan(plan, str(path))
    return plan


def _fail(where: str, message: str) -> None:
    raise UsageError(f"{where}: {message}")


def _check_ranges(where: str, i: int, e: dict[str, Any]) -> None:
    """A "pages" entry's ranges: [offset, length] integer pairs, length > 0, sorted, disjoint,
    lengths summing to fast_bytes."""
    ranges = e.get("ranges")
    ok = isinstance(ranges, list) and len(ranges) > 0
    end = total = 0
    for r in ranges if ok else []:
        ok = (isinstance(r, list) and len(r) == 2 and all(_is_int(v) for v in r)
              and end <= r[0] <= MAX_BYTES and 0 < r[1] <= MAX_BYTES - r[0])
        if not ok:
            break
        end, total = r[0] + r[1], total + r[1]
    if not ok or total != e["fast_bytes"]:
        _fail(where, f"entry {i}: a pages entry needs ranges, sorted disjoint [offset, length] "
                     f"pairs whose lengths sum to fast_bytes")


def validate_plan(plan: Any, where: str = "plan") -> None:
    """Check format, version and every entry's fields; raises UsageError (one line)."""
    if not isinstance(plan, dict) or plan.get("format") != FORMAT:
        _fail(where, f"not an objtier plan (format is not {FORMAT!r})")
    version = plan.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        _fail(where, "plan has no integer version")
    if version == DYNAMIC_VERSION or "dynamic" in plan:
        _fail(where, "a plan with a dynamic schedule (version 2): schedules were removed, "
                     "plan again without --dynamic")
    if version != VERSION:
        _fail(where, f"plan version {version} is not supported (this objtier reads {VERSION})")
    recording = plan.get("recording")
    if recording is not None and not (
            isinstance(recording, dict)
            and _is_int(recording.get("stack_depth")) and 1 <= recording["stack_depth"] <= 32
            and _is_int(recording.get("min_size")) and 1 <= recording["min_size"] <= MAX_BYTES):
        _fail(where, "plan's recording settings are not valid (stack_depth 1 to 32, min_size "
                     "from 1 byte)")
    budget = plan.get("budget")
    if not isinstance(budget, dict) or not _is_int(budget.get("bytes")) \
            or not _is_int(budget.get("page_bytes")):
        _fail(where, "plan has no valid budget (bytes, page_bytes)")
    if not 1 <= budget["bytes"] <= MAX_BYTES:
        _fail(where, f"budget bytes must be from 1 to {MAX_BYTES}, got {budget['bytes']}")
    if not 1 <= budget["page_bytes"] <= MAX_PAGE_BYTES:
        _fail(where, f"budget page_bytes must be from 1 to {MAX_PAGE_BYTES}, "
                     f"got {budget['page_bytes']}")
    if "footprint_bytes" in budget and budget["footprint_bytes"] is not None and not (
            _is_int(budget["footprint_bytes"]) and 0 <= budget["footprint_bytes"] <= MAX_BYTES):
        _fail(where, f"budget footprint_bytes must be null or an integer from 0 to {MAX_BYTES}")
    _check_header(where, plan)
    phases = plan.get("phases")
    if not isinstance(phases, list) or not all(isinstance(p, dict) and isinstance(
            p.get("name"), str) and isinstance(p.get("target"), str) and isinstance(
            p.get("parent"), (str, type(None))) for p in phases):
        _fail(where, "plan has no valid phase list")
    if len(phases) > MAX_PHASES:
        _fail(where, f"plan has {len(phases)} phases; the runtime takes at most {MAX_PHASES}")
    for p in phases:
        for name in filter(None, (p["name"], p["target"], p.get("parent"))):
            if _utf8_bytes(where, "a phase name", name) > MAX_PHASE_NAME_BYTES:
                _fail(where, f"phase name {_shown(name)} is longer than "
                             f"{MAX_PHASE_NAME_BYTES} bytes")
    names = {p["name"] for p in phases}
    if ROOT not in names or not all(p["target"] in names for p in phases):
        _fail(where, f"plan phases must include {ROOT!r} and target known phases")
    entries = plan.get("entries")
    if not isinstance(entries, list):
        _fail(where, "plan has no entry list")
    for i, e in enumerate(entries):
        _check_match(where, f"entry {i}", e, ("size_min", "size_max", "fast_bytes"))
        if e.get("tier") not in TIERS:
            _fail(where, f"entry {i}: tier must be one of {', '.join(TIERS)}")
        if e["tier"] == "pages":
            _check_ranges(where, i, e)
        if not isinstance(e.get("phase"), str) or e["phase"] not in names:
            _fail(where, f"entry {i}: unknown phase {_shown(e.get('phase'))}")
    _check_large_folios(where, plan.get("large_folios", []))
    _check_programs(where, plan)
    if "sites" in plan:   # small-block sites served from arenas (objtier.plan.sites)
        from objtier.plan.sites import check_sites
        check_sites(where, plan["sites"])


MAX_RANK = (1 << 63) - 1


def _check_programs(where: str, plan: dict[str, Any]) -> None:
    """The optional `programs` list (sections of a multi-program plan) and the `program` index
    of every entry and large_folios record: present exactly when there are programs."""
    programs = plan.get("programs")
    if programs is None:
        programs = []
    if not isinstance(programs, list):
        _fail(where, "programs must be a list")
    for i, p in enumerate(programs):
        if not isinstance(p, dict) or not isinstance(p.get("path"), str) or not p["path"]:
            _fail(where, f"program {i} needs a path")
        _utf8_bytes(where, "a program path", p["path"])
        build = p.get("build_id")
        if build is not None and not (isinstance(build, str) and _BUILD_ID.fullmatch(build)):
            _fail(where, f"program {i}: build_id must be null or 2 to 64 lowercase hex digits")
        rank = p.get("rank")
        if rank is not None and not (_is_int(rank) and 0 <= rank <= MAX_RANK):
            _fail(where, f"program {i}: rank must be null or an integer from 0 to {MAX_RANK}")
    for what, records in (("entry", plan.get("entries", [])),
                          ("large_folios record", plan.get("large_folios", []))):
        for i, r in enumerate(records):
            index = r.get("program")
            if programs and not (_is_int(index) and 0 <= index < len(programs)):
                _fail(where, f"{what} {i}: program must be an index into the plan's "
                             f"{len(programs)} programs")
            if not programs and index is not None:
                _fail(where, f"{what} {i}: program given but the plan has no programs")


def _check_match(where: str, what: str, record: Any, sizes: tuple[str, ...]) -> None:
    """The object match of an entry or a large_folios record: a 16-hex context_key, an
    occurrence (null or >= 0), the byte fields `sizes` integers >= 0, size_min <= size_max."""
    if not isinstance(record, dict):
        _fail(where, f"{what} is not an object")
    if not isinstance(record.get("context_key"), str) or not _KEY.fullmatch(record["context_key"]):
        _fail(where, f"{what}: context_key must be 16 lowercase hex digits")
    if "occurrence" not in record:
        _fail(where, f"{what}: occurrence is missing (null for any)")
    occ = record["occurrence"]
    if occ is not None and (not _is_int(occ) or not 0 <= occ <= MAX_OCCURRENCE):
        _fail(where, f"{what}: occurrence must be null or an integer from 0 to "
                     f"{MAX_OCCURRENCE}")
    for name in sizes:
        value = record.get(name)
        if not _is_int(value) or not 0 <= value <= MAX_BYTES:
            _fail(where, f"{what}: {name} must be an integer from 0 to {MAX_BYTES} (bytes), "
                         f"got {_shown(value)}")
    if record["size_min"] > record["size_max"]:
        _fail(where, f"{what}: size_min > size_max")


def _check_header(where: str, plan: dict[str, Any]) -> None:
    """The fields the text form and `objtier run` read besides budget, phases and entries."""
    algorithm = plan.get("algorithm")
    if not isinstance(algorithm, dict) or not isinstance(algorithm.get("name"), str):
        _fail(where, "plan has no algorithm name")
    if not isinstance(plan.get("generator", ""), str):
        _fail(where, "plan generator must be a string")
    _utf8_bytes(where, "the algorithm name", algorithm["name"])
    _utf8_bytes(where, "the generator", plan.get("generator", ""))
    _utf8_bytes(where, "the budget as given", str(plan["budget"].get("given")))
    binary = plan.get("binary")
    if binary is None:
        return
    if not isinstance(binary, dict):
        _fail(where, "plan binary must be an object or null")
    for name in ("path", "build_id"):
        if not isinstance(binary.get(name), (str, type(None))):
            _fail(where, f"plan binary {name} must be a string or null")
        _utf8_bytes(where, f"the binary {name}", binary.get(name) or "")
    build_id = binary.get("build_id")
    if build_id and not _HEX.fullmatch(build_id):
        _fail(where, "plan binary build_id must be hex digits")
    size = binary.get("size")
    if size is not None and not (_is_int(size) and 0 <= size <= MAX_BYTES):
        _fail(where, f"plan binary size must be null or an integer from 0 to {MAX_BYTES}")


def _utf8_bytes(where: str, what: str, text: str) -> int:
    """Bytes of text in UTF-8; a string that has no UTF-8 form (a lone surrogate from a
    JSON \\ud800 escape) cannot be written to the text form."""
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        _fail(where, f"{what} is not valid Unicode text")
    return 0


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, (int, float, str, bool, type(None))) \
        else type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def _check_large_folios(where: str, records: Any) -> None:
    """The optional large_folios list: records that match objects as entries do."""
    if not isinstance(records, list):
        _fail(where, "large_folios must be a list")
    for i, r in enumerate(records):
        _check_match(where, f"large_folios record {i}", r, ("size_min", "size_max"))
