"""The `dynamic` policy's schedule for the simulator: learned from this trace
(objtier.plan.dynamic) or read from a plan file's `dynamic` section, and the PHASE events
(one per step, obj = step index) that run it in the core (native/sim/policy_dynamic.c)."""

from __future__ import annotations

import numpy as np

from objtier.errors import UsageError
from objtier.plan import dynamic as D
from objtier.sim.engine import EV_PHASE, EVENT, NO_OBJ
from objtier.sim.placement import context_keys, occurrences

LEARN_PARAMS = ("window_ms", "min_accesses", "pageout")  # policy parameters the driver reads


def schedule_for(trace, source, lock_bytes: int, page_shift: int, plan_doc: dict | None,
                 params: dict[str, float], default_weight: int = 1) -> D.Schedule:
    """The schedule, with its step events put into source.phase_ev."""
    from objtier.sim.phases import timeline

    tl = timeline(trace, source.end_ns)
    order = np.argsort(tl.switch_ns, kind="stable")
    switch_ns = tl.switch_ns[order]
    switch_name = [tl.switch_name[i] for i in order]
    if plan_doc is not None and plan_doc.get("dynamic"):
        sched = schedule_from_plan(trace, source, plan_doc, switch_ns, page_shift, switch_name)
    else:
        window_ms = float(params.get("window_ms", D.DEFAULT_WINDOW_MS))
        min_acc = float(params.get("min_accesses", D.DEFAULT_MIN_ACCESSES))
        pageout = float(params.get("pageout", 1)) != 0
        if window_ms < 0 or min_acc < 1:
            raise UsageError("dynamic.window_ms must be >= 0 and dynamic.min_accesses >= 1")
        ev = source.sample_ev
        obj = np.where(ev["obj"] == NO_OBJ, -1, ev["obj"].astype(np.int64))
        bounds = D.boundaries(source.start_ns, source.end_ns, switch_ns, switch_name, window_ms)
        sched = D.learn(ev["time_ns"], obj, ev["addr"], ev["size"].astype(np.float64),
                        source.addr, source.size, bounds, lock_bytes >> page_shift, page_shift,
                        window_ms, min_acc, pageout=pageout)
    steps = np.zeros(len(sched.steps), dtype=EVENT)
    steps["time_ns"] = [s.time_ns for s in sched.steps]
    steps["obj"] = np.arange(len(sched.steps), dtype=np.uint32)
    steps["type"] = EV_PHASE
    source.phase_ev = steps[np.argsort(steps["time_ns"], kind="stable")]
    return sched


def section_from_trace(trace, lock_bytes: int, page_bytes: int, window_ms: float,
                       min_accesses: float) -> dict:
    """A plan's `dynamic` section learned from a recording (objtier plan --dynamic)."""
    from objtier.analysis.objects import object_labels
    from objtier.plan.dynamic_file import build_section
    from objtier.sim.events import from_trace

    if page_bytes & (page_bytes - 1):
        raise UsageError(f"--dynamic needs a power-of-two page size, not {page_bytes}")
    shift = page_bytes.bit_length() - 1
    source = from_trace(trace)
    sched = schedule_for(trace, source, lock_bytes, shift, None,
                         {"window_ms": window_ms, "min_accesses": min_accesses})
    keys = context_keys(trace, source)
    return build_section(sched, keys, occurrences(keys, source.pid), source.size,
                         object_labels(trace))


def schedule_from_plan(trace, source, plan_doc: dict, switch_ns: np.ndarray,
                       page_shift: int, switch_name: list[str]) -> D.Schedule:
    """A plan's schedule on this trace's objects and clock, for the simulator: an object is
    the allocation with the plan object's context key, occurrence and size; a step runs at
    this trace's `switch`-th switch of the phase in force plus its offset (steps whose switch
    the trace never reaches do not run)."""
    section = plan_doc["dynamic"]
    if (1 << page_shift) != section["page_bytes"]:
        raise UsageError(f"the plan's schedule counts pages of {section['page_bytes']} bytes; "
                         f"simulate with --param page= of that size")
    keys = context_keys(trace, source).astype(str)
    occ = occurrences(keys, source.pid)
    index = {(str(k), int(c), int(z)): i for i, (k, c, z) in
             enumerate(zip(keys, occ, source.size))}
    obj_of = [index.get((o["context_key"], o["occurrence"], o["size"]), -1)
              for o in section["objects"]]
    marks = D.switch_marks(source.start_ns, switch_ns, switch_name)
    at = {ordinal: t for t, ordinal, _ in marks}
    scale = float(section.get("clock_scale", 1.0))
    steps = []
    for s in section["steps"]:
        if s["switch"] not in at:
            continue
        offset = int(round(float(s["offset_ms"]) * 1e6 * scale))
        actions = [(D.ACTION_CODES[a[0]], obj_of[a[1]], a[2], a[3]) for a in s["actions"]
                   if obj_of[a[1]] >= 0]
        steps.append(D.Step(at[s["switch"]] + offset, s["switch"], s.get("phase", ""),
                            offset, actions))
    steps.sort(key=lambda s: s.time_ns)
    return D.Schedule(steps, section["lock_bytes"] >> page_shift, page_shift,
                      float(section.get("window_ms", 0)))
