"""The planner's inputs: an object table and, optionally, phase tables, as numpy columns.

Object table (one row per object, i.e. one allocation in the profiled process):
    object       int    id of the object in the profile (unique within the table)
    context_key  str    stable allocation-context key, 16 lowercase hex digits (trace_format.h);
                        "" = unknown: such objects cannot be matched in a later run, so
                        every algorithm leaves them slow and the plan has no entry for them
    occurrence   int    n-th object allocated from that context in the process (as the
                        object table numbers them; copied into the plan unchanged)
    size         int    bytes requested by the program
    accesses     float  sampled accesses, sample weights already applied (>= 0)
    label        str    human-readable allocation frames
  optional:
    recurs       bool   False: a later recording of the program made no object of the same
                        context key, occurrence and size, so a later run may not make it
                        either; a plan does not name it (missing: every object recurs)
    alloc_ns, free_ns  int  lifetime (CLOCK_MONOTONIC ns; free_ns < 0 or missing = never
                            freed); when present the footprint for "--fast PCT" is the peak
                            of live bytes instead of the sum of sizes

Phase table (one row per execution of a phase; a phase may run many times):
    phase        str    phase name
    parent       str    enclosing phase name, or null / "" for a top-level phase
    start_ns, end_ns int  CLOCK_MONOTONIC ns of this execution (end_ns >= start_ns)

Phase accesses (one row per (phase, object)); accesses are *exclusive*: made while that
phase was the innermost active phase:
    phase str, object int, accesses float

Each can be a pyarrow.Table or a dict of array-likes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from objtier.errors import UsageError

# why an object a plan cannot name is left out (ObjectTable.unplannable_reasons)
UNKNOWN_CONTEXT = "unknown allocation context: a plan cannot name it"
NOT_RECURRING = ("not made again in every recording (same context, occurrence and size): a "
                 "later run may not make it either, so a plan does not name it")

OBJECT_COLUMNS = ("object", "context_key", "occurrence", "size", "accesses", "label")
PHASE_COLUMNS = ("phase", "parent", "start_ns", "end_ns")
PHASE_ACCESS_COLUMNS = ("phase", "object", "accesses")


def _columns(table: Any, required: tuple[str, ...], what: str) -> dict[str, np.ndarray]:
    """Columns of a pyarrow.Table or a mapping as numpy arrays; checks presence and lengths."""
    if hasattr(table, "column_names") and hasattr(table, "column"):
        names = list(table.column_names)
        get = lambda name: table.column(name).to_numpy(zero_copy_only=False)  # noqa: E731
    elif isinstance(table, Mapping):
        names = list(table.keys())
        get = lambda name: np.asarray(table[name])  # noqa: E731
    else:
        raise UsageError(f"{what}: expected a pyarrow.Table or a dict of columns, "
                         f"got {type(table).__name__}")
    missing = [name for name in required if name not in names]
    if missing:
        raise UsageError(f"{what}: missing column(s) {', '.join(missing)}")
    out = {name: get(name) for name in names}
    lengths = {len(column) for column in out.values()}
    if len(lengths) > 1:
        raise UsageError(f"{what}: columns have different lengths {sorted(lengths)}")
    return out


def _as_int(values: np.ndarray, name: str, what: str) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=np.float64) if values.dtype == object else values
        if array.dtype.kind == "f":
            if not np.all(np.isfinite(array)) or np.any(array != np.floor(array)):
                raise ValueError
        return array.astype(np.int64)
    except (TypeError, ValueError):
        raise UsageError(f"{what}: column {name} must hold integers") from None


def _as_float(values: np.ndarray, name: str, what: str) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise UsageError(f"{what}: column {name} must hold numbers") from None
    if not np.all(np.isfinite(array)):
        raise UsageError(f"{what}: column {name} holds NaN or infinite values")
    return array


def _as_str(values: np.ndarray) -> np.ndarray:
    return np.array(["" if v is None else str(v) for v in values], dtype=object)


@dataclass(frozen=True)
class ObjectTable:
    """Validated object columns; row i of every array describes the same object."""

    object: np.ndarray       # int64, unique
    context_key: np.ndarray  # object (str), 16 lowercase hex digits, "" = unknown
    occurrence: np.ndarray   # int64
    size: np.ndarray         # int64 bytes, >= 0
    accesses: np.ndarray     # float64, >= 0
    label: np.ndarray        # object (str)
    alloc_ns: np.ndarray | None = None  # int64, or None when the table has no lifetimes
    free_ns: np.ndarray | None = None   # int64, < 0 = never freed
    retouch_us: np.ndarray | None = None  # float64 [us], NaN = unknown; None = no such column
    sequential: np.ndarray | None = None  # float64 share of short forward steps (sweeps),
                                          # NaN = unknown; None = no such column
    recurs: np.ndarray | None = None      # bool, False = not made again in every recording;
                                          # None = no such column (all recur)

    def __len__(self) -> int:
        return len(self.object)

    @property
    def plannable(self) -> np.ndarray:
        """Objects a plan can name: those with a known allocation context that every
        recording made (recurs)."""
        known = self.context_key != ""
        return known if self.recurs is None else known & self.recurs

    def unplannable_reasons(self) -> np.ndarray:
        """Why each object a plan cannot name is left out (object str; "" where it can)."""
        out = np.full(len(self), "", dtype=object)
        if self.recurs is not None:
            out[~self.recurs] = NOT_RECURRING
        out[self.context_key == ""] = UNKNOWN_CONTEXT
        return out

    def index_of(self, objects: np.ndarray) -> np.ndarray:
        """Row index of each object id in `objects`; -1 where the id is not in the table."""
        objects = np.asarray(objects, dtype=np.int64)
        if len(self.object) == 0:
            return np.full(len(objects), -1, dtype=np.int64)
        order = np.argsort(self.object, kind="stable")
        sorted_ids = self.object[order]
        pos = np.clip(np.searchsorted(sorted_ids, objects), 0, len(sorted_ids) - 1)
        return np.where(sorted_ids[pos] == objects, order[pos], -1)


def object_table(table: Any) -> ObjectTable:
    """Validate an object table (pyarrow.Table or dict of columns) into an ObjectTable."""
    what = "object table"
    cols = _columns(table, OBJECT_COLUMNS, what)
    ids = _as_int(cols["object"], "object", what)
    if len(np.unique(ids)) != len(ids):
        raise UsageError(f"{what}: object ids are not unique")
    keys = _as_str(cols["context_key"])
    bad = [k for k in keys if k and (len(k) != 16 or k.strip("0123456789abcdef"))]
    if bad:
        raise UsageError(f"{what}: context_key must be 16 lowercase hex digits or empty "
                         f"(unknown), got {bad[0]!r}")
    size = _as_int(cols["size"], "size", what)
    if np.any(size < 0):
        raise UsageError(f"{what}: negative object size")
    accesses = _as_float(cols["accesses"], "accesses", what)
    if np.any(accesses < 0):
        raise UsageError(f"{what}: negative accesses")
    alloc_ns = free_ns = None
    if "alloc_ns" in cols and "free_ns" in cols:
        alloc_ns = _as_int(np.nan_to_num(np.asarray(cols["alloc_ns"], dtype=np.float64)),
                           "alloc_ns", what)
        free_ns = _as_int(np.nan_to_num(np.asarray(cols["free_ns"], dtype=np.float64), nan=-1.0),
                          "free_ns", what)
    retouch_us = None
    if "retouch_us" in cols:
        retouch_us = np.asarray(cols["retouch_us"], dtype=np.float64)
        if np.any(retouch_us < 0):
            raise UsageError(f"{what}: negative retouch_us")
    sequential = None
    if "sequential" in cols:
        sequential = np.asarray(cols["sequential"], dtype=np.float64)
        if np.any((sequential < 0) | (sequential > 1)):
            raise UsageError(f"{what}: sequential must lie in [0, 1]")
    recurs = None
    if "recurs" in cols:
        recurs = np.asarray(cols["recurs"])
        if recurs.dtype != bool:
            raise UsageError(f"{what}: column recurs must hold booleans")
    return ObjectTable(
        object=ids, context_key=keys, occurrence=_as_int(cols["occurrence"], "occurrence", what),
        size=size, accesses=accesses, label=_as_str(cols["label"]),
        alloc_ns=alloc_ns, free_ns=free_ns, retouch_us=retouch_us, sequential=sequential,
        recurs=recurs,
    )


@dataclass(frozen=True)
class PhaseTable:
    """Phases by name (one row per distinct phase, in order of first start) and their
    exclusive per-object accesses."""

    name: np.ndarray         # object (str), unique
    parent: np.ndarray       # object (str), "" = top level
    duration_ns: np.ndarray  # int64, sum over executions of (end_ns - start_ns)
    executions: np.ndarray   # int64, how many times the phase ran
    first_start_ns: np.ndarray  # int64
    access_phase: np.ndarray    # object (str): phase of each access row
    access_object: np.ndarray   # int64
    access_count: np.ndarray    # float64, exclusive accesses


def phase_table(phases: Any, accesses: Any) -> PhaseTable:
    """Validate the phase table and the phase accesses; one row per distinct phase name."""
    cols = _columns(phases, PHASE_COLUMNS, "phase table")
    names = _as_str(cols["phase"])
    if np.any(names == ""):
        raise UsageError("phase table: empty phase name")
    parents = _as_str(cols["parent"])
    start = _as_int(cols["start_ns"], "start_ns", "phase table")
    end = _as_int(cols["end_ns"], "end_ns", "phase table")
    if np.any(end < start):
        raise UsageError("phase table: end_ns before start_ns")
    unique, inverse = np.unique(names.astype(str), return_inverse=True)
    duration = np.bincount(inverse, weights=(end - start).astype(np.float64),
                           minlength=len(unique)).astype(np.int64)
    executions = np.bincount(inverse, minlength=len(unique)).astype(np.int64)
    first = np.full(len(unique), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, inverse, start)
    parent_of = np.empty(len(unique), dtype=object)
    for i in range(len(unique)):
        seen = set(parents[inverse == i])
        if len(seen) > 1:
            raise UsageError(f"phase table: phase {unique[i]!r} has several parents "
                             f"{sorted(seen)}")
        parent_of[i] = seen.pop()
    known = set(unique.tolist())
    for name, parent in zip(unique, parent_of):
        if parent and parent not in known:
            raise UsageError(f"phase table: phase {name!r} has unknown parent {parent!r}")
    acols = _columns(accesses, PHASE_ACCESS_COLUMNS, "phase accesses")
    a_phase = _as_str(acols["phase"])
    unknown = set(a_phase.tolist()) - known
    if unknown:
        raise UsageError(f"phase accesses: unknown phase {sorted(unknown)[0]!r}")
    a_count = _as_float(acols["accesses"], "accesses", "phase accesses")
    if np.any(a_count < 0):
        raise UsageError("phase accesses: negative accesses")
    order = np.lexsort((unique, first))  # program order: first start, then name
    return PhaseTable(
        name=unique[order].astype(object), parent=parent_of[order], duration_ns=duration[order],
        executions=executions[order], first_start_ns=first[order], access_phase=a_phase,
        access_object=_as_int(acols["object"], "object", "phase accesses"), access_count=a_count,
    )
