"""The plan file's `dynamic` section (plan version 2) and its text form for the runtime.

JSON (docs/planning.md, "Dynamic schedules"):

    "dynamic": {"page_bytes": 4096, "lock_bytes": 15099494, "window_ms": 0,
                "clock_scale": 1.0,
                "objects": [{"id": 0, "context_key": "9f3c…", "occurrence": 0,
                             "size": 16777216, "label": "alt.c:40 main"}],
                "steps": [{"switch": 1, "phase": "x", "offset_ms": 0.0,
                           "actions": [["lock", 0, 0, 3686]]}]}

Schedule `online` ("mode": "online", "period_ms": 100, no objects, no steps) learns nothing
ahead: the runtime moves its locks every period_ms after the fault sampler's recent accesses.

A step runs at the `switch`-th change of the phase in force in the process (0 = the start),
`offset_ms` × clock_scale after it. An action is [name, object id, first page, pages]; pages
count from the page holding the object's first byte, in page_bytes. Names: unlock, pageout,
lock, willneed, sweep (objtier.plan.dynamic).

Text form (OBJTIER_DYNAMIC), one record per line, single spaces:
    objtier-dynamic 1
    page PAGE_BYTES
    scale CLOCK_SCALE                      offsets are multiplied by it
    object ID KEY OCC SIZE                 KEY 16 hex digits, OCC decimal
    step SWITCH OFFSET_NS                  the actions below belong to it
    ACTION ID FIRST PAGES                  ACTION one of the names above
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from objtier.bounds import ADVICE_RATE_MAX
from objtier.errors import UsageError
from objtier.plan import dynamic as D

SECTION_VERSION = 2          # plan "version" of a plan with a dynamic section
TEXT_HEADER = "objtier-dynamic 1"
MAX_STEPS = 1 << 20
MAX_ACTIONS = 1 << 24
_KEY = re.compile(r"^[0-9a-f]{16}$")


def build_section(schedule: D.Schedule, keys: np.ndarray, occ: np.ndarray, size: np.ndarray,
                  labels: np.ndarray | None) -> dict[str, Any]:
    """The JSON section of a schedule learned on a trace whose objects (trace.allocations rows)
    have these context keys, occurrences and sizes. Objects without a context key (unknown
    allocation site) cannot be found at run time: their actions are dropped."""
    used = sorted({a[1] for s in schedule.steps for a in s.actions})
    ids: dict[int, int] = {}
    objects = []
    for o in used:
        key = str(keys[o])
        if not _KEY.match(key) or key == "0" * 16:  # no known allocation context
            continue
        ids[o] = len(objects)
        objects.append({"id": len(objects), "context_key": key, "occurrence": int(occ[o]),
                        "size": int(size[o]),
                        "label": "" if labels is None else str(labels[o])})
    steps = []
    for s in schedule.steps:
        actions = [[D.ACTION_NAMES[a], ids[o], int(f), int(n)] for a, o, f, n in s.actions
                   if o in ids]
        steps.append({"switch": int(s.switch), "phase": s.phase,
                      "offset_ms": round(s.offset_ns / 1e6, 6), "actions": actions})
    section = {"page_bytes": 1 << schedule.page_shift, "lock_bytes":
               schedule.lock_pages << schedule.page_shift, "window_ms": schedule.window_ms,
               "clock_scale": 1.0, "mode": schedule.mode,
               "simulated_swap_ins": dict(schedule.evaluated), "objects": objects,
               "steps": steps}
    if schedule.phases:   # per-phase: the candidate each phase execution runs
        section["phase_modes"] = list(schedule.phases)
    return section


ONLINE_PERIOD_MAX_MS = 60_000   # OBJTIER_ONLINE_MS's bound (config.c)
DEFAULT_ONLINE_MS = 100


def online_section(lock_bytes: int, page_bytes: int, period_ms: int,
                   advice_rate: int, phase_memory: bool = True) -> dict[str, Any]:
    """The section of schedule `online`: no steps learned ahead; the runtime's online
    placement (native/runtime/place/online.c) locks, every period_ms, the ranges the fault
    sampler saw most accessed, at most lock_bytes at once; with phase_memory (absent: true)
    it also acts at phase switches with the scores kept for the phase entered
    (OBJTIER_ONLINE_PHASES)."""
    return {"mode": "online", "page_bytes": page_bytes, "lock_bytes": lock_bytes,
            "period_ms": period_ms, "advice_rate": advice_rate, "phase_memory": phase_memory,
            "clock_scale": 1.0, "window_ms": 0, "objects": [], "steps": []}


def is_online(section: dict[str, Any] | None) -> bool:
    return bool(section) and section.get("mode") == "online"


def _fail(where: str, message: str) -> None:
    raise UsageError(f"{where}: dynamic section: {message}")


def _int(v: Any, lo: int = 0, hi: int = (1 << 63) - 1) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


def validate_section(section: Any, where: str = "plan") -> None:
    """Raise UsageError (one line) for anything the runtime or the simulator could not use."""
    if not isinstance(section, dict):
        _fail(where, "not an object")
    page = section.get("page_bytes")
    if not _int(page, 1, 1 << 30) or page & (page - 1):
        _fail(where, "page_bytes must be a power of two up to 1 GiB")
    if not _int(section.get("lock_bytes")):
        _fail(where, "lock_bytes must be a non-negative integer")
    scale = section.get("clock_scale", 1.0)
    if not isinstance(scale, (int, float)) or isinstance(scale, bool) or not 0 < scale <= 1e6:
        _fail(where, "clock_scale must be a number in (0, 1e6]")
    if "advice_rate" in section and not _int(section["advice_rate"], 1, ADVICE_RATE_MAX):
        _fail(where, f"advice_rate must be an integer in [1, {ADVICE_RATE_MAX}] (calls/s)")
    if section.get("mode") == "online":
        if not _int(section.get("period_ms"), 1, ONLINE_PERIOD_MAX_MS):
            _fail(where, f"an online section needs period_ms, an integer in "
                         f"[1, {ONLINE_PERIOD_MAX_MS}]")
        if section.get("objects") or section.get("steps"):
            _fail(where, "an online section has no objects and no steps")
        if not isinstance(section.get("phase_memory", True), bool):
            _fail(where, "phase_memory must be true or false")
    objects = section.get("objects")
    if not isinstance(objects, list):
        _fail(where, "no object list")
    for i, o in enumerate(objects):
        if not (isinstance(o, dict) and o.get("id") == i and isinstance(o.get("context_key"), str)
                and _KEY.match(o["context_key"]) and _int(o.get("occurrence"))
                and _int(o.get("size"), 1)):
            _fail(where, f"object {i}: needs id {i}, a 16-hex-digit context_key, an occurrence "
                         f"and a size > 0")
    steps = section.get("steps")
    if not isinstance(steps, list) or len(steps) > MAX_STEPS:
        _fail(where, f"steps must be a list of at most {MAX_STEPS}")
    total = 0
    last = (-1, -1.0)
    for i, s in enumerate(steps):
        if not (isinstance(s, dict) and _int(s.get("switch"), 0, 1 << 32)
                and isinstance(s.get("offset_ms"), (int, float))
                and not isinstance(s.get("offset_ms"), bool) and 0 <= s["offset_ms"] <= 1e9
                and isinstance(s.get("actions"), list)):
            _fail(where, f"step {i}: needs switch, offset_ms >= 0 and an action list")
        if (s["switch"], s["offset_ms"]) <= last:
            _fail(where, f"step {i}: steps must be in (switch, offset_ms) order, no repeats")
        last = (s["switch"], float(s["offset_ms"]))
        for a in s["actions"]:
            if not (isinstance(a, list) and len(a) == 4 and a[0] in D.ACTION_CODES
                    and _int(a[1], 0, len(objects) - 1) and _int(a[2]) and _int(a[3])):
                _fail(where, f"step {i}: an action must be [name, object id, first page, pages] "
                             f"with a name of {', '.join(D.ACTION_CODES)}")
        total += len(s["actions"])
    if total > MAX_ACTIONS:
        _fail(where, f"{total} actions; at most {MAX_ACTIONS}")


def to_text(section: dict[str, Any]) -> str:
    """The runtime's text form of a (validated) section."""
    lines = [TEXT_HEADER, f"page {section['page_bytes']}",
             f"scale {float(section.get('clock_scale', 1.0)):.9g}"]
    for o in section["objects"]:
        lines.append(f"object {o['id']} {o['context_key']} {o['occurrence']} {o['size']}")
    for s in section["steps"]:
        lines.append(f"step {s['switch']} {round(float(s['offset_ms']) * 1e6)}")
        lines.extend(f"{a[0]} {a[1]} {a[2]} {a[3]}" for a in s["actions"])
    return "\n".join(lines) + "\n"
