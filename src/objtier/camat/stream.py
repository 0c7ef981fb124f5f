"""A recording's ordered access stream (ACCESS records, OBJTIER_TRACE_STREAM) as model input:
threads numbered as cores, addresses mapped to the recording's objects (the interval join of
objtier.analysis.mapping, at each access's time), and code regions: the innermost region the
program marked (objtier_region_begin/end) around each access when the recording has region
markers, else the calling-context node's innermost function."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from objtier.analysis.mapping import ObjectIndex
from objtier.analysis.objects import object_labels
from objtier.camat.model import ACCESS_DTYPE, WRITE
from objtier.errors import TraceError
from objtier.trace.columns import column
from objtier.trace.format import ACCESS_WRITE
from objtier.trace.symbolize import symbolize

OTHER_OBJECT = "(untracked: stack, globals, small blocks)"
ROOT_REGION = "(outside instrumented functions)"
OUTSIDE_MARKED = "(outside marked regions)"
MAX_CORES = 64


@dataclass
class Stream:
    accesses: np.ndarray        # ACCESS_DTYPE, stream order
    object_labels: list[str]    # model object index -> label (0 = untracked memory)
    object_bytes: np.ndarray    # int64 per model object (0 for untracked)
    region_labels: list[str]    # model region index -> function (0 = root)
    threads: list[tuple[int, int]]  # core -> (pid, tid)
    footprint_pages: int        # distinct pages touched
    coverage: dict | None = None  # what of the run the stream holds (camat/coverage.py; no mask)


def _function_names(trace) -> dict[tuple[int, int], str]:
    """(pid, cct node id) -> name of the node's function."""
    nodes = trace.cct_nodes
    if not nodes.num_rows:
        return {}
    ctx = trace.contexts
    frames = {(p, c): f for p, c, f in zip(ctx.column("pid").to_pylist(),
                                           ctx.column("context").to_pylist(),
                                           ctx.column("frames").to_pylist())}
    keys = list(zip(nodes.column("pid").to_pylist(), nodes.column("id").to_pylist(),
                    nodes.column("function").to_pylist()))
    firsts = [(frames.get((p, f)) or [{"module": "", "offset": 0}])[0] for p, _, f in keys]
    names = symbolize((fr["module"], int(fr["offset"])) for fr in firsts)
    return {(p, n): name.split(" (")[0] for (p, n, _), name in zip(keys, names)}


def _marked_regions(trace, pid: np.ndarray, tid: np.ndarray,
                    order: np.ndarray) -> tuple[list[str], np.ndarray] | None:
    """Labels and per-access label index from the region markers: each access goes to its
    thread's innermost open region at its place in the stream (markers carry the stream's
    order). None when the recording has no markers. One Python step per marker, none per
    access."""
    marks = trace.regions
    if not marks.num_rows:
        return None
    from objtier.trace.format import REGION_BEGIN

    names = trace.names
    m_pid = column(marks, "pid", np.uint32)
    m_tid = column(marks, "tid", np.uint32)
    m_order = column(marks, "order", np.uint64)
    m_time = column(marks, "time_ns", np.uint64)
    m_name = column(marks, "name", np.uint32)
    m_event = column(marks, "event", np.uint16)
    labels = [OUTSIDE_MARKED]
    index = {OUTSIDE_MARKED: 0}
    out = np.zeros(len(order), dtype=np.uint32)
    key = pid.astype(np.uint64) << np.uint64(32) | tid.astype(np.uint64)
    m_key = m_pid.astype(np.uint64) << np.uint64(32) | m_tid.astype(np.uint64)
    for thread in np.unique(m_key).tolist():
        rows = np.flatnonzero(m_key == thread)
        rows = rows[np.lexsort((rows, m_time[rows], m_order[rows]))]  # stream order, then time
        open_regions: list[str] = []
        after = np.empty(len(rows), dtype=np.uint32)  # innermost region after each marker
        for i, r in enumerate(rows.tolist()):
            name = names.get((int(m_pid[r]), int(m_name[r])), f"region {int(m_name[r])}")
            if m_event[r] == REGION_BEGIN:
                open_regions.append(name)
            elif open_regions:  # an END closes the innermost open region
                open_regions.pop()
            top = open_regions[-1] if open_regions else OUTSIDE_MARKED
            if top not in index:
                index[top] = len(labels)
                labels.append(top)
            after[i] = index[top]
        mine = np.flatnonzero(key == np.uint64(thread))
        # markers at or before an access's order precede it (the marker read the counter the
        # thread's next access takes)
        k = np.searchsorted(m_order[rows], order[mine], side="right") - 1
        out[mine] = np.where(k >= 0, after[np.maximum(k, 0)], 0)
    return labels, out


def load_stream(trace) -> Stream:
    """The model input of a traced recording; TraceError when it has no access stream."""
    acc = trace.accesses
    if not acc.num_rows:
        raise TraceError("the recording has no ordered access stream: record an `objtier cc` "
                         "build with --sampler trace and OBJTIER_TRACE_STREAM=N (objtier camat "
                         "-- CMD does this)")
    from objtier.camat.coverage import coverage

    cov = coverage(trace, column(acc, "order", np.uint64), column(acc, "pid", np.uint32))
    mask = cov.pop("mask")
    if mask is not None:  # windows spread over the run: the evenly spaced ones, cut to one length
        import pyarrow as pa

        acc = acc.filter(pa.array(mask))
    pid = column(acc, "pid", np.uint32)
    tid = column(acc, "tid", np.uint32)
    addr = column(acc, "addr", np.uint64)
    time_ns = column(acc, "time_ns", np.uint64)
    flags = column(acc, "flags", np.uint16)
    size = column(acc, "size", np.uint16)
    node = column(acc, "cct_node", np.uint32)

    thread_key = pid.astype(np.uint64) << np.uint64(32) | tid.astype(np.uint64)
    threads, core = np.unique(thread_key, return_inverse=True)
    if len(threads) > MAX_CORES:
        raise TraceError(f"the access stream has {len(threads)} threads; the model takes at "
                         f"most {MAX_CORES}")

    allocs = trace.allocations
    mapped = ObjectIndex(allocs, trace.frees).lookup(pid, addr, time_ns)
    labels = object_labels(trace) if allocs.num_rows else np.zeros(0, dtype=object)
    used = np.unique(mapped[mapped >= 0])
    model_obj = np.zeros(len(mapped), dtype=np.uint32)
    if len(used):
        model_obj[mapped >= 0] = (np.searchsorted(used, mapped[mapped >= 0]) + 1).astype(np.uint32)
    seqs = column(allocs, "seq", np.uint64)
    sizes = column(allocs, "size", np.uint64)
    obj_labels = [OTHER_OBJECT] + [f"{labels[i]} #{int(seqs[i])}" for i in used.tolist()]
    obj_bytes = np.concatenate([[0], sizes[used].astype(np.int64)])

    marked = _marked_regions(trace, pid, tid, column(acc, "order", np.uint64))
    names = _function_names(trace) if marked is None else {}
    region_key = pid.astype(np.uint64) << np.uint64(32) | node.astype(np.uint64)
    uniq_nodes, node_index = np.unique(region_key, return_inverse=True)
    node_names = [ROOT_REGION if (int(k) & 0xFFFFFFFF) == 0 else
                  names.get((int(k) >> 32, int(k) & 0xFFFFFFFF), f"node {int(k) & 0xFFFFFFFF}")
                  for k in uniq_nodes]
    region_labels = sorted(set(node_names), key=lambda n: (n != ROOT_REGION, n))
    region_of_name = {n: i for i, n in enumerate(region_labels)}
    node_region = np.array([region_of_name[n] for n in node_names], dtype=np.uint32)

    out = np.empty(len(addr), dtype=ACCESS_DTYPE)
    out["addr"] = addr
    out["core"] = core.astype(np.uint32)
    out["object"] = model_obj
    if marked is None:
        out["region"] = node_region[node_index]
    else:
        region_labels, out["region"] = marked
    out["flags"] = (np.where(flags & ACCESS_WRITE, WRITE, 0)
                    | (np.minimum(size, 255).astype(np.uint16) << 8)).astype(np.uint16)
    out["dep"] = column(acc, "dep", np.uint16)
    page_shift = max((p.page_bytes for p in trace.processes if p.page_bytes), default=4096)
    pages = np.unique(addr >> np.uint64(int(page_shift).bit_length() - 1))
    return Stream(out, obj_labels, obj_bytes, region_labels,
                  [(int(k) >> 32, int(k) & 0xFFFFFFFF) for k in threads], len(pages), cov)
