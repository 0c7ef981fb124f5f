"""`sweep.html`: the interactive page of a sweep directory (Plotly, self-contained, offline).

Figures, each present when its data is:
  fom         the FoM-vs-level figure (the seed's Fig. 7): every run as a dot (a failed run as
              a red x at 0), the median per level with its 95 % bootstrap interval, and the
              90/75/50 % lines of the baseline labelled with their thresholds; one panel per
              --threads series
  bandwidth   calibration heatmap: STREAM GB/s over thread count x level (seed Figs. 2, 5)
  latency     calibration heatmap: ptrchase ns per dependent load over thread count x level
              (seed Figs. 3, 6)
  objects     per object (--per-object): FoM ratio with only that object slow, with the
              bootstrap interval of its median FoM scaled by the all-fast median
  pairs       per object with --pairs: FoM ratio with a pair of objects slow
  curve       per object: the model's FoM by fraction of bytes fast (estimated)

Levels are placed in run order (least to most throttled) as categories; the page inlines
plotly.js once and loads nothing from the network. Written 0600 with the other outputs.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from objtier.sweep.output import threshold_text

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
LINES = {"90": "#2ca02c", "75": "#ff7f0e", "50": "#d62728"}
PAGE_NAME = "sweep.html"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def _layout(fig: go.Figure, title: str, height: int = 420) -> go.Figure:
    fig.update_layout(title={"text": title, "x": 0.01, "xanchor": "left"}, height=height,
                      template="plotly_white", margin={"t": 70, "l": 70, "r": 20, "b": 90},
                      legend={"font": {"size": 10}})
    return fig


def _ratio_text(level: dict[str, Any]) -> str:
    """Hover text: the ratio's 95 % interval and which lines it resolves."""
    low, high = (level.get("ratio_ci") or [None, None])[:2]
    if _number(low) is None or _number(high) is None:
        return ""
    sides = level.get("sides") or {}
    noise = [f"T{p}" for p, side in sides.items() if side == "noise"]
    return (f"{100 * low:.0f}..{100 * high:.0f}% of the baseline (95% CI)"
            + (f"; noise at the {', '.join(noise)} line(s)" if noise else ""))


def fom_figure(doc: dict[str, Any]) -> go.Figure:
    """The FoM-vs-level figure of a sweep.json document."""
    series = doc["series"]
    fom = doc.get("fom") or {}
    higher = fom.get("higher_is_better", True)
    unit = fom.get("unit") or ""
    titles = [(f"{s['threads']} threads" if s.get("threads") else doc["knob"]) for s in series]
    fig = make_subplots(rows=1, cols=len(series), subplot_titles=titles, shared_yaxes=True)
    for col, s in enumerate(series, 1):
        levels = [lv for lv in s["levels"] if lv["fom"]]      # --bisect: only measured levels
        labels = [lv["label"] for lv in levels]
        xs, ys, failed = [], [], []
        for lv in levels:
            for value in lv["fom"]:
                (xs if value is not None else failed).append(lv["label"])
                if value is not None:
                    ys.append(value)
        medians = [_number(lv["median"]) for lv in levels]
        low = [_number((lv.get("ci") or [None, None])[0]) for lv in levels]
        high = [_number((lv.get("ci") or [None, None])[1]) for lv in levels]
        fig.add_trace(go.Scatter(
            x=labels, y=medians, mode="lines+markers", name="median (95% CI)",
            legendgroup="median", showlegend=col == 1, line={"color": "#4c72b0"},
            error_y={"type": "data", "symmetric": False,
                     "array": [max(0.0, h - m) if h is not None and m is not None else 0.0
                               for h, m in zip(high, medians)],
                     "arrayminus": [max(0.0, m - lo) if lo is not None and m is not None
                                    else 0.0 for lo, m in zip(low, medians)]},
            customdata=[[lv["kind"], lv["applied"], _ratio_text(lv)] for lv in levels],
            hovertemplate="%{x} (%{customdata[0]}, applied %{customdata[1]}): median "
                          "%{y:.4g}<br>%{customdata[2]}<extra></extra>"), row=1, col=col)
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", name="run",
                                 marker={"color": "#555555", "size": 6, "opacity": 0.6},
                                 showlegend=col == 1, legendgroup="run",
                                 hovertemplate="%{x}: %{y:.4g}<extra>run</extra>"),
                      row=1, col=col)
        if failed:
            fig.add_trace(go.Scatter(x=failed, y=[0] * len(failed), mode="markers",
                                     name="failed run", legendgroup="failed",
                                     showlegend=col == 1,
                                     marker={"color": "#d62728", "symbol": "x", "size": 8},
                                     hovertemplate="%{x}: failed<extra></extra>"),
                          row=1, col=col)
        baseline = _number(s.get("baseline"))
        if baseline:
            for percent, color in LINES.items():
                line = baseline * int(percent) / 100 if higher else baseline * 100 / int(percent)
                fig.add_hline(y=line, line={"color": color, "dash": "dash", "width": 1},
                              annotation_text=f"{percent}%: T{percent} = "
                              f"{threshold_text(s, percent)}",
                              annotation_position="top right", annotation_font_size=10,
                              row=1, col=col)
        fig.update_xaxes(type="category", categoryorder="array",
                         categoryarray=[lv["label"] for lv in s["levels"]],
                         title_text=f"{doc['knob']} level", row=1, col=col)
    fig.update_yaxes(title_text=f"FoM ({unit})" if unit else "FoM", rangemode="tozero",
                     row=1, col=1)
    kinds = sorted({lv["kind"] for s in series for lv in s["levels"]})
    return _layout(fig, f"FoM by {doc['knob']} level ({', '.join(kinds)}), "
                   f"{'higher' if higher else 'lower'} is better")


def calibration_figures(rows: list[dict[str, Any]], knob: str = "", kind: str = ""
                        ) -> list[tuple[str, go.Figure]]:
    """The bandwidth and latency heatmaps over thread count (rows) x level (columns)."""
    if not rows:
        return []
    labels = list(dict.fromkeys(r["label"] for r in rows))          # in run order
    threads = sorted({int(r["threads"]) for r in rows})
    out = []
    for name, key, what, scale in (("bandwidth", "gbps", "STREAM bandwidth (GB/s)", "Viridis"),
                                   ("latency", "ns", "ptrchase latency per dependent load (ns)",
                                    "Viridis_r")):
        cell = {(int(r["threads"]), r["label"]): _number(r[key]) for r in rows}
        z = [[cell.get((t, label)) for label in labels] for t in threads]
        fig = go.Figure(go.Heatmap(
            x=labels, y=[str(t) for t in threads], z=z, colorscale=scale,
            texttemplate="%{z:.3g}", colorbar={"title": {"text": key}},
            hovertemplate="%{y} threads, level %{x}: %{z:.4g} " + key + "<extra></extra>"))
        fig.update_xaxes(type="category", title_text=f"{knob} level" if knob else "level")
        fig.update_yaxes(type="category", title_text="threads")
        out.append((name, _layout(fig, f"Calibration - {what} by threads x level"
                                  + (f" ({knob}, {kind})" if knob else ""),
                                  height=160 + 60 * len(threads))))
    return out


def _bound_traces(rows: list[dict[str, Any]], label) -> list[go.BaseTraceType]:
    """Arms that are no measurement (perobject.arm_result): a bound as a hatched bar at the
    ratio's bound, labelled "≥ N× slower"; a killed or failed arm as a red x at 0, labelled."""
    traces = []
    bound = [r for r in rows if r.get("result") == "bound"]
    if bound:
        traces.append(go.Bar(
            x=[label(r) for r in bound], y=[float(r["ratio_at_most"]) for r in bound],
            name="timed out: ratio at most", marker={"color": "#b0b0b0",
                                                   "pattern": {"shape": "/"}},
            text=[r["result_text"] for r in bound], textposition="outside",
            hovertemplate="%{x}<br>%{text} (wall time; timed out): ratio at most %{y:.3g}"
                          "<extra></extra>"))
    lost = [r for r in rows if r.get("result") in ("killed", "failed")]
    if lost:
        traces.append(go.Scatter(
            x=[label(r) for r in lost], y=[0.0] * len(lost), mode="markers+text",
            name="killed or failed: no ratio", text=[r["result_text"] for r in lost],
            textposition="top center", marker={"color": "#d62728", "symbol": "x", "size": 10},
            hovertemplate="%{x}<br>%{text}<extra></extra>"))
    return traces


def perobject_figures(doc: dict[str, Any]) -> list[tuple[str, go.Figure]]:
    """The per-object ratios (measured; bounds and killed arms marked as such) and the
    cumulative curve (estimated)."""
    every = doc.get("objects") or []
    rows = [r for r in every if _number(r.get("median_ratio")) is not None]
    others = _bound_traces(every, lambda r: r["object"])
    out = []
    if rows or others:
        base = [v for v in (doc.get("all_fast") or {}).get("fom") or [] if v is not None]
        import numpy as np

        median = float(np.median(base)) if base else None
        ratio = [float(r["median_ratio"]) for r in rows]
        ci = [r.get("ci") or [None, None] for r in rows]
        error = None
        if median:
            error = {"type": "data", "symmetric": False,
                     "array": [max(0.0, c[1] / median - v) if _number(c[1]) is not None else 0
                               for c, v in zip(ci, ratio)],
                     "arrayminus": [max(0.0, v - c[0] / median) if _number(c[0]) is not None
                                    else 0 for c, v in zip(ci, ratio)]}
        fig = go.Figure([go.Bar(
            x=[r["object"] for r in rows], y=ratio, error_y=error, name="measured",
            customdata=[[r["size"] / 2**20, 100 * r.get("access_share", 0.0)] for r in rows],
            hovertemplate="%{x}<br>ratio %{y:.3f}, %{customdata[0]:.1f} MiB, "
                          "%{customdata[1]:.1f}% of accesses<extra></extra>")]
            if rows else [])
        for trace in others:
            fig.add_trace(trace)
        fig.add_hline(y=1.0, line={"color": "#555", "dash": "dot", "width": 1})
        fig.update_xaxes(title_text="object (only it slow), most sensitive first",
                         tickangle=30, type="category", categoryorder="array",
                         categoryarray=[r["object"] for r in every])
        fig.update_yaxes(title_text="median FoM / all-fast median FoM", rangemode="tozero")
        out.append(("objects", _layout(fig, "Per object: FoM with only that object slow "
                                       f"(real, {doc.get('tier') or 'swap'} tier)",
                                       height=460)))
    every_pair = doc.get("pairs") or []
    pairs = [r for r in every_pair if _number(r.get("median_ratio")) is not None]

    def pair_label(r):
        # the last frame of each label on the axis (the caller, which tells objects from one
        # allocation wrapper apart), the whole labels on hover
        return " + ".join(o.split(" <- ")[-1] for o in r["objects"])

    pair_others = _bound_traces(every_pair, pair_label)
    if pairs or pair_others:
        fig = go.Figure([go.Bar(
            x=[pair_label(r) for r in pairs], y=[float(r["median_ratio"]) for r in pairs],
            name="measured", text=[" + ".join(r["objects"]) for r in pairs],
            textposition="none",
            hovertemplate="%{text}<br>ratio %{y:.3f}<extra></extra>")] if pairs else [])
        for trace in pair_others:
            fig.add_trace(trace)
        fig.add_hline(y=1.0, line={"color": "#555", "dash": "dot", "width": 1})
        fig.update_xaxes(title_text="pair of objects (both slow, the rest fast)", tickangle=30)
        fig.update_yaxes(title_text="median FoM / all-fast median FoM", rangemode="tozero")
        out.append(("pairs", _layout(fig, "Per object: FoM with a pair of objects slow "
                                     f"(real, {doc.get('tier') or 'swap'} tier)",
                                     height=460)))
    curve = doc.get("curve") or []
    if curve:
        fig = go.Figure(go.Scatter(
            x=[100 * p["fast_fraction"] for p in curve], y=[p["predicted_fom"] for p in curve],
            mode="lines+markers", line={"shape": "hv"},   # whole objects: steps
            text=[(p["added"] or "(objects under 1 %)")
                  + (" - at most: a timed-out object is slow" if p.get("upper_bound") else "")
                  for p in curve],
            hovertemplate="%{x:.1f}% of bytes fast: %{y:.3f}<br>added %{text}<extra></extra>"))
        fig.update_xaxes(title_text="bytes on the fast tier (%)", range=[0, 100])
        fig.update_yaxes(title_text="predicted FoM / all fast", range=[0, 1.05])
        out.append(("curve", _layout(fig, "Per object: cumulative curve, objects made fast by "
                                     f"loss per byte (estimated, "
                                     f"{doc.get('model') or 'additive'} model)")))
    return out


def to_json(fig: go.Figure) -> str:
    """The figure as JSON that is safe inside an inline <script> (no "</")."""
    return fig.to_json().replace("</", "<\\/")


def render_page(title: str, figures: list[tuple[str, go.Figure]], notes: list[str],
                facts: list[str], files: list[str]) -> str:
    import jinja2
    import plotly.offline

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                             autoescape=jinja2.select_autoescape(["html", "j2"]))
    return env.get_template("sweep.html.j2").render(
        title=title, generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        figures=[{"name": name, "json": to_json(fig)} for name, fig in figures],
        notes=notes, facts=facts, files=files, plotly_js=plotly.offline.get_plotlyjs())


def _facts(doc: dict[str, Any]) -> list[str]:
    machine = doc.get("machine") or {}
    command = " ".join(str(c) for c in doc.get("command") or [])
    facts = [f"Command: {command}" if command else "",
             f"Machine: {machine.get('cpu_model', '?')}, {machine.get('cpus', '?')} CPUs, "
             f"kernel {machine.get('kernel', '?')}" if machine else "",
             f"{doc.get('tool_version', 'objtier ?')}"]
    return [f for f in facts if f]


def write_sweep_page(out: Path, doc: dict[str, Any] | None = None,
                     calibration: dict[str, Any] | None = None,
                     perobject: dict[str, Any] | None = None) -> Path:
    """Write out/sweep.html from whichever documents are given (sweep.json's content,
    calibration.json's, perobject.json's); returns its path."""
    from objtier.sweep.output import write_private

    figures: list[tuple[str, go.Figure]] = []
    notes: list[str] = []
    main = doc or perobject or calibration or {}
    if doc is not None and doc.get("series"):
        figures.append(("fom", fom_figure(doc)))
        notes.extend(doc.get("warnings") or [])
    if calibration is not None and calibration.get("knob") == "local":
        sizes = calibration.get("footprints") or {}
        notes.append("local calibration: effective bandwidth and latency with that share of "
                     "each workload's own footprint in memory and the rest on the swap tier"
                     + (" (footprints: " + ", ".join(f"{k} {v / 2**20:.0f} MiB"
                                                     for k, v in sizes.items() if v) + ")"
                        if sizes else "")
                     + "; a workload that fits the CPU caches measures the caches at 100 %.")
    if calibration is not None:
        figures.extend(calibration_figures(calibration.get("rows") or [],
                                           calibration.get("knob", ""),
                                           calibration.get("kind", "")))
    if perobject is not None:
        figures.extend(perobject_figures(perobject))
        notes.append(f"The cumulative curve is estimated "
                     f"({perobject.get('model') or 'additive'} model), not measured.")
        rows = (perobject.get("objects") or []) + (perobject.get("pairs") or [])
        bound = [r for r in rows if r.get("result") == "bound"]
        if bound:
            notes.append(f"{len(bound)} arm(s) ran into the timeout: their bars are bounds "
                         f"in wall time (≥ N× slower than all fast), not measurements; the "
                         f"curve's points with them slow are upper bounds.")
        lost = [r for r in rows if r.get("result") in ("killed", "failed")]
        if lost:
            notes.append(f"{len(lost)} arm(s) were killed or failed in most runs: no ratio, no "
                         f"bound.")
    title = (f"objtier sweep: {main.get('knob', '')}"
             + (" calibration" if calibration is not None and doc is None else ""))
    files = sorted(p.name for p in out.iterdir()
                   if p.is_file() and p.suffix in (".json", ".csv", ".parquet", ".png"))
    page = out / PAGE_NAME
    write_private(page, render_page(title, figures, notes, _facts(main), files).encode())
    return page


SWEEP_FILES = ("sweep.json", "calibration.json", "perobject.json")


def is_sweep_dir(path: Path) -> bool:
    """A directory `objtier sweep` wrote (not a recording: those hold .otr files)."""
    return path.is_dir() and any((path / name).is_file() for name in SWEEP_FILES)


def rewrite_sweep_page(out: Path) -> Path:
    """sweep.html again from the JSON documents in a sweep directory (`objtier report DIR`)."""
    import json

    from objtier.errors import UsageError

    docs = {}
    for name in SWEEP_FILES:
        path = out / name
        if path.is_file():
            try:
                docs[name] = json.loads(path.read_text())
                if not isinstance(docs[name], dict):
                    raise ValueError("not an object")
            except (OSError, ValueError) as error:
                raise UsageError(f"{path}: not a sweep output ({error})".splitlines()[0]) \
                    from None
    doc = docs.get("sweep.json")
    if doc is not None and not isinstance(doc.get("series"), list):
        raise UsageError(f"{out / 'sweep.json'}: not a sweep output (no series)")
    try:
        return write_sweep_page(out, doc, docs.get("calibration.json"),
                                docs.get("perobject.json"))
    except (KeyError, TypeError, ValueError, IndexError) as error:
        raise UsageError(f"{out}: a sweep output with missing or malformed fields "
                         f"({type(error).__name__}: {error})".splitlines()[0]) from None
