"""Program phases from the phase markers in a recording (objtier_phase / objtier_phase_end).

Phases are per thread: objtier_phase("name") starts a phase and ends the thread's previous one;
objtier_phase_end() ends it; a phase still open at the end ends with the recording (its last
event of any kind: a sample, an allocation, a free). Phases are flat: every phase hangs under
the whole program "*" (parent "", as the planner's phase table expects).

phase_table(trace)    -> phase, parent, start_ns, end_ns (one row per execution)
sample_phases(trace)  -> the phase of each sample ("*" outside every phase)
phase_accesses(trace, object_accesses=None)
                      -> phase, object, accesses (exclusive: samples taken while the phase ran;
                         samples outside every phase are the root's, which the planner derives
                         from the object table, so they are not listed)
These are the planner's inputs for `objtier plan --phases` (docs/planning.md).

Attribution: a sample of a thread that marks phases belongs to that thread's phase at the
sample's time. A sample of a thread that marks none (an OpenMP worker, a pool thread) belongs to
the phase in force in its process: the one named by the last marker call of any thread, which
is the plan the runtime enforces then (native/runtime/place/placement.c).

Units: with object_accesses (the object table's `accesses`, indexed by object id) each
object's samples are scaled so that its phases and the root share its `accesses` in proportion
to its samples; the fault sampler's accesses are estimated touches, not samples, and the
planner subtracts phase accesses from the table's totals, so both must be in one unit.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from objtier.analysis.mapping import sample_objects
from objtier.errors import UsageError
from objtier.trace.columns import trace_end_ns

ROOT = "*"
PHASE_ENTER = 1  # OT_PHASE_ENTER in trace_format.h


def _intervals(trace, per_thread: bool = True) -> dict:
    """(pid, tid) -> (starts, ends, names), sorted by start, from PHASE records; with
    per_thread False, pid -> the same for the phase in force process-wide. Each ENTER starts an
    interval that lasts until the next marker of its thread (process-wide: of any thread), an
    ENTER or an EXIT; an EXIT starts nothing; the last open one ends with the recording."""
    phases = trace.phases
    if phases.num_rows == 0:
        raise UsageError("the recording has no phase markers: call objtier_phase(\"name\") in "
                         "the program (docs/runtime.md) or record with --sampler trace")
    pid = phases.column("pid").to_numpy()
    tid = phases.column("tid").to_numpy()
    time = phases.column("time_ns").to_numpy()
    name = phases.column("name").to_numpy()
    event = phases.column("event").to_numpy()
    end_of_trace = max(trace_end_ns(trace), int(time.max(initial=0))) + 1
    # one integer per group: pid << 32 | tid per thread, pid per process (ids < 2^32)
    group = pid.astype(np.uint64) << np.uint64(32) | tid.astype(np.uint64) if per_thread \
        else pid.astype(np.uint64)
    out = {}
    for code in np.unique(group).tolist():
        key = (code >> 32, code & 0xFFFFFFFF) if per_thread else code
        rows = np.flatnonzero(group == code)
        # by time, an EXIT before an ENTER of the same time (a switch writes both)
        rows = rows[np.lexsort((event[rows] == PHASE_ENTER, time[rows]))]
        starts, ends, names = [], [], []
        for i, r in enumerate(rows):  # one Python step per marker, not per sample
            if event[r] != PHASE_ENTER:
                continue
            starts.append(int(time[r]))
            ends.append(int(time[rows[i + 1]]) if i + 1 < len(rows) else end_of_trace)
            names.append(trace.names.get((int(pid[r]), int(name[r])), f"phase{name[r]}"))
        out[key] = (np.array(starts, np.uint64), np.array(ends, np.uint64), names)
    return out


def _label(names: np.ndarray, rows: np.ndarray, time: np.ndarray,
           intervals: tuple[np.ndarray, np.ndarray, list[str]]) -> None:
    """names[rows] = the interval holding each row's time (left as is outside every one)."""
    starts, ends, labels = intervals
    if not len(rows) or not len(starts):
        return
    k = np.searchsorted(starts, time[rows], side="right") - 1
    inside = (k >= 0) & (time[rows] < ends[np.clip(k, 0, None)])
    names[rows[inside]] = np.array(labels, dtype=object)[k[inside]]


def phase_table(trace) -> pa.Table:
    rows = {"phase": [], "parent": [], "start_ns": [], "end_ns": []}
    for starts, ends, names in _intervals(trace).values():
        rows["phase"] += names
        rows["parent"] += [""] * len(names)  # top level: the root "*"
        rows["start_ns"] += starts.tolist()
        rows["end_ns"] += ends.tolist()
    return pa.table({"phase": pa.array(rows["phase"], pa.string()),
                     "parent": pa.array(rows["parent"], pa.string()),
                     "start_ns": pa.array(rows["start_ns"], pa.uint64()),
                     "end_ns": pa.array(rows["end_ns"], pa.uint64())})


def sample_phases(trace) -> np.ndarray:
    """The phase of every sample (trace.samples order; ROOT outside every phase), by the
    attribution rule of the module docstring."""
    samples = trace.samples
    pid = samples.column("pid").to_numpy()
    tid = samples.column("tid").to_numpy()
    time = samples.column("time_ns").to_numpy()
    names = np.full(len(time), ROOT, dtype=object)
    own = _intervals(trace)
    marking = set(own)
    for (p, t), intervals in own.items():
        _label(names, np.flatnonzero((pid == p) & (tid == t)), time, intervals)
    for p, intervals in _intervals(trace, per_thread=False).items():
        marked = [t for (q, t) in marking if q == p]
        _label(names, np.flatnonzero((pid == p) & ~np.isin(tid, marked)), time, intervals)
    return names


def phase_accesses(trace, object_accesses: np.ndarray | None = None) -> pa.Table:
    samples = trace.samples
    objects = sample_objects(trace)
    weight = samples.column("weight").to_numpy().astype(np.float64)
    weight[weight == 0] = 1.0
    names = sample_phases(trace)
    if object_accesses is not None and len(objects):
        hit = objects >= 0
        raw = np.bincount(objects[hit], weights=weight[hit], minlength=len(object_accesses))
        with np.errstate(invalid="ignore", divide="ignore"):
            scale = np.where(raw > 0, np.asarray(object_accesses, np.float64) / raw, 0.0)
        weight = np.where(hit, weight * scale[np.clip(objects, 0, None)], 0.0)
    keep = (objects >= 0) & (names != ROOT)
    if not keep.any():
        return pa.table({"phase": pa.array([], pa.string()), "object": pa.array([], pa.int64()),
                         "accesses": pa.array([], pa.float64())})
    table = pa.table({"phase": pa.array(names[keep].tolist(), pa.string()),
                      "object": pa.array(objects[keep].astype(np.int64)),
                      "accesses": pa.array(weight[keep])})
    return table.group_by(["phase", "object"]).aggregate([("accesses", "sum")]).rename_columns(
        ["phase", "object", "accesses"])
