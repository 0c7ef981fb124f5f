"""Terminal tables (rich) of the objects table."""

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


def objects_rich_table(objects: pa.Table, top: int, sort: str = "samples") -> Table:
    ranked = objects.sort_by([(SORT_KEYS[sort], "descending"), ("object", "ascending")])
    rows = ranked.slice(0, top).to_pylist()
    table = Table(title=f"top {min(top, objects.num_rows)} of {objects.num_rows} objects by {sort}")
    for name, justify in (("object", "right"), ("pid", "right"), ("size", "right"),
                          ("samples", "right"), ("share", "right"), ("per MiB", "right"),
                          ("pages", "right"), ("slow", "right"), ("allocated at", "left")):
        if name == "allocated at":
            table.add_column(name, justify=justify, overflow="fold", min_width=24)
        else:
            table.add_column(name, justify=justify, no_wrap=True)
    for r in rows:
        slow = "-" if r.get("slow_share") is None else f"{100 * r['slow_share']:.0f}%"
        table.add_row(str(r["object"]), str(r["pid"]), human_bytes(r["size"]), str(r["samples"]),
                      f"{100 * r['share']:.1f}%", f"{r['density']:.3g}", str(r["pages_touched"]),
                      slow, r["label"] or "")
    return table
