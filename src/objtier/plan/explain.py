"""Human-readable output of `objtier plan`: summary lines and --explain tables (rich)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from objtier.plan.per_phase import PhaseMerge
from objtier.plan.placement import Placement
from objtier.plan.table import ObjectTable


def human_bytes(n: float) -> str:
    """1536 -> "1.5 KiB" (binary units, as budgets are parsed)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024.0
    return f"{n:.1f} TiB"


def summary_line(placement: Placement, phase: str | None = None,
                 basis: str = "sampled accesses") -> str:
    """One line per plan; `basis` names what the accesses are (objects_view.accesses_basis):
    "sampled accesses", "estimated touches (pageout sampler)" (or fault, wp) or "exact LLC-model misses"."""
    total = float(placement.accesses.sum())
    fast = int((placement.tier == "fast").sum())
    split = int((placement.tier == "split").sum())
    by_page = int((placement.tier == "pages").sum())
    share = placement.fast_accesses / total if total > 0 else 0.0
    where = f" phase {phase}:" if phase else ""
    if placement.lifetimes:
        used = (f"peak live {human_bytes(placement.peak_bytes)} of "
                f"{human_bytes(placement.capacity_bytes)} (sum over lifetimes "
                f"{human_bytes(placement.used_bytes)})")
    else:
        used = (f"{human_bytes(placement.used_bytes)} of "
                f"{human_bytes(placement.capacity_bytes)}")
    parts = f"{split} split" + (f", {by_page} by pages" if by_page else "")
    return (f"{placement.algorithm}:{where} {fast + split + by_page} of {len(placement)} objects "
            f"fast ({parts}), {used}, {share:.1%} of {basis}")


def _console() -> Console:
    """stdout console; wide enough for the explain table when output is not a terminal."""
    console = Console()
    return console if console.is_terminal else Console(width=160)


def explain(objects: ObjectTable, placement: Placement, phase: str | None = None,
            rows: int = 40, console: Console | None = None,
            basis: str = "sampled accesses",
            loads_stores: dict[int, tuple[int, int]] | None = None) -> None:
    """Print placement decisions in decision order: priority, size, cumulative fill, reason.
    `basis` names what the accesses column counts (see summary_line); `loads_stores` (exact
    recordings: object -> (loads, stores)) adds those columns."""
    console = console or _console()
    title = f"{placement.algorithm}" + (f" — phase {phase}" if phase else "")
    if placement.lifetimes:
        title += " (fill: most fast bytes live at once during the object's lifetime)"
    table = Table(title=title, caption=f"accesses: {basis}", show_lines=False)
    exact = basis.startswith("exact")
    for name, justify in (("#", "right"), ("object", "right"), ("allocated at", "left"),
                          ("priority", "right"), ("size", "right"),
                          ("exact misses" if exact else "accesses", "right"),
                          *((("exact loads", "right"), ("exact stores", "right"))
                            if loads_stores is not None else ()),
                          ("tier", "left"), ("fast", "right"), ("fill", "right"),
                          ("reason", "left")):
        table.add_column(name, justify=justify, overflow="fold")
    ex = placement.explain()
    label_of = dict(zip(objects.object.tolist(), objects.label.tolist()))
    capacity = max(placement.capacity_bytes, 1)
    shown = ex.num_rows if rows <= 0 else min(rows, ex.num_rows)
    cols = {name: ex.column(name).to_pylist()[:shown] for name in ex.column_names}
    for i in range(shown):
        label = str(label_of.get(cols["object"][i], ""))
        tier = cols["tier"][i]
        style = {"fast": "green", "split": "yellow"}.get(tier, "")
        table.add_row(
            "-" if cols["order"][i] < 0 else str(cols["order"][i]), str(cols["object"][i]),
            label[:60], f"{cols['priority'][i]:.3g}", human_bytes(cols["size"][i]),
            f"{cols['accesses'][i]:.6g}",
            *((str(loads_stores.get(cols["object"][i], (0, 0))[0]),
               str(loads_stores.get(cols["object"][i], (0, 0))[1]))
              if loads_stores is not None else ()),
            f"[{style}]{tier}[/]" if style else tier,
            human_bytes(cols["fast_bytes"][i]),
            f"{human_bytes(cols['cumulative_fill'][i])} ({cols['cumulative_fill'][i] / capacity:.0%})",
            cols["reason"][i].replace("sampled accesses", "exact misses") if exact
            else cols["reason"][i])
    console.print(table)
    if shown < ex.num_rows:
        console.print(f"... {ex.num_rows - shown} more objects (--explain-rows 0 shows all)")
    if placement.lifetimes:
        console.print(f"peak live fast bytes: {human_bytes(placement.peak_bytes)} of "
                      f"{human_bytes(placement.capacity_bytes)} ({placement.peak_bytes} bytes; "
                      f"fast bytes summed over all lifetimes {placement.used_bytes})")
    else:
        console.print(f"peak live fast bytes: {human_bytes(placement.peak_bytes)} of "
                      f"{human_bytes(placement.capacity_bytes)} (lifetimes not used: every "
                      f"object counted as live at once)")
    for warning in placement.warnings:
        console.print(f"[bold]warning:[/] {warning}")


def explain_phases(merge: PhaseMerge, console: Console | None = None) -> None:
    """Print the phase tree after merging: which plan applies while each phase runs."""
    console = console or _console()
    table = Table(title="phases")
    for name in ("phase", "parent", "ms per run", "runs", "plan used", "cosine", "reason"):
        table.add_column(name)
    for n, p, d, e, t, s, r in zip(merge.name, merge.parent, merge.mean_duration_ns,
                                   merge.executions, merge.target, merge.similarity,
                                   merge.reason):
        table.add_row(n, p or "-", f"{d / 1e6:.3g}", str(e), t, "-" if s != s else f"{s:.3f}", r)
    console.print(table)
