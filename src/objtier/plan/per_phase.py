"""Per-phase placements (DAPHICX §2.2): merge small or similar phases, then plan each phase.

The phase tree has an implicit root named "*" (the whole program, outside any phase); phases
without a parent hang under it. Access vectors are per object. A phase's own accesses are the
exclusive ones from the phase-accesses table; the root's own accesses are the object table's
totals minus every phase's (clipped at 0).

Merging walks phases deepest first. A phase is merged into its parent when
  1. its mean time per execution is below min_duration_ns (a hint at every entry and exit
     would cost more than the phase runs), or
  2. it has no accesses of its own (nothing to hint), or
  3. the cosine similarity between its accesses (own plus those of phases already merged into
     it) and its parent's own accesses is >= similarity.
A merged phase adds its accesses to its parent's and gets no plan of its own: while it runs,
the plan of the phase it was merged into applies. Then, while more than hint_budget phases
keep a plan of their own, the surviving leaf phase most similar to its parent is merged too.
Each surviving phase (and "*") is planned with the chosen algorithm on its accesses, each
with the whole fast budget (phases run one at a time, and the plan of the phase left is
undone at its exit).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np
import pyarrow as pa
from scipy import sparse

from objtier.errors import UsageError
from objtier.plan.placement import Placement
from objtier.plan.table import ObjectTable, PhaseTable, phase_table

ROOT = "*"
DEFAULT_MIN_DURATION_NS = 10_000_000  # 10 ms: well above the cost of an mlock/munlock round
DEFAULT_SIMILARITY = 0.9
ROUNDING = 1e-9  # root accesses below this share of an object's total are rounding


@dataclass(frozen=True)
class PhaseMerge:
    """Outcome of merging: one row per phase (root first), plus surviving access vectors."""

    name: list[str]
    parent: list[str]          # ROOT for top-level phases, "" for the root itself
    mean_duration_ns: list[int]
    executions: list[int]
    target: list[str]          # the phase whose plan applies while this one runs
    similarity: list[float]    # cosine to the parent's own accesses (nan for the root)
    reason: list[str]
    vectors: dict[str, np.ndarray]  # surviving phase -> float64 accesses per object row

    def survivors(self) -> list[str]:
        return [n for n, t in zip(self.name, self.target) if n == t]

    def members(self, survivor: str) -> list[str]:
        """The phases under whose time the survivor's plan is in force: itself and every
        phase merged into it."""
        return [n for n, t in zip(self.name, self.target) if t == survivor]

    def to_table(self) -> pa.Table:
        return pa.table({"phase": self.name, "parent": self.parent,
                         "mean_duration_ns": self.mean_duration_ns,
                         "executions": self.executions, "target": self.target,
                         "similarity": self.similarity, "reason": self.reason})


def _cosine(a: sparse.csr_matrix, b: sparse.csr_matrix) -> float:
    na = float(np.sqrt(a.multiply(a).sum()))
    nb = float(np.sqrt(b.multiply(b).sum()))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(a.multiply(b).sum()) / (na * nb)


def merge_phases(objects: ObjectTable, phases: PhaseTable,
                 min_duration_ns: int = DEFAULT_MIN_DURATION_NS,
                 similarity: float = DEFAULT_SIMILARITY,
                 hint_budget: int | None = None) -> PhaseMerge:
    """Merge phases into their parents by duration, emptiness, similarity and hint budget."""
    if not 0.0 <= similarity <= 1.0 or min_duration_ns < 0:
        raise UsageError("phases: similarity must be in [0, 1] and the minimum duration >= 0")
    if hint_budget is not None and hint_budget < 0:
        raise UsageError(f"phases: hint budget must be >= 0, got {hint_budget}")
    if ROOT in set(phases.name.tolist()):
        raise UsageError(f"phases: {ROOT!r} is reserved for the whole program")
    names = [ROOT] + phases.name.tolist()
    index = {name: i for i, name in enumerate(names)}
    parent = [""] + [p or ROOT for p in phases.parent.tolist()]
    mean = [0] + (phases.duration_ns // np.maximum(phases.executions, 1)).tolist()
    execs = [1] + phases.executions.tolist()

    depth = [0] * len(names)
    for i in range(1, len(names)):
        seen, p, d = {i}, parent[i], 0
        while p != "":
            d += 1
            j = index[p]
            if j in seen:
                raise UsageError(f"phases: the phase tree has a cycle through {names[i]!r}")
            seen.add(j)
            p = parent[j]
        depth[i] = d

    # Own (exclusive) accesses as sparse rows over object-table rows.
    rows = objects.index_of(phases.access_object)
    if np.any(rows < 0):
        raise UsageError("phase accesses: an object id is not in the object table")
    prow = np.array([index[p] for p in phases.access_phase.tolist()], dtype=np.int64)
    own = sparse.csr_matrix((phases.access_count, (prow, rows)),
                            shape=(len(names), len(objects)))
    # totals minus phases; what is left of an object that all its phases account for is
    # rounding (phase accesses are scaled shares of the totals), not accesses of the root
    left = objects.accesses - np.asarray(own.sum(axis=0)).ravel()
    root_own = np.where(left > ROUNDING * objects.accesses, left, 0.0)
    own = sparse.vstack([sparse.csr_matrix(root_own[None, :]), own[1:]]).tocsr()
    vec = [own[i] for i in range(len(names))]  # own + merged descendants

    target = list(range(len(names)))
    sim = [float("nan")] * len(names)
    reason = ["the whole program"] + ["own plan"] * (len(names) - 1)

    def find(j: int) -> int:
        """The surviving phase that phase j's plan is now (j itself when it survives)."""
        while target[j] != j:
            j = target[j]
        return j

    def absorb(i: int) -> int:
        """Merge phase i into its closest surviving ancestor; returns that ancestor."""
        j = find(index[parent[i]])
        vec[j] = vec[j] + vec[i]
        target[i] = j
        return j

    for i in sorted(range(1, len(names)), key=lambda k: (-depth[k], names[k])):
        p = index[parent[i]]
        sim[i] = _cosine(vec[i], own[p])
        if mean[i] < min_duration_ns:
            reason[i] = f"shorter than {min_duration_ns / 1e6:g} ms per execution"
        elif vec[i].nnz == 0 or vec[i].sum() == 0:
            reason[i] = "no accesses of its own"
        elif sim[i] >= similarity:
            reason[i] = f"access mix similar to its parent's (cosine {sim[i]:.3f})"
        else:
            continue
        absorb(i)

    if hint_budget is not None:
        while True:
            alive = [i for i in range(1, len(names)) if target[i] == i]
            if len(alive) <= hint_budget:
                break
            has_child = {find(index[parent[i]]) for i in alive}
            leaves = [i for i in alive if i not in has_child]
            pick = min(leaves, key=lambda i: (-_cosine(vec[i], vec[find(index[parent[i]])]),
                                              mean[i], names[i]))
            reason[pick] = f"over the hint budget of {hint_budget} phase(s)"
            absorb(pick)

    # resolve chains: a phase merged into a phase that was later merged
    target = [find(i) for i in range(len(names))]
    vectors = {names[i]: np.asarray(vec[i].todense()).ravel()
               for i in range(len(names)) if target[i] == i}
    return PhaseMerge(name=names, parent=parent, mean_duration_ns=[int(m) for m in mean],
                      executions=[int(e) for e in execs], target=[names[t] for t in target],
                      similarity=sim, reason=reason, vectors=vectors)


@dataclass(frozen=True)
class PhasePlacement:
    """Per-phase placements: merge outcome and one Placement per surviving phase."""

    merge: PhaseMerge
    placements: dict[str, Placement]  # ROOT first, then surviving phases by name


def plan_phases(objects: ObjectTable, phases: Any, phase_accesses: Any,
                algorithm: Callable[..., Placement], capacity_bytes: int,
                page_bytes: int = 4096, min_duration_ns: int = DEFAULT_MIN_DURATION_NS,
                similarity: float = DEFAULT_SIMILARITY, hint_budget: int | None = None,
                merge_params: Callable[[PhaseMerge], dict[str, Any]] | None = None,
                **params: Any) -> PhasePlacement:
    """Merge phases, then run `algorithm` on each surviving phase's accesses. merge_params,
    given the merge, returns more parameters for every survivor's plan (the `pages`
    algorithm's page order: analysis.page_samples.phase_page_order)."""
    table = phases if isinstance(phases, PhaseTable) else phase_table(phases, phase_accesses)
    merged = merge_phases(objects, table, min_duration_ns, similarity, hint_budget)
    params = {**params, **(merge_params(merged) if merge_params else {})}
    placements = {}
    for name in merged.survivors():
        view = replace(objects, accesses=merged.vectors[name])
        placements[name] = algorithm(view, capacity_bytes, page_bytes, **params)
    return PhasePlacement(merge=merged, placements=placements)


def phase_spans(merge: PhaseMerge, executions: Any,
                end_ns: int | None = None) -> dict[str, list[tuple[int, int]]]:
    """Surviving phase -> the [start, end) spans [ns] in which its plan is in force: each
    execution of a phase under the phase's target, the time outside every execution, up to
    end_ns (the recording's end; None: no end), under the root's (executions: phase,
    start_ns, end_ns; flat phases, one in force at a time)."""
    cols = executions.to_pydict() if hasattr(executions, "to_pydict") else dict(executions)
    target = dict(zip(merge.name, merge.target))
    rows = sorted(zip(cols["start_ns"], cols["end_ns"], cols["phase"]))
    spans: dict[str, list[tuple[int, int]]] = {t: [] for t in merge.survivors()}
    spans.setdefault(ROOT, [])
    cursor = 0
    for start, end, name in rows:
        if start > cursor:
            spans[ROOT].append((cursor, int(start)))
        spans.setdefault(target.get(name, ROOT), []).append((int(start), int(end)))
        cursor = max(cursor, int(end))
    end = np.iinfo(np.int64).max if end_ns is None else int(end_ns)
    if cursor < end:
        spans[ROOT].append((cursor, end))
    return spans


def unlocked_live_bytes(placement: Placement, objects: ObjectTable | None = None,
                        spans: list[tuple[int, int]] | None = None) -> int:
    """Room the objects a placement leaves wholly slow need [bytes]. With a phase's spans
    (phase_spans) and a table with lifetimes, only those whose lifetime overlaps one of the
    spans count: an object allocated in a later phase, or freed in an earlier one, needs no
    room while this phase's plan is in force. Without spans (or lifetimes), every wholly slow
    object counts."""
    slow = placement.fast_bytes == 0
    if (spans is not None and objects is not None and objects.alloc_ns is not None
            and objects.free_ns is not None):
        alloc = objects.alloc_ns.astype(np.int64)
        free = np.where(objects.free_ns < 0, np.iinfo(np.int64).max,
                        objects.free_ns).astype(np.int64)
        live = np.zeros(len(objects), dtype=bool)
        for start, end in spans:
            live |= (alloc < end) & (free > start)
        slow = slow & live
    return int(placement.size[slow].sum())
