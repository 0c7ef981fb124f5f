"""Which objects table a recording is read through: the one place that decides it.

A recording made with the trace sampler (--sampler trace; ACCESS_COUNT records present) counts
every load and store: its views show exact loads, stores and LLC-model misses per object,
and its `accesses` (what plans and ranks read) are the exact LLC-model misses. Any other
recording holds samples: its views show sample counts and the sampler's access estimate.

Every view (objects, report, plan --explain) calls objects_view() and prints `unit` and
`basis` as they are, so no view speaks of samples for an exact recording or of exact counts
for a sampled one. This module sits above analysis.objects and exact.tree and uses both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from objtier.analysis.mapping import sample_objects
from objtier.analysis.objects import object_table, unmapped_count
from objtier.exact.tree import exact_counts, exact_object_table, outside_counts

EXACT_METRIC = "misses"   # exact recordings are ranked by LLC-model misses (memory accesses)


@dataclass(frozen=True)
class ObjectsView:
    """The objects table of a recording and how to speak of its counts."""

    table: pa.Table      # analysis.objects columns; exact: + loads, stores, llc_misses
    exact: bool          # counts are exact (trace sampler), not samples
    total: int           # samples in the trace / exact loads + stores
    outside: int         # of `total`: outside every tracked object
    mapped: np.ndarray | None   # sample -> object row (sampled recordings only)
    unit: str            # "samples" or "exact accesses" (loads + stores)
    basis: str           # what `accesses` holds, for labels ("exact LLC-model misses", ...)
    outside_note: str = ""   # where `outside` fell (stacks, thread-local storage), or why
                             # the sampler cannot say

    @property
    def count_column(self) -> str:
        """The column holding the view's primary count per object."""
        return "llc_misses" if self.exact else "samples"

    @property
    def outside_line(self) -> str:
        """One line: how much fell outside every tracked object."""
        share = self.outside / self.total if self.total else 0.0
        return (f"{self.total} {self.unit}; {self.outside} outside every tracked object "
                f"({share:.1%})" + (f": {self.outside_note}" if self.outside_note else ""))

    @property
    def accesses_label(self) -> str:
        """How a share of `accesses` is named ("of exact LLC-model misses", ...)."""
        return f"of {self.basis}"


def is_exact(trace) -> bool:
    """The recording was made with the trace sampler (exact per-object counts)."""
    return trace.access_counts.num_rows > 0


def objects_view(trace, labels: bool = True) -> ObjectsView:
    """The objects table every view of this recording shows (see the module docstring)."""
    if is_exact(trace):
        table = exact_object_table(trace, EXACT_METRIC, labels=labels)
        loads, stores, misses = exact_counts(trace)
        outside_all, _ = outside_counts(trace)
        table = (table.append_column("loads", pa.array(loads))
                 .append_column("stores", pa.array(stores))
                 .append_column("llc_misses", pa.array(misses)))
        total_misses = float(misses.sum())
        share = misses / total_misses if total_misses else np.zeros(len(misses))
        table = table.set_column(table.schema.get_field_index("share"), "share",
                                 pa.array(share))
        total = int(loads.sum() + stores.sum()) + outside_all
        return ObjectsView(table, True, total, outside_all, None, "exact accesses",
                           "exact LLC-model misses", thread_memory_note(trace, True))
    mapped = sample_objects(trace)
    table = object_table(trace, mapped, labels=labels)
    windows = trace.windows.num_rows > 0
    basis = (f"estimated touches ({window_sampler(trace)} sampler)" if windows
             else "sampled accesses (sample weights)")
    return ObjectsView(table, False, len(mapped), unmapped_count(mapped), mapped, "samples",
                       basis, thread_memory_note(trace, False))


WATCHING_SAMPLERS = ("fault", "pageout", "wp")   # they arm tracked objects' pages only


def window_sampler(trace) -> str:
    """The window sampler a recording with WINDOW records used, as its processes were
    configured (OBJTIER_SAMPLER), else "window"."""
    samplers = sorted({p.config.get("OBJTIER_SAMPLER", "") for p in
                       getattr(trace, "processes", [])} & set(WATCHING_SAMPLERS))
    return "/".join(samplers) or "window"


def thread_memory_note(trace, exact: bool) -> str:
    """How much of what fell outside every tracked object was on thread stacks and in
    thread-local storage (exact recordings: the runtime counts them apart), or why the
    recording cannot say (the window samplers never watch those pages)."""
    if exact:
        from objtier.exact.tree import outside_parts

        parts = outside_parts(trace)
        if not any(parts.values()):
            return ""
        return (f"{parts['stack']} on thread stacks, {parts['tls']} in thread-local storage, "
                f"{parts['other']} elsewhere")
    samplers = {p.config.get("OBJTIER_SAMPLER", "") for p in getattr(trace, "processes", [])}
    watching = sorted(s for s in samplers if s in WATCHING_SAMPLERS)
    if watching:
        return (f"the {'/'.join(watching)} sampler watches tracked objects only, so accesses "
                f"to thread stacks and thread-local storage are not sampled")
    if "perf" in samplers:
        return "samples on thread stacks and in thread-local storage are among these"
    return ""


def accesses_basis(table: pa.Table) -> str:
    """What an object table's `accesses` column holds, judged from its columns: tables
    written from exact recordings carry llc_misses (objects.parquet of the report)."""
    if "llc_misses" in table.column_names:
        return "exact LLC-model misses"
    if "est_touches" in table.column_names and table.column("est_touches").null_count \
            < table.num_rows:
        return "estimated touches (window sampler)"
    return "sampled accesses"


def missing_line_note(trace, table: pa.Table) -> str | None:
    """One line when allocation contexts in the recorded programs' own binaries have no
    source lines ("f (prog)" labels, trace.symbolize): they were built without -g."""
    import os

    exes = {os.path.basename(p.exe) for p in getattr(trace, "processes", []) if p.exe}
    if not exes or "label" not in table.column_names:
        return None
    lacking = set()
    for label in table.column("label").to_pylist():
        for part in (label or "").split(" <- "):
            module = part.rpartition("(")[2].rstrip(")")
            if module in exes or part.split("+0x")[0] in exes:
                lacking.add(module if module in exes else part.split("+0x")[0])
    if not lacking:
        return None
    names = ", ".join(sorted(lacking))
    return (f"allocation contexts in {names} have no source lines: rebuild with -g for "
            f"file:line locations")


def object_stacks(trace, labels: bool = True) -> list[str]:
    """The whole allocation stack of every object (row of trace.allocations), innermost
    first, symbolized (inlined frames included): what a hover shows."""
    allocs = trace.allocations
    ctx = trace.contexts
    pairs = list(zip(allocs.column("pid").to_pylist(), allocs.column("context").to_pylist()))
    if not labels or not ctx.num_rows:
        return [f"context {c}" if c else "(no context)" for _, c in pairs]
    from objtier.trace.symbolize import context_labels

    frames = {(p, c): f for p, c, f in zip(ctx.column("pid").to_pylist(),
                                           ctx.column("context").to_pylist(),
                                           ctx.column("frames").to_pylist())}
    keys = list(frames)
    text = dict(zip(keys, context_labels([frames[k] for k in keys], depth=64)))
    return [text.get(p, f"context {p[1]}" if p[1] else "(no context)") for p in pairs]


def figure_kind(trace, view: ObjectsView) -> str:
    """How the report can draw where and when the program touched memory: "fault" (from the
    scan windows), "samples" (PEBS/IBS, or an exact recording's address trace) or "exact"
    (exact counts without an address trace: no times)."""
    from objtier.trace.format import SOURCE_FAULT

    source = trace.samples.column("source").to_numpy(zero_copy_only=False)
    if not len(source):
        return "exact" if view.exact else "samples"
    if np.all(source == SOURCE_FAULT):
        return "fault"
    return "samples"
