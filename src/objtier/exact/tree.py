"""The calling-context tree of an exact recording (CCT_NODE, ACCESS_COUNT and the function
CONTEXT records written by the runtime's trace sampler).

The runtime keeps one tree per thread; node ids are unique per process. Here nodes of one
process with the same path of (function, call site) — compared by the stable key of their
function context — are merged into one canonical node, so a context reached by several
threads is one node with their calls, times and accesses summed. The root (id 0) is the
process outside any instrumented function.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from objtier.analysis.objects import object_table


@dataclass(frozen=True)
class ContextTree:
    """Canonical nodes (row 0 = the root) and their exclusive per-object access counts."""

    parent: np.ndarray        # int64 row of the parent; -1 for the root
    function_key: np.ndarray  # object (str): stable key of the (function, call site) context
    frames: list              # per node: [{module, build_id, offset}, ...] (fn + 1, call site)
    calls: np.ndarray         # int64
    inclusive_ns: np.ndarray  # int64
    depth: np.ndarray         # int64, root 0
    pid: np.ndarray           # uint32
    # exclusive accesses: one row per (node, object) with a non-zero count
    acc_node: np.ndarray      # int64 node row
    acc_object: np.ndarray    # int64 object row of object_table(trace) (-1: unknown object)
    loads: np.ndarray         # int64
    stores: np.ndarray        # int64
    misses: np.ndarray        # int64

    @property
    def nodes(self) -> int:
        return len(self.parent)

    def accesses(self, metric: str = "misses") -> np.ndarray:
        """Per access row: "misses" (LLC-model misses, the memory accesses) or "all"."""
        if metric == "misses":
            return self.misses
        if metric == "all":
            return self.loads + self.stores
        raise ValueError(f"metric must be 'misses' or 'all', not {metric!r}")

    def to_table(self) -> pa.Table:
        return pa.table({"node": np.arange(self.nodes), "parent": self.parent,
                         "function_key": self.function_key.tolist(), "calls": self.calls,
                         "inclusive_ns": self.inclusive_ns, "depth": self.depth,
                         "pid": self.pid})


def context_tree(trace) -> ContextTree:
    """The merged calling-context tree of every process in the recording; cached on the trace."""
    cached = getattr(trace, "_objtier_context_tree", None)
    if cached is None:
        cached = _build_context_tree(trace)
        trace._objtier_context_tree = cached
    return cached


def _build_context_tree(trace) -> ContextTree:
    nodes = trace.cct_nodes.sort_by([("pid", "ascending"), ("id", "ascending")])
    contexts = trace.contexts
    ctx_key = {(p, c): k for p, c, k in zip(contexts.column("pid").to_pylist(),
                                            contexts.column("context").to_pylist(),
                                            contexts.column("key").to_pylist())}
    ctx_frames = {(p, c): f for p, c, f in zip(contexts.column("pid").to_pylist(),
                                               contexts.column("context").to_pylist(),
                                               contexts.column("frames").to_pylist())}
    parent, keys, frames, calls, incl, depth, pids = [-1], [""], [[]], [0], [0], [0], [0]
    canon: dict[tuple, int] = {}      # (pid, canonical parent row, function key) -> row
    row_of: dict[tuple[int, int], int] = {}  # (pid, runtime node id) -> row
    columns = [nodes.column(n).to_pylist() for n in
               ("pid", "id", "parent", "function", "calls", "inclusive_ns")]
    # one pass per node (not per access): ids grow in creation order, parents come first
    for pid, nid, par, fn, ncalls, ns in zip(*columns):
        prow = row_of.get((pid, par), 0) if par else 0
        key = ctx_key.get((pid, fn), f"?{fn}")
        at = canon.get((pid, prow, key))
        if at is None:
            at = len(parent)
            canon[(pid, prow, key)] = at
            parent.append(prow)
            keys.append(key)
            frames.append(ctx_frames.get((pid, fn), []))
            calls.append(0)
            incl.append(0)
            depth.append(depth[prow] + 1)
            pids.append(pid)
        row_of[(pid, nid)] = at
        calls[at] += ncalls
        incl[at] += ns

    acc = trace.access_counts
    a_pid = acc.column("pid").to_numpy().astype(np.int64)
    a_node = acc.column("cct_node").to_numpy().astype(np.int64)
    a_seq = acc.column("alloc_seq").to_numpy().astype(np.int64)
    # vectorized joins through sorted keys: (pid, node id) -> row, (pid, seq) -> object
    node_keys = np.array([p << 32 | n for (p, n) in row_of], dtype=np.int64)
    node_rows = np.array(list(row_of.values()), dtype=np.int64)
    acc_node = _lookup(node_keys, node_rows, a_pid << 32 | a_node, default=0)
    allocs = trace.allocations
    obj_keys = (allocs.column("pid").to_numpy().astype(np.int64) << 40
                | allocs.column("seq").to_numpy().astype(np.int64))
    acc_object = _lookup(obj_keys, np.arange(len(obj_keys), dtype=np.int64),
                         a_pid << 40 | a_seq, default=-1)
    return ContextTree(
        parent=np.array(parent, dtype=np.int64), function_key=np.array(keys, dtype=object),
        frames=frames, calls=np.array(calls, dtype=np.int64),
        inclusive_ns=np.array(incl, dtype=np.int64), depth=np.array(depth, dtype=np.int64),
        pid=np.array(pids, dtype=np.uint32), acc_node=acc_node, acc_object=acc_object,
        loads=acc.column("loads").to_numpy().astype(np.int64),
        stores=acc.column("stores").to_numpy().astype(np.int64),
        misses=acc.column("llc_misses").to_numpy().astype(np.int64))


def _lookup(keys: np.ndarray, values: np.ndarray, query: np.ndarray, default: int) -> np.ndarray:
    if len(keys) == 0:
        return np.full(len(query), default, dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    sk, sv = keys[order], values[order]
    at = np.clip(np.searchsorted(sk, query), 0, len(sk) - 1)
    return np.where(sk[at] == query, sv[at], default).astype(np.int64)


def object_counts(trace, metric: str = "misses") -> np.ndarray:
    """Exact accesses per object, aligned with object_table(trace) rows (float64)."""
    tree = context_tree(trace)
    n = trace.allocations.num_rows
    known = tree.acc_object >= 0
    return np.bincount(tree.acc_object[known], weights=tree.accesses(metric)[known].astype(float),
                       minlength=n)


def exact_object_table(trace, metric: str = "misses", labels: bool = True) -> pa.Table:
    """object_table(trace) with `accesses` (and `samples`) replaced by exact counts: what the
    planner should read for a recording made with --sampler trace."""
    table = object_table(trace, labels=labels)
    counts = object_counts(trace, metric)
    size = table.column("size").to_numpy().astype(np.float64)
    table = table.set_column(table.schema.get_field_index("accesses"), "accesses",
                             pa.array(counts))
    table = table.set_column(table.schema.get_field_index("samples"), "samples",
                             pa.array(counts.astype(np.int64)))
    with np.errstate(invalid="ignore", divide="ignore"):
        density = np.where(size > 0, counts / (size / 2.0**20), 0.0)
    return table.set_column(table.schema.get_field_index("density"), "density",
                            pa.array(density))


def exact_counts(trace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(loads, stores, LLC-model misses) per object row of object_table(trace), int64."""
    tree = context_tree(trace)
    n = trace.allocations.num_rows
    known = tree.acc_object >= 0
    obj = tree.acc_object[known]
    return tuple(np.bincount(obj, weights=values[known].astype(float), minlength=n)
                 .astype(np.int64) for values in (tree.loads, tree.stores, tree.misses))


#: ACCESS_COUNT alloc_seq values of accesses outside every tracked object, by where they fell
#: (trace_format.h OT_SEQ_OUTSIDE_*): the accessing thread's stack, its static thread-local
#: storage, anywhere else (objects below --min-size, small globals, untracked mappings)
OUTSIDE_SEQS = {"stack": (1 << 64) - 2, "tls": (1 << 64) - 3, "other": (1 << 64) - 4}


def outside_parts(trace) -> dict[str, int]:
    """Loads + stores outside every tracked object by where they fell (keys of OUTSIDE_SEQS);
    all 0 for a recording from a runtime that did not count them."""
    acc = trace.access_counts
    seq = acc.column("alloc_seq").to_numpy().astype(np.uint64)
    n = acc.column("loads").to_numpy().astype(np.int64) + \
        acc.column("stores").to_numpy().astype(np.int64)
    return {name: int(n[seq == np.uint64(value)].sum()) for name, value in OUTSIDE_SEQS.items()}


def outside_counts(trace) -> tuple[int, int]:
    """(loads + stores, LLC-model misses) that fell outside every tracked object (stack,
    thread-local storage, globals, objects below --min-size; outside_parts tells them apart)."""
    tree = context_tree(trace)
    unknown = tree.acc_object < 0
    return (int(tree.loads[unknown].sum() + tree.stores[unknown].sum()),
            int(tree.misses[unknown].sum()))


ROOT_NAME = "(outside instrumented functions)"


def _node_names(tree: ContextTree) -> tuple[list[str], list[str]]:
    """Per node (row 0: the root): its function's name, and its call site symbolized
    ("caller (file.c:12)", "" when unknown). frames = [function, call site]."""
    from objtier.trace.symbolize import symbolize

    wanted = [(i, j, f[j]) for i, f in enumerate(tree.frames) for j in range(min(len(f), 2))]
    names = symbolize([(f["module"], int(f["offset"])) for _, _, f in wanted])
    functions = [ROOT_NAME] + ["?"] * (tree.nodes - 1)
    sites = [""] * tree.nodes
    for (i, j, _), name in zip(wanted, names):
        if j == 0:
            functions[i] = name.split(" (")[0]
        else:
            sites[i] = name
    return functions, sites


def exact_context_table(trace, labels: bool = True) -> pa.Table:
    """One row per canonical context (node) with accesses: its exact loads, stores and
    LLC-model misses (exclusive: in that function, not its callees), the object most of its
    misses went to, and its stack (innermost first, "f <- g <- main")."""
    tree = context_tree(trace)
    n = tree.nodes
    loads = np.bincount(tree.acc_node, weights=tree.loads.astype(float), minlength=n)
    stores = np.bincount(tree.acc_node, weights=tree.stores.astype(float), minlength=n)
    misses = np.bincount(tree.acc_node, weights=tree.misses.astype(float), minlength=n)
    rows = np.flatnonzero(loads + stores > 0)
    if labels:
        names, sites = _node_names(tree)
    else:
        names = [ROOT_NAME] + [str(k) for k in tree.function_key[1:]]
        sites = [""] * n
    stacks = []
    for row in rows.tolist():
        parts, at = [names[row]], row
        while at > 0:   # each node's call site names its caller and the line of the call
            parts.append(sites[at] or names[int(tree.parent[at])])
            at = int(tree.parent[at])
        stacks.append(" <- ".join(parts[:-1] if row and parts[-1] == ROOT_NAME else parts))
    top_object = []
    for row in rows.tolist():
        sel = tree.acc_node == row
        weights = tree.misses[sel] + (tree.loads[sel] + tree.stores[sel]) * 1e-12
        top_object.append(int(tree.acc_object[sel][int(np.argmax(weights))]))
    return pa.table({
        "context": pa.array(rows.astype(np.int64)), "pid": pa.array(tree.pid[rows]),
        "function": pa.array([names[r] for r in rows.tolist()], pa.string()),
        "calls": pa.array(tree.calls[rows]), "inclusive_ns": pa.array(tree.inclusive_ns[rows]),
        "loads": pa.array(loads[rows].astype(np.int64)),
        "stores": pa.array(stores[rows].astype(np.int64)),
        "llc_misses": pa.array(misses[rows].astype(np.int64)),
        "top_object": pa.array(top_object, pa.int64()),
        "stack": pa.array(stacks, pa.string())})
