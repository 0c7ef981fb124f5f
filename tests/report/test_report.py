"""The report: files written, figures labelled and spanning the run (the page in Chromium:
test_report_browser.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from objtier.cli import main
from objtier.report.build import build_report
from objtier.trace import open_trace

TRACES = Path(__file__).resolve().parent.parent / "fixtures" / "traces"


@pytest.mark.parametrize("name", ["basic.otr", "fault.otr"])
def test_every_figure_has_title_axis_labels_and_units(name, tmp_path):
    report = build_report(open_trace(TRACES / name), tmp_path, labels=False, render=False)
    drawn = [fig for _, fig, _ in report.figures if fig is not None]
    # fault.otr (format 1.0) has no scan windows: Figs. 4, 5 and 8 are withheld (below)
    assert len(drawn) >= (4 if name == "basic.otr" else 2)
    for fig in drawn:
        layout = fig.layout
        assert layout.title.text, fig
        axes = {k: v for k, v in layout.to_plotly_json().items()
                if re.fullmatch(r"[xy]axis\d*", k)}
        for key, axis in axes.items():   # every axis is titled; values carry their unit
            title = (axis.get("title") or {}).get("text", "")
            if key.startswith("y") or "time" in title:
                assert re.search(r"\(.+\)", title), (layout.title.text, key, title)
        assert any((a.get("title") or {}).get("text") for k, a in axes.items()
                   if k.startswith("x"))
        # wrapped, never cut: every line of a title fits its width
        assert all(len(line) <= 90 for line in layout.title.text.split("<br>"))
    notes = [note for _, fig, note in report.figures if fig is None]
    if name == "fault.otr":   # no level: Fig. 3 and Fig. 10 explain themselves in one line
        assert any(n.startswith("Fig. 3") for n in notes)
        assert any(n.startswith("Fig. 9") for n in notes)  # no counters file either
        assert "levels" not in report.tables and report.notes
        # a window sampler without windows cannot say how often a page was watched
        assert any(n.startswith("Fig. 4: the fault sampler") and "no scan windows" in n
                   for n in notes), notes
        assert any(n.startswith("Fig. 5: the fault sampler") for n in notes), notes
        assert "touches" not in report.tables and "reuse" not in report.tables
    else:
        assert {"levels", "tiers", "latency_split", "cost_by_tlb"} <= set(report.tables)


def test_time_axes_span_the_whole_run(tmp_path):
    from objtier.trace.columns import trace_end_ns

    trace = open_trace(TRACES / "basic.otr")
    report = build_report(trace, tmp_path, labels=False, render=False)
    run_s = (trace_end_ns(trace) - trace.start_ns) / 1e9
    timed = [fig for name, fig, _ in report.figures
             if fig is not None and name in ("timeline", "counters", "access_pattern")]
    assert timed
    for fig in timed:
        ranges = [fig.layout[k].range for k in fig.layout if k.startswith("xaxis")
                  and fig.layout[k].range is not None]
        assert ranges and all(r[0] == 0 and r[1] >= run_s * 0.999 for r in ranges), ranges


def test_report_command_writes_page_and_tables(tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["report", str(TRACES / "basic.otr"), "-o", str(out), "--no-symbols"]) == 0
    printed = capsys.readouterr().out
    assert f"report: {out / 'index.html'}" in printed
    page = (out / "index.html").read_text()
    assert "3 samples (15.8%) fall outside every tracked object" in page
    # one self-contained page: scripts inline, nothing loaded from elsewhere
    assert not re.search(r"<(script|img|link|iframe)[^>]+(src|href)=", page)
    assert page.count("Plotly.newPlot(") >= 4 and 'id="objects"' in page
    objects = pq.read_table(out / "objects.parquet")
    assert objects.column("samples").to_pylist() == [10, 2, 2, 2]
    assert (out / "objects.csv").read_text().startswith('"object","pid"')


def test_objects_command_and_bad_input(tmp_path, capsys):
    assert main(["objects", str(TRACES / "fault.otr"), "--sort", "size", "--no-symbols"]) == 0
    assert "3 outside every tracked object" in capsys.readouterr().out
    assert main(["objects", str(tmp_path / "missing.otr")]) == 3
    assert "objtier objects:" in capsys.readouterr().err


