"""Phases from the calling-context tree (DAPHICX §2.2): merge small or similar contexts into
their parents, then export the survivors as the planner's phase tables.

Walking nodes deepest first, a node is merged into its parent when
  1. its mean time per call (inclusive_ns / calls) is below min_ns: a hint at each entry and
     exit would cost more than the context runs; since a parent's inclusive time contains its
     children's, merging repeats up the tree until the merged context is long enough;
  2. it has no accesses of its own (own = exclusive, plus those of nodes merged into it);
  3. the cosine similarity of its own per-object accesses with its parent's own accesses
     (including children merged into the parent so far) is >= similarity.
A merged node's accesses are added to its parent's. The root (row 0, the process outside
instrumented code) is never merged. Accesses are LLC-model misses ("misses", the memory
accesses) or all loads and stores ("all").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from scipy import sparse

from objtier.exact.tree import ContextTree, context_tree

DEFAULT_MIN_NS = 10_000_000  # 10 ms, as objtier plan --min-phase-ms
DEFAULT_SIMILARITY = 0.9
MAX_EXECUTION_ROWS = 1_000_000


@dataclass(frozen=True)
class Phases:
    """Outcome of merging, one entry per tree node."""

    target: np.ndarray      # int64: the surviving node whose phase this node belongs to
    reason: np.ndarray      # object (str): "kept", "root", "short", "no accesses", "similar"
    similarity: np.ndarray  # float64 cosine with the parent when it was tested (nan otherwise)
    own: sparse.csr_matrix  # nodes x objects: accesses of each survivor after merging

    def survivors(self) -> np.ndarray:
        return np.flatnonzero(self.target == np.arange(len(self.target)))


def _cosine(a: sparse.csr_matrix, b: sparse.csr_matrix) -> float:
    na = float(np.sqrt(a.multiply(a).sum()))
    nb = float(np.sqrt(b.multiply(b).sum()))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(a.multiply(b).sum()) / (na * nb)


def access_matrix(tree: ContextTree, metric: str = "misses",
                  objects: int | None = None) -> sparse.csr_matrix:
    """nodes x objects exclusive accesses (unknown objects dropped)."""
    known = tree.acc_object >= 0
    n = objects if objects is not None else int(tree.acc_object.max(initial=-1)) + 1
    return sparse.csr_matrix((tree.accesses(metric)[known].astype(np.float64),
                              (tree.acc_node[known], tree.acc_object[known])),
                             shape=(tree.nodes, n))


def merge(tree: ContextTree, matrix: sparse.csr_matrix, min_ns: int = DEFAULT_MIN_NS,
          similarity: float = DEFAULT_SIMILARITY) -> Phases:
    """Merge nodes into their parents (module docstring); pure."""
    if similarity < 0.0 or min_ns < 0:  # similarity > 1 turns rule 3 off
        raise ValueError("similarity must be >= 0 and min_ns >= 0")
    n = tree.nodes
    own = sparse.lil_matrix(matrix)
    merged_into = np.arange(n, dtype=np.int64)
    reason = np.array(["kept"] * n, dtype=object)
    reason[0] = "root"
    cosine = np.full(n, np.nan)
    order = np.argsort(-tree.depth, kind="stable")  # deepest first (one step per node)
    for v in order.tolist():
        p = int(tree.parent[v])
        if p < 0:
            continue
        mean = tree.inclusive_ns[v] / max(int(tree.calls[v]), 1)
        row, prow = own.getrow(v).tocsr(), own.getrow(p).tocsr()
        if mean < min_ns:
            why = "short"
        elif row.nnz == 0:
            why = "no accesses"
        else:
            cosine[v] = _cosine(row, prow)
            why = "similar" if cosine[v] >= similarity else ""
        if why:
            own[p] = prow + row
            own[v] = 0
            merged_into[v] = p
            reason[v] = why
    target = merged_into.copy()
    for v in np.argsort(tree.depth, kind="stable").tolist():  # parents before children
        if merged_into[v] != v:
            target[v] = target[merged_into[v]]
    return Phases(target=target, reason=reason, similarity=cosine, own=own.tocsr())


def phase_names(tree: ContextTree, labels: bool = True) -> list[str]:
    """A unique name per node: "<function>#<node>"; the root is "*"."""
    names = ["*"]
    funcs = [""] * tree.nodes
    if labels and tree.nodes > 1:
        from objtier.trace.symbolize import symbolize
        firsts = [(f[0]["module"], f[0]["offset"]) if f else ("", 0) for f in tree.frames[1:]]
        funcs[1:] = [s.split(" (")[0] for s in symbolize(firsts)]
    for v in range(1, tree.nodes):
        names.append(f"{funcs[v] or str(tree.function_key[v])[:8]}#{v}")
    return names


def phase_tables(trace, metric: str = "misses", min_ns: int = DEFAULT_MIN_NS,
                 similarity: float = DEFAULT_SIMILARITY,
                 labels: bool = True) -> tuple[pa.Table, pa.Table]:
    """(phase table, phase accesses) for objtier.plan (docs/planning.md) from an exact
    recording: the phases are the contexts that survive merge().

    Phase table: one row per execution (phase, parent, start_ns, end_ns); the runtime keeps
    only calls and total time per context, so executions are laid out back to back, each of
    the mean duration, from an offset that orders phases by first entry (node creation).
    Phase accesses: (phase, object, accesses), object = row of object_table(trace), exclusive
    accesses of the phase after merging. The root "*" is implicit (the planner's whole
    program)."""
    tree = context_tree(trace)
    objects = trace.allocations.num_rows
    result = merge(tree, access_matrix(tree, metric, objects), min_ns, similarity)
    names = phase_names(tree, labels)
    keep = [int(v) for v in result.survivors() if v != 0]
    parent_name = []
    for v in keep:
        p = int(result.target[tree.parent[v]])
        parent_name.append("" if p == 0 else names[p])
    calls = np.maximum(tree.calls[keep], 1) if keep else np.zeros(0, np.int64)
    calls = np.minimum(calls, MAX_EXECUTION_ROWS)
    mean = (tree.inclusive_ns[keep] // calls) if keep else np.zeros(0, np.int64)
    rep = np.repeat(np.arange(len(keep)), calls)
    nth = np.arange(len(rep)) - np.repeat(np.cumsum(calls) - calls, calls)
    start = np.asarray(keep, dtype=np.int64)[rep] + nth * mean[rep]
    table = pa.table({"phase": pa.array([names[keep[i]] for i in rep.tolist()], pa.string()),
                      "parent": pa.array([parent_name[i] for i in rep.tolist()], pa.string()),
                      "start_ns": pa.array(start, pa.int64()),
                      "end_ns": pa.array(start + mean[rep], pa.int64())})
    own = result.own[keep].tocoo() if keep else sparse.coo_matrix((0, objects))
    accesses = pa.table({"phase": pa.array([names[keep[r]] for r in own.row.tolist()],
                                           pa.string()),
                         "object": pa.array(own.col.astype(np.int64)),
                         "accesses": pa.array(own.data.astype(np.float64))})
    return table, accesses
