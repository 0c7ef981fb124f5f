"""Terminal tables (rich) of the objects table and, for exact recordings, the contexts table."""

from __future__ import annotations

import pyarrow as pa
from rich.table import Table

SORT_KEYS = {"density": "density", "samples": "samples", "size": "size"}


def human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def objects_rich_table(objects: pa.Table, top: int, sort: str = "samples",
                       exact: bool = False) -> Table:
    """Top objects. exact (a --sampler trace recording): exact loads, stores and LLC-model
    misses instead of samples; "samples" sorts by the exact misses then."""
    key = "llc_misses" if exact and sort == "samples" else SORT_KEYS[sort]
    ranked = objects.sort_by([(key, "descending"), ("object", "ascending")])
    rows = ranked.slice(0, top).to_pylist()
    shown = min(top, objects.num_rows)
    if exact:
        by = "exact LLC-model misses" if sort == "samples" else sort
        title = f"top {shown} of {objects.num_rows} objects by {by} (exact counts)"
        counts = (("loads", "right"), ("stores", "right"), ("misses", "right"),
                  ("share", "right"), ("misses/MiB", "right"))
    else:
        title = f"top {shown} of {objects.num_rows} objects by {sort}"
        counts = (("samples", "right"), ("share", "right"), ("per MiB", "right"),
                  ("pages", "right"), ("slow", "right"))
    table = Table(title=title)
    for name, justify in (("object", "right"), ("pid", "right"), ("size", "right"), *counts,
                          ("allocated at", "left")):
        if name == "allocated at":
            table.add_column(name, justify=justify, overflow="fold", min_width=24)
        else:
            table.add_column(name, justify=justify, no_wrap=True)
    for r in rows:
        if exact:
            values = (str(r["loads"]), str(r["stores"]), str(r["llc_misses"]),
                      f"{100 * r['share']:.1f}%", f"{r['density']:.3g}")
        else:
            slow = "-" if r.get("slow_share") is None else f"{100 * r['slow_share']:.0f}%"
            values = (str(r["samples"]), f"{100 * r['share']:.1f}%", f"{r['density']:.3g}",
                      str(r["pages_touched"]), slow)
        table.add_row(str(r["object"]), str(r["pid"]), human_bytes(r["size"]), *values,
                      r["label"] or "")
    return table


def contexts_rich_table(contexts: pa.Table, top: int) -> Table:
    """Top calling contexts of an exact recording by LLC-model misses (exclusive counts)."""
    ranked = contexts.sort_by([("llc_misses", "descending"), ("loads", "descending"),
                               ("context", "ascending")])
    rows = ranked.slice(0, top).to_pylist()
    table = Table(title=f"top {len(rows)} of {contexts.num_rows} contexts by exact LLC-model "
                  f"misses (exact counts, in the function itself)")
    for name in ("context", "pid", "calls", "loads", "stores", "misses", "top object"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("stack (innermost first)", justify="left", overflow="fold", min_width=24)
    for r in rows:
        table.add_row(str(r["context"]), str(r["pid"]), str(r["calls"]), str(r["loads"]),
                      str(r["stores"]), str(r["llc_misses"]),
                      "-" if r["top_object"] < 0 else str(r["top_object"]), r["stack"])
    return table
