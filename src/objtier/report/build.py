"""Build the characterization report: tables (CSV + Parquet) and one self-contained HTML page.

The page is interactive and offline: Plotly figures (plotly.js inlined once, no URL), a
sortable, filterable objects table (a few lines of inline JS) whose allocation sites show
their whole stack on hover. Layout of DIR: index.html, objects.{csv,parquet}, touches.*,
reuse.*, levels.*, tiers.*, latency_split.*, cost_by_tlb.*, contexts.* (exact recordings)
(a table the trace cannot support is not written).
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import jinja2
import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from objtier.analysis import pages, tiers, timeline
from objtier.analysis.mapping import sample_objects
from objtier.objects_view import ObjectsView, figure_kind, object_stacks, objects_view
from objtier.report import derive as D
from objtier.report import figures as F
from objtier.report.summary import cell_text
from objtier.trace.columns import page_shift, trace_end_ns

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


@dataclass
class Report:
    out_dir: Path
    objects: pa.Table
    tables: dict[str, pa.Table] = field(default_factory=dict)
    figures: list = field(default_factory=list)   # (name, Figure or None, note or None)
    notes: list[str] = field(default_factory=list)
    unmapped: int = 0
    total_samples: int = 0
    hottest: int | None = None
    view: ObjectsView | None = None
    stacks: list[str] = field(default_factory=list)   # whole allocation stack per object
    sampler: str = "unknown"   # as recorded (report.derive.recorded_sampler)
    basis: str = ""            # what `accesses` and density hold, for the page
    touches: D.Distribution | None = None   # Fig. 4's data, or why it is withheld
    reuse: D.Distribution | None = None     # Fig. 5's data, or why it is withheld
    coverage_line: str = ""    # analysis.coverage: the footprint the objects cover

    @property
    def index_html(self) -> Path:
        return self.out_dir / "index.html"


SHARE_TABLES = ("tiers", "latency_split")   # every column of these is a fraction in [0, 1]


def _table_html(table: pa.Table, limit: int = 50, shares: bool = False) -> str:
    """A small HTML table (escaped), first `limit` rows, cells as the terminal prints them
    (summary.cell_text); shares: every column is a fraction, shown in %."""
    names = table.column_names
    rows = table.slice(0, limit).to_pylist()

    def fmt(name, value) -> str:
        if value is None:
            return "&mdash;"
        return html.escape(cell_text("share" if shares else name, value))

    head = "".join(f"<th>{html.escape(n)}</th>" for n in names)
    body = "".join("<tr>" + "".join(f"<td>{fmt(n, r[n])}</td>" for n in names) + "</tr>"
                   for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _write_table(out_dir: Path, name: str, table: pa.Table) -> None:
    pq.write_table(table, out_dir / f"{name}.parquet")
    pacsv.write_csv(table, out_dir / f"{name}.csv")


def build_report(trace, out_dir: str | Path, top: int = 10, progress=None,
                 labels: bool = True, render: bool = True) -> Report:
    """Analyse `trace` and write the report into out_dir. `progress(step_text)` is optional."""
    out_dir = Path(out_dir)
    out_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    step = progress or (lambda text: None)

    step("computing the objects table")
    view = objects_view(trace, labels=labels)   # exact counts for a --sampler trace recording
    objects = view.table
    mapped = sample_objects(trace)   # samples (an exact recording's optional address trace)
    report = Report(out_dir, objects, unmapped=view.outside, total_samples=view.total,
                    view=view)
    samples = trace.samples
    levels = tiers.has_levels(samples)
    sampler = report.sampler = D.recorded_sampler(trace)
    shift = page_shift(trace)
    report.basis = view.basis
    if not view.exact and trace.windows.num_rows > 0:
        report.basis = f"estimated touches ({sampler} sampler)"
    count = view.count_column
    ranked = objects.sort_by([(count, "descending"), ("object", "ascending")])
    hot = [int(o) for o, s in zip(ranked.column("object").to_pylist(),
                                  ranked.column(count).to_pylist()) if s > 0][:top]
    report.hottest = hot[0] if hot else None
    if levels and hot:
        slow = column_max(objects, "slow_samples")
        if slow is not None:
            report.hottest = slow   # the seed's "hottest object": most slow-tier samples

    step("per-page statistics")
    watch = D.watching(trace, objects, shift)
    report.touches = D.touches_per_page(trace, mapped, objects, shift, sampler, watch)
    intervals = pages.reuse_intervals(trace, mapped, report.hottest) \
        if report.hottest is not None and not D.is_window_sampler(sampler) else np.zeros(0)
    report.reuse = D.reuse(trace, mapped, report.hottest, sampler, shift, intervals)
    report.tables["objects"] = objects
    from objtier.analysis.coverage import coverage, coverage_line
    from objtier.analysis.sites import has_sites, site_table

    report.coverage_line = coverage_line(coverage(trace))
    if has_sites(trace):   # small blocks by calling context (estimates)
        report.tables["sites"] = site_table(trace, labels=labels)
    if report.touches.table is not None:
        report.tables["touches"] = report.touches.table
    if report.reuse.values is not None:   # statistics of the values Fig. 5 draws [s]
        report.tables["reuse"] = pages.reuse_statistics(report.reuse.values)
    if view.exact:
        from objtier.exact.tree import exact_context_table

        report.tables["contexts"] = exact_context_table(trace, labels=labels)
    for name, fn in (("levels", tiers.level_shares), ("tiers", tiers.tier_split),
                     ("latency_split", tiers.latency_split), ("cost_by_tlb", tiers.cost_by_tlb)):
        table = fn(samples)
        if table is not None:
            report.tables[name] = table
    if labels:
        from objtier.objects_view import missing_line_note

        note = missing_line_note(trace, objects)
        if note:
            report.notes.append(note[0].upper() + note[1:] + ".")
    if not levels:
        report.notes.append(f"Tables 1-3 (levels, latency cost, TLB): the {sampler} sampler "
                            f"reports no memory level or TLB outcome.")

    step("writing tables")
    for name, table in report.tables.items():
        _write_table(out_dir, name, table)

    step("drawing figures")
    label = ""
    if report.hottest is not None:
        label = objects.column("label")[report.hottest].as_py() or ""
    series = timeline.counter_series(trace.counters, trace.start_ns)
    run_s = run_seconds(trace, series)
    report.stacks = object_stacks(trace, labels)
    kind = figure_kind(trace, view)
    if D.is_window_sampler(sampler) and kind == "samples":
        kind = "fault"   # any window sampler's samples follow its scanner: draw its windows
    addr = int(objects.column("addr")[report.hottest].as_py()) if report.hottest is not None else 0
    unit = "exact LLC-model misses" if view.exact else "samples"
    builders = [
        ("levels", lambda: F.fig_levels(samples, sampler)),
        ("touches", lambda: F.fig_touches(report.touches)),
        ("reuse", lambda: F.fig_reuse(report.reuse, label)),
        ("top_objects", lambda: F.fig_top_objects(objects, levels, top, count, unit,
                                                  report.stacks) if hot
         else (None, f"Fig. 6: no {unit} fell in a tracked object.")),
        ("timeline", lambda: F.fig_timeline(objects, trace.start_ns, hot, run_s)),
        ("access_pattern", lambda: F.fig_access_pattern(trace, mapped, report.hottest, shift,
                                                        addr, run_s, kind, sampler)
         if report.hottest is not None else (None, "Fig. 8: no object has accesses.")),
        ("object_heatmap", lambda: F.fig_object_heatmap(trace, objects, mapped, hot, run_s,
                                                        kind, shift, sampler)),
        ("counters", lambda: F.fig_counters(series, run_s)),
        ("promotions", lambda: F.fig_promotions(trace, series, run_s, sampler)[:2]),
    ]
    for name, build in builders:
        fig, note = build()
        report.figures.append((name, fig, note))
    ends = [float(t[-1]) for t, _, _ in series.values() if len(t)]
    if ends and max(ends) < 0.5 * run_s:
        report.notes.append(f"The counters stop at {max(ends):.2f} s of a {run_s:.2f} s run "
                            f"(the counters reader ended early).")

    if render:
        step("rendering the page")
        _render(report, trace, top)
    return report


def column_max(objects: pa.Table, name: str) -> int | None:
    values = objects.column(name).to_numpy(zero_copy_only=False)
    if not len(values) or values.max() <= 0:
        return None
    return int(np.argmax(values))


def run_seconds(trace, series: dict) -> float:
    """The run's length since the trace's start [s]: its last record or counter reading."""
    end = (trace_end_ns(trace) - trace.start_ns) / 1e9
    for t, _, _ in series.values():
        if len(t):
            end = max(end, float(t[-1]))
    return max(end, 1e-3)


MAX_TABLE_ROWS = 5000   # objects in the page's table (all of them are in objects.csv)


def _objects_table_html(ranked: pa.Table, shown: list[str], stacks: list[str],
                        limit: int = MAX_TABLE_ROWS) -> str:
    """The objects table: every cell carries its sort value (data-v) and shows it as the
    terminal does (summary.cell_text: MiB, %); the allocation site's title is the object's
    whole stack (hover)."""
    rows = ranked.slice(0, limit).to_pylist()

    def cell(name, value, obj) -> str:
        if name == "label":
            stack = stacks[obj] if 0 <= obj < len(stacks) else (value or "")
            return (f'<td class="site" title="{html.escape(stack)}">'
                    f'{html.escape(value or "")}</td>')
        if value is None:
            return '<td data-v="">&mdash;</td>'
        # data-v: the raw value the table sorts by; the text: as the terminal prints it
        raw = repr(value) if isinstance(value, float) else str(value)
        return f'<td data-v="{html.escape(raw)}">{html.escape(cell_text(name, value))}</td>'

    head = "".join(f'<th data-col="{i}" title="click to sort">{html.escape(n)}</th>'
                   for i, n in enumerate(shown))
    body = "".join("<tr>" + "".join(cell(n, r[n], int(r["object"])) for n in shown) + "</tr>"
                   for r in rows)
    return (f'<table id="objects" class="sortable"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table>")


def _render(report: Report, trace, top: int) -> None:
    import plotly.offline

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                             autoescape=jinja2.select_autoescape(["html", "j2"]))
    template = env.get_template("report.html.j2")
    view = report.view
    if view is not None and view.exact:
        shown = ["object", "pid", "size", "loads", "stores", "llc_misses", "share", "density",
                 "lifetime_s", "label"]
    else:
        shown = ["object", "pid", "size", "samples", "share", "density", "pages_touched",
                 "mean_latency", "slow_share", "lifetime_s", "label"]
    count = view.count_column if view is not None else "samples"
    ranked = report.objects.sort_by([(count, "descending"), ("object", "ascending")])
    figures = []
    for name, fig, note in report.figures:
        figures.append({"name": name, "json": F.to_json(fig) if fig is not None else None,
                        "note": note})
    tables = {name: _table_html(t, shares=name in SHARE_TABLES)
              for name, t in report.tables.items() if name != "objects"}
    processes = [{"pid": p.pid, "exe": p.exe, "argv": " ".join(p.argv),
                  "complete": p.complete} for p in trace.processes]
    from objtier.camat.html import recording_section  # C-AMAT, when the trace has a stream

    page = template.render(
        camat_html=recording_section(trace),
        title=f"objtier report: {trace.path.name}",
        generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        processes=processes, total_samples=report.total_samples, unmapped=report.unmapped,
        exact=bool(view and view.exact), unit=view.unit if view else "samples",
        basis=report.basis or "sampled accesses", sampler=report.sampler,
        unmapped_share=(report.unmapped / report.total_samples) if report.total_samples else 0.0,
        outside_note=view.outside_note if view else "",
        coverage=report.coverage_line.splitlines(),
        objects_count=report.objects.num_rows, hottest=report.hottest,
        objects_html=_objects_table_html(ranked.select(shown), shown, report.stacks), top=top,
        shown_rows=min(report.objects.num_rows, MAX_TABLE_ROWS),
        tables=tables, figures=figures, notes=report.notes,
        plotly_js=plotly.offline.get_plotlyjs(),
        files=sorted(p.name for p in report.out_dir.iterdir() if p.suffix in (".csv", ".parquet")),
        warnings=list(getattr(trace, "warnings", [])))
    report.index_html.write_text(page, encoding="utf-8")
