"""The report: files written, figures labelled, the page renders in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from objtier.cli import main
from objtier.report.build import build_report
from objtier.trace import open_trace

TRACES = Path(__file__).resolve().parent.parent / "fixtures" / "traces"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.parametrize("name", ["basic.otr", "fault.otr"])
def test_every_figure_has_title_axis_labels_and_units(name, tmp_path):
    report = build_report(open_trace(TRACES / name), tmp_path, labels=False, render=False)
    drawn = [fig for _, fig, _ in report.figures if fig is not None]
    assert len(drawn) >= 4
    for fig in drawn:
        for ax in fig.axes:
            assert ax.get_title(), fig
            assert ax.get_xlabel() and ax.get_ylabel()
            assert re.search(r"\(.+\)", ax.get_ylabel()), ax.get_ylabel()
    notes = [note for _, fig, note in report.figures if fig is None]
    if name == "fault.otr":   # no level: Fig. 3 and Fig. 10 explain themselves in one line
        assert any(n.startswith("Fig. 3") for n in notes)
        assert any(n.startswith("Fig. 9") for n in notes)  # no counters file either
        assert "levels" not in report.tables and report.notes
    else:
        assert {"levels", "tiers", "latency_split", "cost_by_tlb"} <= set(report.tables)


def test_report_command_writes_page_and_tables(tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["report", str(TRACES / "basic.otr"), "-o", str(out), "--no-symbols"]) == 0
    printed = capsys.readouterr().out
    assert f"report: {out / 'index.html'}" in printed
    page = (out / "index.html").read_text()
    assert "3 samples (15.8%) fall outside every tracked object" in page
    assert "http://" not in page and "https://" not in page and "<script" not in page
    objects = pq.read_table(out / "objects.parquet")
    assert objects.column("samples").to_pylist() == [10, 2, 2, 2]
    assert (out / "objects.csv").read_text().startswith('"object","pid"')


def test_objects_command_and_bad_input(tmp_path, capsys):
    assert main(["objects", str(TRACES / "fault.otr"), "--sort", "size", "--no-symbols"]) == 0
    assert "3 outside every tracked object" in capsys.readouterr().out
    assert main(["objects", str(tmp_path / "missing.otr")]) == 3
    assert "objtier objects:" in capsys.readouterr().err


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/setup.sh)")
def test_page_opens_in_headless_chromium_without_errors(tmp_path, artifacts_dir):
    out = tmp_path / "rep"
    build_report(open_trace(TRACES / "basic.otr"), out, labels=False)
    page = out / "index.html"
    # A copy of the page with a recording script first in <head>: window.onerror and broken
    # images are written into a <div id="probe"> that --dump-dom then shows.
    probe = out / "probe.html"
    recorder = (
        "<script>var probeErrors=[];window.addEventListener('error',function(e){"
        "probeErrors.push(String(e.message||'resource: '+(e.target&&e.target.tagName)));},true);"
        "window.addEventListener('load',function(){var bad=0;for(var i=0;i<document.images.length;"
        "i++){if(!document.images[i].naturalWidth)bad++;}var d=document.createElement('div');"
        "d.id='probe';d.setAttribute('data-images',document.images.length);"
        "d.setAttribute('data-broken',bad);d.setAttribute('data-errors',probeErrors.length);"
        "d.textContent=probeErrors.join(' | ');document.body.appendChild(d);});</script>")
    probe.write_text(page.read_text().replace("<head>", "<head>" + recorder, 1))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([CHROMIUM, *flags, "--virtual-time-budget=5000", "--dump-dom",
                          probe.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    match = re.search(r'<div id="probe" data-images="(\d+)" data-broken="(\d+)" '
                      r'data-errors="(\d+)">([^<]*)</div>', dom.stdout)
    assert match, dom.stdout[-2000:]
    assert match.group(3) == "0", match.group(4)
    assert int(match.group(1)) >= 6 and match.group(2) == "0"
    shot = artifacts_dir / "report.png"
    run = subprocess.run([CHROMIUM, *flags, "--window-size=1200,3000",
                          f"--screenshot={shot}", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and shot.exists() and shot.stat().st_size > 10_000
