"""Program phases from the phase markers in a recording (objtier_phase / objtier_phase_end).

Phases are per thread: objtier_phase("name") starts a phase and ends the thread's previous one;
objtier_phase_end() ends it; a phase still open when the thread's last event is written ends at
the end of the recording. Phases are flat: every phase hangs under the whole program "*"
(parent "", as the planner's phase table expects).

phase_table(trace)    -> phase, parent, start_ns, end_ns (one row per execution)
phase_accesses(trace) -> phase, object, accesses (exclusive: samples taken in the thread while
                         the phase ran; samples outside every phase are the root's, which the
                         planner derives from the object table, so they are not listed)
These are the planner's inputs for `objtier plan --phases` (docs/planning.md).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from objtier.analysis.objects import sample_objects
from objtier.errors import UsageError

ROOT = "*"
PHASE_ENTER = 1  # OT_PHASE_ENTER in trace_format.h


def _intervals(trace) -> dict[tuple[int, int], tuple[np.ndarray, np.ndarray, list[str]]]:
    """(pid, tid) -> (starts, ends, names), sorted by start, from PHASE records."""
    phases = trace.phases
    if phases.num_rows == 0:
        raise UsageError("the recording has no phase markers: call objtier_phase(\"name\") in "
                         "the program (docs/runtime.md) or record with --sampler trace")
    pid = phases.column("pid").to_numpy()
    tid = phases.column("tid").to_numpy()
    time = phases.column("time_ns").to_numpy()
    name = phases.column("name").to_numpy()
    event = phases.column("event").to_numpy()
    end_of_trace = int(max(trace.samples.column("time_ns").to_numpy().max(initial=0),
                           time.max(initial=0))) + 1
    out = {}
    for key in sorted(set(zip(pid.tolist(), tid.tolist()))):
        rows = np.flatnonzero((pid == key[0]) & (tid == key[1]))
        rows = rows[np.argsort(time[rows], kind="stable")]
        starts, ends, names = [], [], []
        for r in rows:  # one Python step per marker, not per sample
            if names and ends[-1] is None:
                ends[-1] = int(time[r])
            if event[r] == PHASE_ENTER:
                starts.append(int(time[r]))
                ends.append(None)
                names.append(trace.names.get((int(pid[r]), int(name[r])), f"phase{name[r]}"))
        ends = [end_of_trace if e is None else e for e in ends]
        out[key] = (np.array(starts, np.uint64), np.array(ends, np.uint64), names)
    return out



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


def phase_accesses(trace) -> pa.Table:
    samples = trace.samples
    objects = sample_objects(trace)
    pid = samples.column("pid").to_numpy()
    tid = samples.column("tid").to_numpy()
    time = samples.column("time_ns").to_numpy()
    weight = samples.column("weight").to_numpy().astype(np.float64)
    weight[weight == 0] = 1.0
    names = np.full(len(time), ROOT, dtype=object)
    for (p, t), (starts, ends, labels) in _intervals(trace).items():
        rows = np.flatnonzero((pid == p) & (tid == t))
        if not len(rows) or not len(starts):
            continue
        k = np.searchsorted(starts, time[rows], side="right") - 1
        inside = (k >= 0) & (time[rows] < ends[np.clip(k, 0, None)])
        names[rows[inside]] = np.array(labels, dtype=object)[k[inside]]
    keep = (objects >= 0) & (names != ROOT)
    if not keep.any():
        return pa.table({"phase": pa.array([], pa.string()), "object": pa.array([], pa.int64()),
                         "accesses": pa.array([], pa.float64())})
    table = pa.table({"phase": pa.array(names[keep].tolist(), pa.string()),
                      "object": pa.array(objects[keep].astype(np.int64)),
                      "accesses": pa.array(weight[keep])})
    return table.group_by(["phase", "object"]).aggregate([("accesses", "sum")]).rename_columns(
        ["phase", "object", "accesses"])
