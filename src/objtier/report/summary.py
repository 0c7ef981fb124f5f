"""Terminal tables (rich) of the objects table and, for exact recordings, the contexts table,
and the cell formatting they share with the report's HTML tables (cell_text): sizes in
B/KiB/MiB/GiB, shares in %, other numbers without e-notation."""

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


def human_number(x: float) -> str:
    """A count or measure without e-notation: 22380, 0.0123, 3.5 (3 significant digits below
    1000, whole numbers with thousands separators above)."""
    if x != x:   # NaN
        return "-"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if x == int(x):
        return str(int(x))
    if abs(x) >= 1e-3:
        return f"{x:.3g}"
    return f"{x:.9f}".rstrip("0").rstrip(".")


def human_seconds(x: float) -> str:
    """A duration [s] in s, ms or µs, 3 significant digits."""
    if abs(x) >= 1 or x == 0:
        return f"{human_number(x)} s"
    if abs(x) >= 1e-3:
        return f"{x * 1e3:.3g} ms"
    return f"{x * 1e6:.3g} µs"


SIZE_COLUMNS = ("size", "bytes", "live_bytes", "fast_bytes", "slow_bytes")   # bytes
PERCENT_COLUMNS = ("share", "slow_share", "fast_share")   # fractions in [0, 1]


def cell_text(name: str, value) -> str:
    """A table cell as the terminal shows it: `name` is the column, `value` its raw value."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if name in SIZE_COLUMNS or name.endswith("_bytes"):
        return human_bytes(value)
    if name in PERCENT_COLUMNS or name.endswith("_share") or name == "share":
        digits = 0 if name == "slow_share" else 1
        return f"{100 * value:.{digits}f}%"
    if name.endswith("_s") or name == "seconds":
        return human_seconds(value)
    if isinstance(value, int):   # counts and ids as they are
        return str(value)
    return human_number(value)


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
                      cell_text("share", r["share"]), cell_text("density", r["density"]))
        else:
            values = (str(r["samples"]), cell_text("share", r["share"]),
                      cell_text("density", r["density"]), str(r["pages_touched"]),
                      cell_text("slow_share", r.get("slow_share")))
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


def sites_rich_table(sites: pa.Table, top: int, periods: tuple[int, int] | None,
                     by_access: bool = False) -> Table:
    """Top allocation sites (small blocks grouped by calling context, analysis.sites) by
    estimated peak live bytes, or with by_access (a recording that watched sites, analysis.
    site_watch) watched sites first by estimated touches per byte. est_* figures are the
    sampled blocks, each times its period; periods = (smallest, largest) of them."""
    rows = sites.slice(0, top).to_pylist()
    order = ("watched sites first, by estimated touches per byte of peak live bytes (pageout "
             "windows on their arenas)" if by_access else "by peak live bytes")
    lo, hi = periods or (0, 0)
    sampled = (f"1 in {lo} blocks sampled" if lo == hi else
               f"1 in {lo} to 1 in {hi} blocks sampled (the period raised while recording, "
               f"to keep within --overhead)")
    table = Table(title=f"top {len(rows)} of {sites.num_rows} allocation sites (blocks below "
                  f"--min-size) {order}; estimates: {sampled}")
    names = ["site", "pid", "blocks (est)", "mean size", "peak live (est)"]
    names += (["touches (est)", "per MiB (est)", "armed (est)", "in arena"] if by_access
              else ["live at end (est)", "samples (est)"])
    for name in names:
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("allocated at", justify="left", overflow="fold", min_width=24)
    for r in rows:
        cells = [str(r["site"]), str(r["pid"]), f"{r['est_blocks']:,}",
                 human_bytes(r["mean_size"]), human_bytes(r["est_peak_bytes"])]
        if not by_access:
            cells += [human_bytes(r["est_live_end_bytes"]),
                      f"{r['est_samples']:,}" if r["sampled_samples"] else "0"]
        elif r.get("watched"):
            touches = r["est_touches"]
            per_mib = touches / (r["est_peak_bytes"] / 2**20) if touches is not None and \
                r["est_peak_bytes"] else None
            cells += [f"{touches:,.0f}" if touches is not None else "unarmed",
                      f"{per_mib:,.1f}" if per_mib is not None else "-",
                      f"{r['armed_share']:.0%}", f"{r['arena_share']:.0%}"]
        else:
            cells += ["not watched", "-", "-", "-"]
        table.add_row(*cells, r["label"] or "")
    return table
