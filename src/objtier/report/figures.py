"""The report's figures (seed Figs. 3-10 and an object x time heatmap), as Plotly figures.

Each builder returns (Figure, caption) or (None, note): the note is the one line the page
shows when the trace lacks the data; a caption (or None) says how a drawn figure's values were
obtained and whether they are measured or estimated. `sampler` is the recorded sampler's name
(report.derive.recorded_sampler), never assumed. Every figure has a title, axis titles with units, and hover
text; time axes span the whole run (0 .. run_s) and can be zoomed. Titles are wrapped, never
cut: wrap_title() breaks long ones onto lines and the layout reserves room for them.
"""

from __future__ import annotations

import textwrap

import numpy as np
import plotly.graph_objects as go
import pyarrow as pa
from plotly.subplots import make_subplots

from objtier.analysis import tiers, timeline
from objtier.trace.columns import FAST_LEVELS, column, level_mask

MAX_POINTS = 200_000   # scatter plots are thinned to at most this many points (every k-th)
TITLE_WIDTH = 90       # characters per title line
HEATMAP_OBJECTS = 20   # rows of the object x time heatmap
HEATMAP_BINS = 200     # time bins of the heatmaps
CDF_POINTS = 2000      # points of a drawn CDF (its distinct values, thinned evenly beyond)


def wrap_title(text: str, width: int = TITLE_WIDTH) -> str:
    return "<br>".join(textwrap.wrap(text, width)) or text


def _layout(fig: go.Figure, title: str, height: int = 360) -> go.Figure:
    lines = wrap_title(title).count("<br>") + 1
    fig.update_layout(title={"text": wrap_title(title), "x": 0.01, "xanchor": "left"},
                      height=height + 22 * (lines - 1), template="plotly_white",
                      margin={"t": 40 + 22 * lines, "l": 70, "r": 20, "b": 60},
                      legend={"font": {"size": 10}})
    return fig


def _time_axis(fig: go.Figure, run_s: float, **where) -> None:
    fig.update_xaxes(title_text="time since start (s)", range=[0, max(run_s, 1e-3)], **where)


def fig_levels(samples: pa.Table, sampler: str):
    table = tiers.level_shares(samples)
    if table is None:
        return None, f"Fig. 3: the {sampler} sampler reports no memory level."
    fig = go.Figure(go.Bar(x=table.column("level").to_pylist(),
                           y=100 * np.asarray(table.column("share")),
                           hovertemplate="%{x}: %{y:.1f}% of samples<extra></extra>"))
    fig.update_xaxes(title_text="memory level (data source)")
    fig.update_yaxes(title_text="share of samples (%)")
    return _layout(fig, "Fig. 3 - samples per memory level"), None


def fig_distribution(dist, title: str, number: str, percent_values: bool = False,
                     log_x: bool = False):
    """A distribution as two panels: its histogram (share of dist.total per bin) and its
    empirical CDF over the sorted per-page values. dist: report.derive.Distribution;
    percent_values: values are shares in [0, 1], drawn in %."""
    if dist.reason is not None:
        return None, f"{number}: {dist.reason}."
    table = dist.table
    share = 100 * np.asarray(table.column("share"))
    pages = np.asarray(table.column("pages"))
    values = np.asarray(dist.values, np.float64)
    x = 100 * values if percent_values else values
    cdf = 100 * np.arange(1, len(x) + 1) / max(dist.total, 1)
    # exact steps: the last point of each distinct value; then at most CDF_POINTS of them
    last = np.flatnonzero(np.append(x[1:] != x[:-1], True)) if len(x) else np.zeros(0, int)
    if len(last) > CDF_POINTS:
        last = last[np.unique(np.linspace(0, len(last) - 1, CDF_POINTS).astype(np.int64))]
    x, cdf = x[last], cdf[last]
    kind = "estimated" if dist.estimated else "measured"
    fig = make_subplots(rows=2, cols=1, vertical_spacing=0.22, subplot_titles=[
        f"histogram ({kind})", f"cumulative distribution ({kind})"])
    fig.add_trace(go.Bar(x=table.column("bin").to_pylist(), y=share, customdata=pages,
                         name="histogram", showlegend=False,
                         hovertemplate=f"%{{x}}: %{{y:.1f}}% (%{{customdata}} {dist.of})"
                                       "<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(x=x, y=cdf, mode="lines", line={"shape": "hv"}, name="CDF",
                             showlegend=False,
                             hovertemplate="%{y:.1f}% at or below %{x:.4g}<extra></extra>"),
                  row=2, col=1)
    fig.update_xaxes(title_text=dist.bin_axis or dist.axis, row=1, col=1, type="category")
    fig.update_xaxes(title_text=dist.axis, row=2, col=1, type="log" if log_x else "linear")
    fig.update_yaxes(title_text=f"share of {dist.of} (%)", row=1, col=1)
    fig.update_yaxes(title_text="cumulative share (%)", range=[0, 100.5], row=2, col=1)
    return _layout(fig, f"{number} - {title} ({kind})", 640), dist.caption


def fig_touches(dist):
    """Fig. 4: touches per page as far as the sampler can tell (report.derive)."""
    title = ("pages by share of their watches in which they were touched" if dist.estimated
             else "pages by number of touches")
    return fig_distribution(dist, title, "Fig. 4", percent_values=dist.estimated)


def fig_reuse(dist, label: str):
    """Fig. 5: reuse of the hottest object's pages as a distribution (report.derive)."""
    return fig_distribution(dist, f"{dist.title} {label}".strip(), "Fig. 5", log_x=True)


def fig_top_objects(objects: pa.Table, levels: bool, top: int, count: str, unit: str,
                    stacks: list[str]):
    """Fig. 6: top objects by `count` (samples, or exact misses) in each tier (or overall);
    hover shows the object's full allocation stack."""
    groups = [("fast_samples", "fast-tier samples"), ("slow_samples", "slow-tier samples")] \
        if levels else [(count, unit)]
    fig = make_subplots(rows=len(groups), cols=1, vertical_spacing=0.18,
                        subplot_titles=[f"top {top} objects by {name}" for _, name in groups])
    for row, (col, name) in enumerate(groups, start=1):
        counts = column(objects, col, np.float64)
        total = counts.sum()
        order = np.argsort(-counts, kind="stable")[:top]
        order = order[counts[order] > 0]
        fig.add_trace(go.Bar(
            x=[f"object {i}" for i in order],
            y=100 * counts[order] / total if total else counts[order],
            customdata=np.stack([counts[order], [stacks[i] for i in order]], axis=1)
            if len(order) else None,
            hovertemplate="%{x}: %{y:.1f}% (%{customdata[0]:.0f})<br>%{customdata[1]}"
                          "<extra></extra>", showlegend=False), row=row, col=1)
        fig.update_xaxes(title_text="object (row of objects.csv)", row=row, col=1)
        fig.update_yaxes(title_text=f"share of {name} (%)", row=row, col=1)
    return _layout(fig, f"Fig. 6 - top {top} objects", height=330 * len(groups)), None


def fig_timeline(objects: pa.Table, start_ns: int, hot: list[int], run_s: float):
    if not objects.num_rows:
        return None, "Fig. 7: the trace has no allocations."
    t, live = timeline.live_bytes(objects, start_ns)
    fig = go.Figure(go.Scatter(x=np.concatenate([[0.0], t, [run_s]]),
                               y=np.concatenate([[0.0], live, live[-1:]]) / 2**20,
                               mode="lines", line={"shape": "hv"}, name="live objects",
                               hovertemplate="%{x:.3f} s: %{y:.1f} MiB<extra></extra>"))
    alloc = column(objects, "alloc_ns", np.float64)
    labels = objects.column("label").to_pylist()
    for obj in hot[:3]:
        x = (alloc[obj] - start_ns) / 1e9
        fig.add_trace(go.Scatter(x=[x, x], y=[0, float(live.max()) / 2**20], mode="lines",
                                 line={"dash": "dash"}, name=f"object {obj} allocated",
                                 hovertext=labels[obj] or "", hoverinfo="text+name"))
    _time_axis(fig, run_s)
    fig.update_xaxes(rangeslider={"visible": True})
    fig.update_yaxes(title_text="live objects (MiB)")
    return _layout(fig, "Fig. 7 - live bytes of tracked objects over time", 420), None


def fig_access_pattern(trace, mapped: np.ndarray, obj: int, page_shift: int, addr: int,
                       run_s: float, kind: str, sampler: str):
    """Fig. 8: where in the object the program touched, over time. kind: "fault" (drawn
    from the scan windows: touch rate where a window watched, blank where none did; the
    samples alone would draw the scanner's sweep), "samples" (PEBS/IBS or an exact address
    trace: one point per sample) or "exact" (no address trace)."""
    name = f"object {obj}"
    if kind == "exact":
        return None, ("Fig. 8: an exact recording counts accesses per object and context, "
                      "not their times or pages; record with --trace-limit N for an address "
                      "trace of the first N accesses.")
    if kind == "fault":
        rates = timeline.window_rates(trace, page_shift)
        if rates is None:
            return None, (f"Fig. 8: the {sampler} sampler's samples follow its scan sweep, not the "
                          "program; this recording has no scan windows (format < 1.1) to "
                          "draw the program's touches from.")
        mine = np.flatnonzero(rates["object"] == obj)
        if not len(mine):
            return None, f"Fig. 8: no scan window watched {name}."
        size_pages = int(max(rates["page1"][mine].max(), 1))
        page_edges = np.linspace(0, size_pages, min(size_pages, 128) + 1)
        edges = np.linspace(0, max(run_s, 1e-3), HEATMAP_BINS + 1)
        row_of = np.full(len(rates["object"]), -1, dtype=np.int64)
        # one grid row per page band: split each window into the bands it covers
        grid = np.full((len(page_edges) - 1, len(edges) - 1), np.nan)
        for band in range(len(page_edges) - 1):
            lo, hi = page_edges[band], page_edges[band + 1]
            cover = mine[(rates["page0"][mine] < hi) & (rates["page1"][mine] > lo)]
            if not len(cover):
                continue
            row_of[:] = -1
            row_of[cover] = 0
            grid[band] = timeline.window_grid(rates, np.zeros(1), edges, row_of)[0]
        fig = go.Figure(go.Heatmap(
            x=(edges[:-1] + edges[1:]) / 2, y=(page_edges[:-1] + page_edges[1:]) / 2, z=grid,
            colorscale="Viridis", zmin=0, zmax=_color_top(grid),
            colorbar={"title": {"text": "touches /<br>page / s"}},
            hovertemplate="%{x:.3f} s, page %{y:.0f}: %{z:.3g} touches per page-second"
                          "<extra></extra>"))
        _time_axis(fig, run_s)
        fig.update_yaxes(title_text="page in object (index)")
        return _layout(fig, f"Fig. 8 - where the program touched {name}: first-touch rate in "
                            f"the {sampler} sampler's scan windows (blank: not watched then)",
                       420), None
    sel = np.flatnonzero(mapped == obj)
    if not len(sel):
        return None, "Fig. 8: no object has samples."
    sel = sel[:: max(1, len(sel) // MAX_POINTS)]
    t = (column(trace.samples, "time_ns", np.float64)[sel] - trace.start_ns) / 1e9
    page = (column(trace.samples, "addr", np.uint64)[sel] - np.uint64(addr)) \
        >> np.uint64(page_shift)
    fig = go.Figure(go.Scattergl(x=t, y=page, mode="markers", marker={"size": 3},
                                 hovertemplate="%{x:.4f} s, page %{y}<extra></extra>"))
    _time_axis(fig, run_s)
    fig.update_yaxes(title_text="page in object (index)")
    return _layout(fig, f"Fig. 8 - accesses of {name} (one point per sample; drag to zoom)",
                   420), None


_COUNTER_GROUPS = [
    ("memory per node", lambda n: n.startswith("node") and "mem" in n),
    ("promotion / demotion", lambda n: "promote" in n or "demote" in n or "migrate" in n),
    ("swap", lambda n: "swp" in n or "swap" in n),
    ("CPU", lambda n: "cpu" in n),
]


def fig_counters(series: dict, run_s: float):
    groups = []
    for title, match in _COUNTER_GROUPS:
        names = [n for n in series if match(n)]
        if names:
            groups.append((title, names))
    if not groups:
        return None, "Fig. 9: the recording has no system counters (counters.otr missing)."
    fig = make_subplots(rows=len(groups), cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=[t for t, _ in groups])
    for row, (title, names) in enumerate(groups, start=1):
        units = set()
        for name in names:
            t, v, unit = series[name]
            if timeline.is_cumulative(name) and len(v) > 1:
                t, v = t[1:], np.diff(v)
                unit = f"{unit}/interval"
            if unit == "bytes":
                v, unit = v / 2**20, "MiB"
            units.add(unit or "value")
            fig.add_trace(go.Scatter(x=t, y=v, mode="lines", name=name,
                                     legendgroup=title, hovertemplate=f"{name}: %{{y:.4g}} "
                                     f"{unit} at %{{x:.2f}} s<extra></extra>"), row=row, col=1)
        fig.update_yaxes(title_text=f"{title} ({', '.join(sorted(units))})", row=row, col=1)
    _time_axis(fig, run_s, row=len(groups), col=1)
    fig.update_xaxes(range=[0, max(run_s, 1e-3)])
    return _layout(fig, "Fig. 9 - system counters over the whole run", 250 * len(groups)), None


def fig_promotions(trace, series: dict, run_s: float, sampler: str):
    """Fig. 10: promotions per interval vs fast-tier samples per interval, with correlation."""
    names = [n for n in series if "pgpromote_success" in n]
    if not names:
        return None, "Fig. 10: no promotion counter (vmstat.pgpromote_success) was recorded.", None
    level = column(trace.samples, "level", np.uint8)
    if not (level > 0).any():
        return None, (f"Fig. 10: the {sampler} sampler reports no memory level, so fast-tier "
                      f"samples cannot be told apart."), None
    t, v, _ = series[names[0]]
    if len(t) < 3:
        return None, "Fig. 10: fewer than three counter readings.", None
    promoted = np.diff(v)
    st = (column(trace.samples, "time_ns", np.float64) - trace.start_ns) / 1e9
    fast = np.histogram(st[level_mask(level, FAST_LEVELS)], bins=t)[0]
    corr = None
    if promoted.std() > 0 and fast.std() > 0:
        corr = float(np.corrcoef(promoted, fast)[0, 1])
    text = "n/a" if corr is None else f"{corr:.2f}"
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, subplot_titles=[
        "fast-tier samples per counter interval",
        f"pages promoted per interval (Pearson r = {text})"])
    fig.add_trace(go.Scatter(x=t[1:], y=fast, mode="lines", line={"shape": "vh"},
                             name="fast-tier samples"), row=1, col=1)
    fig.add_trace(go.Scatter(x=t[1:], y=promoted, mode="lines", line={"shape": "vh"},
                             name="promoted pages"), row=2, col=1)
    fig.update_yaxes(title_text="samples (count)", row=1, col=1)
    fig.update_yaxes(title_text="promoted (pages)", row=2, col=1)
    _time_axis(fig, run_s, row=2, col=1)
    return _layout(fig, "Fig. 10 - promotions and fast-tier samples", 500), None, corr


def fig_object_heatmap(trace, objects: pa.Table, mapped: np.ndarray, hot: list[int],
                       run_s: float, kind: str, page_shift: int, sampler: str):
    """Objects (rows: the hottest, up to HEATMAP_OBJECTS) x time: what each object took over
    the run. fault: touch rate from the scan windows (blank: not watched); samples: samples
    (x weight) per bin; exact: not available (counts carry no time)."""
    rows = hot[:HEATMAP_OBJECTS]
    if not rows:
        return None, "Object x time heatmap: no object has accesses."
    if kind == "exact":
        return None, ("Object x time heatmap: exact counts are per object and context over "
                      "the whole run, without times; see the contexts table.")
    edges = np.linspace(0, max(run_s, 1e-3), HEATMAP_BINS + 1)
    labels = objects.column("label").to_pylist()
    names = [f"object {o}" for o in rows]
    if kind == "fault":
        rates = timeline.window_rates(trace, page_shift)
        if rates is None:
            return None, (f"Object x time heatmap: {sampler} samples follow the scanner, and this "
                          "recording has no scan windows to estimate touch rates from.")
        row_index = {o: i for i, o in enumerate(rows)}
        row_of = np.array([row_index.get(int(o), -1) for o in rates["object"]], dtype=np.int64)
        grid = timeline.window_grid(rates, np.arange(len(rows)), edges, row_of)
        what, unit = "first-touch rate in the scan windows (blank: not watched)", \
            "touches /<br>page / s"
    else:
        t = (column(trace.samples, "time_ns", np.float64) - trace.start_ns) / 1e9
        weight = column(trace.samples, "weight", np.float64)
        weight[weight == 0] = 1.0
        grid = np.zeros((len(rows), HEATMAP_BINS))
        for i, o in enumerate(rows):
            sel = mapped == o
            grid[i] = np.histogram(t[sel], bins=edges, weights=weight[sel])[0]
        what, unit = "sampled accesses (sample weights) per bin", "accesses"
    fig = go.Figure(go.Heatmap(
        x=(edges[:-1] + edges[1:]) / 2, y=names, z=grid, colorscale="Viridis",
        zmin=0, zmax=_color_top(grid),
        customdata=np.array([[labels[o] or ""] * HEATMAP_BINS for o in rows], dtype=object),
        colorbar={"title": {"text": unit}},
        hovertemplate="%{y} at %{x:.3f} s: %{z:.3g}<br>%{customdata}<extra></extra>"))
    _time_axis(fig, run_s)
    fig.update_yaxes(title_text="object (row of objects.csv)", autorange="reversed")
    return _layout(fig, f"Objects x time - {what}", 160 + 22 * len(rows)), None


def _color_top(grid: np.ndarray) -> float:
    """Top of a heatmap's color scale: the 95th percentile of its values, so that one hot
    cell does not flatten the rest (hover still shows every cell's value)."""
    values = grid[np.isfinite(grid) & (grid > 0)]
    return float(np.percentile(values, 95)) if len(values) else 1.0


def to_json(fig: go.Figure) -> str:
    """The figure as JSON that is safe inside an inline <script> (no "</")."""
    return fig.to_json().replace("</", "<\\/")
