"""Phases for the simulator's `phases` policy: the trace's PHASE records turned into a timeline,
the planner's inputs (phase table, per-phase accesses), the per-phase placement (from a plan
file or planned here with objtier.plan.plan_phases) and the PHASE events fed to the core.

Phase records: (pid, time_ns, tid, name id, event 1 = enter / 2 = exit); names from
trace.names[(pid, name id)]. Phases nest per process (one stack per pid, threads merged: the
planner assumes one phase at a time per process). An exit closes the innermost open execution
of that name (and anything opened inside it); a phase still open at the end of the trace closes
then. The innermost open phase is the one in force; "*" (the root) outside any phase.

The core has one placement at a time: with several processes, the last switch of any of them
decides (a simplification; traces of one process are exact).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from objtier.errors import UsageError
from objtier.sim.engine import EV_PHASE, EVENT

ROOT = "*"
ENTER, EXIT = 1, 2


@dataclass
class PhaseTimeline:
    """Executions (one row per phase execution) and the switches of the innermost phase."""

    name: list[str]        # per execution
    parent: list[str]      # "" for top-level phases
    start_ns: np.ndarray
    end_ns: np.ndarray
    switch_pid: np.ndarray  # per switch, time ordered within each pid
    switch_ns: np.ndarray
    switch_name: list[str]  # the innermost phase from then on (ROOT when none)

    def __len__(self) -> int:
        return len(self.name)

    def table(self) -> dict:
        return {"phase": list(self.name), "parent": list(self.parent),
                "start_ns": self.start_ns, "end_ns": self.end_ns}


def timeline(trace, end_ns: int) -> PhaseTimeline:
    """The phase timeline of a trace. A loop over phase records (few: one per phase entry or
    exit), never over samples."""
    ph = trace.phases
    names = trace.names
    name, parent, start, end = [], [], [], []
    s_pid, s_ns, s_name = [], [], []
    if ph.num_rows:
        cols = {c: ph.column(c).to_numpy(zero_copy_only=False) for c in
                ("pid", "time_ns", "name", "event")}
        order = np.lexsort((np.arange(ph.num_rows), cols["time_ns"], cols["pid"]))
        stacks: dict[int, list[tuple[str, int]]] = {}
        for i in order:
            pid, t = int(cols["pid"][i]), int(cols["time_ns"][i])
            label = names.get((pid, int(cols["name"][i])), f"phase-{int(cols['name'][i])}")
            stack = stacks.setdefault(pid, [])
            before = stack[-1][0] if stack else ROOT
            if int(cols["event"][i]) == ENTER:
                stack.append((label, t))
            else:
                at = max((j for j, (n, _) in enumerate(stack) if n == label), default=-1)
                if at < 0:
                    continue  # an exit without its entry (recording started inside it)
                while len(stack) > at:
                    closed, t0 = stack.pop()
                    name.append(closed)
                    parent.append(stack[-1][0] if stack else "")
                    start.append(t0)
                    end.append(t)
            after = stack[-1][0] if stack else ROOT
            if after != before:
                s_pid.append(pid)
                s_ns.append(t)
                s_name.append(after)
        for stack in stacks.values():
            while stack:
                closed, t0 = stack.pop()
                name.append(closed)
                parent.append(stack[-1][0] if stack else "")
                start.append(t0)
                end.append(max(end_ns, t0))
    return PhaseTimeline(name, parent, np.asarray(start, np.int64), np.asarray(end, np.int64),
                         np.asarray(s_pid, np.uint32), np.asarray(s_ns, np.uint64), s_name)


def sample_phases(tl: PhaseTimeline, pid: np.ndarray, time_ns: np.ndarray,
                  names: list[str]) -> np.ndarray:
    """Index into `names` of the innermost phase in force at each sample (its pid's)."""
    out = np.full(len(time_ns), names.index(ROOT), dtype=np.int64)
    index = {n: i for i, n in enumerate(names)}
    code = np.asarray([index[n] for n in tl.switch_name], dtype=np.int64)
    for p in np.unique(tl.switch_pid):
        mine = tl.switch_pid == p
        times, codes = tl.switch_ns[mine], code[mine]
        sel = np.flatnonzero(pid == p)
        k = np.searchsorted(times, time_ns[sel], side="right") - 1
        hit = k >= 0
        out[sel[hit]] = codes[k[hit]]
    return out


def phase_accesses(tl: PhaseTimeline, sample_obj: np.ndarray, sample_pid: np.ndarray,
                   sample_ns: np.ndarray, weights: np.ndarray) -> dict:
    """Exclusive accesses per (phase, object), phases only (the planner derives the root's)."""
    names = sorted(set(tl.name)) + [ROOT]
    phase = sample_phases(tl, sample_pid, sample_ns, names)
    hit = (sample_obj >= 0) & (phase != len(names) - 1)
    if not hit.any():
        return {"phase": [], "object": np.zeros(0, np.int64), "accesses": np.zeros(0)}
    nobj = int(sample_obj.max()) + 1
    key = phase[hit] * nobj + sample_obj[hit]
    uniq, inv = np.unique(key, return_inverse=True)
    acc = np.bincount(inv, weights=weights[hit])
    return {"phase": [names[int(k // nobj)] for k in uniq], "object": (uniq % nobj),
            "accesses": acc}


@dataclass
class PhasePlan:
    """Per-phase placement for the core (CSR over phases; phase 0 is the root)."""

    phases: list[str]           # survivor phases, ROOT first
    target: dict[str, str]      # every phase name -> the phase whose placement applies
    offsets: np.ndarray         # uint64, len(phases) + 1
    objs: np.ndarray            # uint32
    fast_bytes: np.ndarray      # uint64

    @classmethod
    def from_arrays(cls, phases: list[str], target: dict[str, str],
                    per_phase: dict[str, np.ndarray]) -> "PhasePlan":
        offsets, objs, fast = [0], [], []
        for p in phases:
            fb = np.asarray(per_phase.get(p, np.zeros(0)), dtype=np.uint64)
            nz = np.flatnonzero(fb)
            objs.append(nz.astype(np.uint32))
            fast.append(fb[nz])
            offsets.append(offsets[-1] + len(nz))
        return cls(phases, target, np.asarray(offsets, np.uint64),
                   np.concatenate(objs) if objs else np.zeros(0, np.uint32),
                   np.concatenate(fast) if fast else np.zeros(0, np.uint64))

    def events(self, tl: PhaseTimeline) -> np.ndarray:
        """PHASE events at every switch of the phase whose placement applies."""
        index = {p: i for i, p in enumerate(self.phases)}
        code = np.asarray([index[self.target.get(n, ROOT)] if self.target.get(n, ROOT) in index
                           else 0 for n in tl.switch_name], dtype=np.uint32)
        order = np.argsort(tl.switch_ns, kind="stable")
        code, times = code[order], tl.switch_ns[order]
        last = np.ones(len(code), dtype=bool)  # of several switches at one time, the last holds
        last[:-1] = times[1:] != times[:-1]
        code, times = code[last], times[last]
        keep = np.ones(len(code), dtype=bool)
        keep[1:] = code[1:] != code[:-1]
        if len(code):
            keep[0] = code[0] != 0
        ev = np.zeros(int(keep.sum()), dtype=EVENT)
        ev["time_ns"], ev["obj"], ev["type"] = times[keep], code[keep], EV_PHASE
        return ev


def plan_from_trace(trace, source, sample_obj: np.ndarray, weights: np.ndarray,
                    table: dict, capacity: int, page_bytes: int, algorithm: str = "rank"
                    ) -> tuple[PhasePlan, PhaseTimeline]:
    """Plan each phase of this trace with objtier.plan.plan_phases (defaults of `objtier plan
    --phases`): the placement the `phases` policy applies."""
    from objtier import plan

    tl = timeline(trace, source.end_ns)
    if not len(tl):
        raise UsageError("policy phases: the trace has no phases (PHASE records)")
    s = trace.samples
    acc = phase_accesses(tl, sample_obj,
                         s.column("pid").to_numpy(zero_copy_only=False).astype(np.uint32),
                         s.column("time_ns").to_numpy(zero_copy_only=False).astype(np.uint64),
                         weights)
    objects = plan.object_table(table)
    result = plan.plan_phases(objects, tl.table(), acc, plan.ALGORITHMS[algorithm], capacity,
                              page_bytes)
    survivors = list(result.placements)
    if ROOT in survivors:
        survivors.remove(ROOT)
    phases = [ROOT] + survivors
    target = dict(zip(result.merge.name, result.merge.target))
    per = {p: np.asarray(result.placements[p].fast_bytes, dtype=np.uint64)
           for p in result.placements}
    return PhasePlan.from_arrays(phases, target, per), tl


def plan_from_file(trace, source, plan_doc: dict, fast_bytes_for) -> tuple[PhasePlan,
                                                                            PhaseTimeline]:
    """The per-phase placement of a plan file; fast_bytes_for(plan_doc, phase) gives a phase's
    fast bytes per object (entries matched by context key, occurrence and size)."""
    tl = timeline(trace, source.end_ns)
    listed = plan_doc.get("phases") or [{"name": ROOT, "target": ROOT}]
    target = {str(p.get("name")): str(p.get("target", p.get("name"))) for p in listed}
    target.setdefault(ROOT, ROOT)
    phases = [ROOT] + sorted({t for t in target.values() if t != ROOT})
    per = {p: fast_bytes_for(plan_doc, p) for p in phases}
    return PhasePlan.from_arrays(phases, target, per), tl
