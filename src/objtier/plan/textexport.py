"""Compact text form of a plan, for the C runtime (OBJTIER_PLAN), parsable without JSON.

Grammar (one record per line, fields separated by single spaces, "\\n" line ends):
    objtier-plan 1                                   first line: format and version
    # ...                                            comment (also blank lines): ignored
    binary BUILD_ID SIZE PATH                        BUILD_ID hex or "-"; SIZE bytes or "-"
    budget BYTES PAGE_BYTES                          fast budget and planning page size
    phase NAME PARENT TARGET                         one per profiled phase; PARENT "-" for
                                                     the root "*"; TARGET = phase whose
                                                     entries apply while NAME runs
    KEY OCC SIZE_MIN SIZE_MAX TIER FAST_BYTES PHASE  an entry: KEY = 16 lowercase hex digits
                                                     (no keyword is 16 hex digits, so the
                                                     first field tells entries from other
                                                     records); OCC decimal or "*" (any);
                                                     TIER fast|slow|split|pages; sizes
                                                     decimal bytes
    KEY OCC SIZE_MIN SIZE_MAX pages FAST_BYTES PHASE RANGES
                                                     a "pages" entry: RANGES = OFF:LEN pairs
                                                     joined by ",", decimal bytes from the
                                                     object's first whole page (planfile)
    folio KEY OCC SIZE_MIN SIZE_MAX                  an object whose planned-slow pages are
                                                     faulted in as large folios (plan.folios);
                                                     OCC decimal or "*"
    site KEY FRAME0 TIER [LOCK_BYTES]                small blocks of the context KEY (FRAME0:
                                                     its innermost frame's key) served from an
                                                     arena kept fast, slow or apart; fast with
                                                     LOCK_BYTES: its first chunks up to that
                                                     many bytes locked (plan.sites)
    program BUILD_ID RANK PATH                       starts the section of one program of a
                                                     multi-program plan (plan.programs): the
                                                     folio and entry lines up to the next
                                                     `program` apply only in processes of that
                                                     binary (BUILD_ID hex, or "-": by PATH's
                                                     base name) and rank (RANK decimal, or "-":
                                                     any); lines before the first apply to all
Names (PATH, NAME, PARENT, TARGET, PHASE) are UTF-8 with "%", "#", control characters and
whitespace written as %XX (hex of each byte), so no field holds a space.
"""

from __future__ import annotations

import re
from typing import Any

from objtier.errors import UsageError
from objtier.plan.per_phase import ROOT as ROOT_PHASE
from objtier.plan.planfile import VERSION, validate_plan

HEADER = f"objtier-plan {VERSION}"
_BUILD_ID = re.compile(r"(?:[0-9a-f]{2}){1,32}")   # as plan.c's parse_program


def escape(name: str) -> str:
    """%XX-encode bytes that would break the line format; the empty string becomes "%"."""
    if name == "":
        return "%"
    out = []
    for ch in name:
        if ch in "%#" or ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8")))
        else:
            out.append(ch)
    return "".join(out)


def unescape(field: str) -> str:
    """Inverse of escape; ValueError on a malformed %XX."""
    if field == "%":
        return ""
    data = bytearray()
    i = 0
    raw = field.encode("utf-8")
    while i < len(raw):
        if raw[i] == ord("%") and i + 2 < len(raw):
            digits = raw[i + 1:i + 3]
            if not all(c in b"0123456789abcdefABCDEF" for c in digits):
                raise ValueError(field)
            data.append(int(digits, 16))
            i += 3
        else:
            data.append(raw[i])
            i += 1
    return data.decode("utf-8")


def to_text(plan: dict[str, Any]) -> str:
    """The text form of a validated plan."""
    validate_plan(plan)
    binary = plan.get("binary") or {}
    lines = [
        HEADER,
        f"# algorithm {escape(plan['algorithm']['name'])} "
        f"budget {escape(str(plan['budget'].get('given', '')))}"
        f" generator {escape(plan.get('generator', ''))}",
        f"binary {binary.get('build_id') or '-'} "
        f"{'-' if binary.get('size') is None else binary['size']} "
        f"{escape(binary.get('path') or '-')}",
        f"budget {plan['budget']['bytes']} {plan['budget']['page_bytes']}",
    ]
    for p in plan["phases"]:
        lines.append(f"phase {escape(p['name'])} {escape(p['parent']) if p.get('parent') else '-'}"
                     f" {escape(p['target'])}")
    from objtier.plan.sites import text_lines
    lines.extend(text_lines(plan))   # `site` records apply in every process
    programs = plan.get("programs") or []
    for section in [None] + list(range(len(programs))):
        if section is not None:
            p = programs[section]
            rank = "-" if p.get("rank") is None else str(p["rank"])
            lines.append(f"program {p.get('build_id') or '-'} {rank} {escape(p['path'])}")
        for r in plan.get("large_folios", []):
            if r.get("program") != section:
                continue
            occ = "*" if r["occurrence"] is None else str(r["occurrence"])
            lines.append(f"folio {r['context_key']} {occ} {r['size_min']} {r['size_max']}")
        for e in plan["entries"]:
            if e.get("program") != section:
                continue
            occ = "*" if e["occurrence"] is None else str(e["occurrence"])
            ranges = (" " + ",".join(f"{o}:{n}" for o, n in e["ranges"])
                      if e["tier"] == "pages" else "")
            lines.append(f"{e['context_key']} {occ} {e['size_min']} {e['size_max']} "
                         f"{e['tier']} {e['fast_bytes']} {escape(e['phase'])}{ranges}")
    return "\n".join(lines) + "\n"


U64_MAX = (1 << 64) - 1
MAX_PHASES = 256           # RT_PLAN_MAX_PHASES (native/runtime/place/plan.h)
MAX_NAME_BYTES = 255       # RT_PLAN_MAX_NAME


def _dec(field: str) -> int:
    """A decimal u64 as the runtime reads it: 1 to 20 ASCII digits, at most 2^64 - 1 (no sign,
    no spaces, no underscores). ValueError otherwise."""
    if not 1 <= len(field) <= 20 or not field.isascii() or not field.isdigit():
        raise ValueError(field)
    value = int(field)
    if value > U64_MAX:
        raise ValueError(field)
    return value


def _key(field: str) -> str:
    if len(field) != 16 or field.strip("0123456789abcdef"):
        raise ValueError(field)
    return field


def _name(field: str) -> str:
    name = unescape(field)
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise ValueError(field)
    return name


def _match(f: list[str]) -> dict[str, Any]:
    """KEY OCC SIZE_MIN SIZE_MAX: OCC decimal below 2^64 - 1 or "*", SIZE_MIN <= SIZE_MAX."""
    occurrence = None if f[1] == "*" else _dec(f[1])
    if occurrence == U64_MAX:  # the runtime's "*"
        raise ValueError(f[1])
    size_min, size_max = _dec(f[2]), _dec(f[3])
    if size_min > size_max:
        raise ValueError(f[2])
    return {"context_key": _key(f[0]), "occurrence": occurrence, "size_min": size_min,
            "size_max": size_max}


def _ranges(field: str, fast_bytes: int) -> list[list[int]]:
    """OFF:LEN pairs, LEN > 0, sorted, disjoint, no overflow, lengths summing to fast_bytes."""
    out, end = [], 0
    for part in field.split(","):
        off_text, colon, len_text = part.partition(":")
        if not colon:
            raise ValueError(part)
        off, length = _dec(off_text), _dec(len_text)
        if length == 0 or off < end or off > U64_MAX - length:
            raise ValueError(part)
        out.append([off, length])
        end = off + length
    if sum(length for _, length in out) != fast_bytes:
        raise ValueError(field)
    return out


def parse_text(text: str) -> dict[str, Any]:
    """Parse the text form back (the reference for the C parser, native/runtime/place/plan.c, with
    its checks: decimal u64 fields, size_min <= size_max, sorted disjoint ranges summing to
    fast_bytes, at most 256 phases, names of at most 255 bytes, targets that are phases;
    names must also be UTF-8 here); UsageError (one line) when malformed."""
    lines = text.split("\n")
    if lines[0].removesuffix("\r") != HEADER:
        raise UsageError(f"not an objtier text plan (first line is not {HEADER!r})")
    out: dict[str, Any] = {"binary": None, "budget": None, "phases": [], "entries": [],
                           "large_folios": [], "programs": []}
    section: int | None = None   # the `program` section the lines belong to
    phases: dict[str, str | None] = {ROOT_PHASE: None}  # name -> target named by a record
    for number, line in enumerate(lines[1:], start=2):
        line = line.removesuffix("\r")
        if not line or line.startswith("#"):
            continue
        f = line.split(" ")
        try:
            if f[0] == "binary":
                if len(f) != 4:
                    raise ValueError
                size = int(f[2]) if f[2].isascii() and f[2].isdigit() else None  # informative
                out["binary"] = {"build_id": None if f[1] == "-" else f[1], "size": size,
                                 "path": unescape(f[3])}
            elif f[0] == "budget":
                if len(f) != 3:
                    raise ValueError
                out["budget"] = {"bytes": _dec(f[1]), "page_bytes": _dec(f[2])}
            elif f[0] == "phase":
                if len(f) != 4:
                    raise ValueError
                name, target = _name(f[1]), _name(f[3])
                parent = None if f[2] == "-" else _name(f[2])
                if name not in phases and len(phases) == MAX_PHASES:
                    raise ValueError
                phases[name] = target
                out["phases"].append({"name": name, "parent": parent, "target": target})
            elif f[0] == "program":
                if len(f) != 4 or (f[1] != "-" and not _BUILD_ID.fullmatch(f[1])):
                    raise ValueError
                rank = None if f[2] == "-" else _dec(f[2])
                if rank == U64_MAX:
                    raise ValueError
                section = len(out["programs"])
                out["programs"].append({"build_id": None if f[1] == "-" else f[1],
                                        "rank": rank, "path": unescape(f[3])})
            elif f[0] == "site":
                from objtier.plan.sites import parse_record
                out.setdefault("sites", []).append(parse_record(f))
            elif f[0] == "folio":
                if len(f) != 5:
                    raise ValueError
                out["large_folios"].append(_match(f[1:]))
                if section is not None:
                    out["large_folios"][-1]["program"] = section
            elif len(f) == 7 or (len(f) == 8 and f[4] == "pages"):
                entry = _match(f)
                entry.update(tier=f[4], fast_bytes=_dec(f[5]), phase=_name(f[6]))
                if entry["tier"] not in ("fast", "slow", "split", "pages"):
                    raise ValueError
                if (entry["tier"] == "pages") != (len(f) == 8):
                    raise ValueError
                if entry["tier"] == "pages":
                    entry["ranges"] = _ranges(f[7], entry["fast_bytes"])
                if section is not None:
                    entry["program"] = section
                if entry["phase"] not in phases:  # a phase with no `phase` record
                    if len(phases) == MAX_PHASES:
                        raise ValueError
                    phases[entry["phase"]] = None
                out["entries"].append(entry)
            else:
                raise ValueError
        except ValueError:  # UnicodeDecodeError of a %XX name is a ValueError too
            raise UsageError(f"text plan line {number}: cannot parse {line[:60]!r}") from None
    for name, target in phases.items():
        if target is not None and target not in phases:
            raise UsageError(f"text plan: phase {name!r} has target {target!r}, which is not "
                             f"a phase")
    return out
