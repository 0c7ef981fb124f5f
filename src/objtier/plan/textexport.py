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
Names (PATH, NAME, PARENT, TARGET, PHASE) are UTF-8 with "%", "#", control characters and
whitespace written as %XX (hex of each byte), so no field holds a space.
"""

from __future__ import annotations

from typing import Any

from objtier.errors import UsageError
from objtier.plan.planfile import VERSION, validate_plan

HEADER = f"objtier-plan {VERSION}"


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
            data.append(int(raw[i + 1:i + 3], 16))
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
        f"# algorithm {plan['algorithm']['name']} budget {escape(str(plan['budget']['given']))}"
        f" generator {escape(plan.get('generator', ''))}",
        f"binary {binary.get('build_id') or '-'} "
        f"{'-' if binary.get('size') is None else binary['size']} "
        f"{escape(binary.get('path') or '-')}",
        f"budget {plan['budget']['bytes']} {plan['budget']['page_bytes']}",
    ]
    for p in plan["phases"]:
        lines.append(f"phase {escape(p['name'])} {escape(p['parent']) if p.get('parent') else '-'}"
                     f" {escape(p['target'])}")
    for r in plan.get("large_folios", []):
        occ = "*" if r["occurrence"] is None else str(r["occurrence"])
        lines.append(f"folio {r['context_key']} {occ} {r['size_min']} {r['size_max']}")
    for e in plan["entries"]:
        occ = "*" if e["occurrence"] is None else str(e["occurrence"])
        ranges = (" " + ",".join(f"{o}:{n}" for o, n in e["ranges"])
                  if e["tier"] == "pages" else "")
        lines.append(f"{e['context_key']} {occ} {e['size_min']} {e['size_max']} {e['tier']} "
                     f"{e['fast_bytes']} {escape(e['phase'])}{ranges}")
    return "\n".join(lines) + "\n"


def parse_text(text: str) -> dict[str, Any]:
    """Parse the text form back (the reference for the C parser); UsageError when malformed."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != HEADER:
        raise UsageError(f"not an objtier text plan (first line is not {HEADER!r})")
    out: dict[str, Any] = {"binary": None, "budget": None, "phases": [], "entries": [],
                           "large_folios": []}
    for number, line in enumerate(lines[1:], start=2):
        if not line or line.startswith("#"):
            continue
        f = line.split(" ")
        try:
            if f[0] == "binary" and len(f) == 4:
                out["binary"] = {"build_id": None if f[1] == "-" else f[1],
                                 "size": None if f[2] == "-" else int(f[2]),
                                 "path": unescape(f[3])}
            elif f[0] == "budget" and len(f) == 3:
                out["budget"] = {"bytes": int(f[1]), "page_bytes": int(f[2])}
            elif f[0] == "phase" and len(f) == 4:
                out["phases"].append({"name": unescape(f[1]),
                                      "parent": None if f[2] == "-" else unescape(f[2]),
                                      "target": unescape(f[3])})
            elif f[0] == "folio" and len(f) == 5 and len(f[1]) == 16 \
                    and not f[1].strip("0123456789abcdef"):
                out["large_folios"].append({
                    "context_key": f[1], "occurrence": None if f[2] == "*" else int(f[2]),
                    "size_min": int(f[3]), "size_max": int(f[4])})
            elif len(f) == (8 if f[4:5] == ["pages"] else 7) and len(f[0]) == 16 \
                    and not f[0].strip("0123456789abcdef"):
                entry = {
                    "context_key": f[0], "occurrence": None if f[1] == "*" else int(f[1]),
                    "size_min": int(f[2]), "size_max": int(f[3]), "tier": f[4],
                    "fast_bytes": int(f[5]), "phase": unescape(f[6])}
                if len(f) == 8:
                    entry["ranges"] = [[int(v) for v in r.split(":", 1)] for r in f[7].split(",")]
                    if any(len(r) != 2 for r in entry["ranges"]):
                        raise ValueError
                out["entries"].append(entry)
            else:
                raise ValueError
        except ValueError:
            raise UsageError(f"text plan line {number}: cannot parse {line[:60]!r}") from None
    return out
