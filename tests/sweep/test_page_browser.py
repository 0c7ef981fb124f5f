"""sweep.html in headless Chromium: a real calibration (bandit knob, 1 and 2 threads) draws its
bandwidth and latency heatmaps with the cells of calibration.json; a sweep with that
calibration draws the FoM-vs-level figure (medians of sweep.json, the 90/75/50 % lines) next
to them; a per-object page draws the ratios and the curve. No script error, every figure's SVG
is in the DOM, and nothing is loaded from the network."""

from __future__ import annotations

import html as html_text
import json
import re
import subprocess
import sys

import pytest

from objtier.native import binary
from tests.browser import CHROMIUM, chromium_flags, dump_dom

pytestmark = pytest.mark.skipif(CHROMIUM is None,
                                reason="chromium is not installed (scripts/setup.sh)")

# First in <head>: records every error; after load (and Plotly's drawing) writes what the page
# holds into <div id="probe"> as JSON, which --dump-dom prints.
PROBE = """<script>
var probeErrors = [];
window.addEventListener("error", function (e) {
  probeErrors.push(String(e.message || ("resource: " + (e.target && e.target.tagName))));
}, true);
window.addEventListener("load", function () { setTimeout(function () {
  var out = {plots: {}};
  try {
    document.querySelectorAll(".plot").forEach(function (p) {
      out.plots[p.id] = {
        drawn: p.classList.contains("js-plotly-plot") && !!p.querySelector("svg.main-svg"),
        traces: p.data.map(function (t) {
          return {type: t.type || "scatter", name: t.name || "", x: t.x, y: t.y,
                  z: t.z || null}; }),
        shapes: (p.layout.shapes || []).length,
        annotations: (p.layout.annotations || []).map(function (a) { return a.text; })};
    });
    out.remote = Array.prototype.filter.call(document.querySelectorAll("script[src],link[href]"),
      function () { return true; }).length;
  } catch (err) { probeErrors.push("probe: " + err); }
  out.errors = probeErrors;
  var d = document.createElement("div");
  d.id = "probe";
  d.textContent = JSON.stringify(out);
  document.body.appendChild(d);
}, 500); });
</script>"""


def objtier(*args, timeout=240):
    return subprocess.run([sys.executable, "-m", "objtier", *args], capture_output=True,
                          text=True, timeout=timeout)


def probe(page, tmp_path, artifacts_dir=None):
    """What the page holds once Chromium has drawn it (see PROBE)."""
    html = page.read_text()
    assert "<script src" not in html and "https://" not in html.split("<script>")[0]
    shown = page.with_name("probe.html")
    shown.write_text(html.replace("<head>", "<head>" + PROBE, 1))
    flags = chromium_flags(tmp_path / "profile")
    dom = dump_dom(shown, tmp_path / "profile")
    assert dom.returncode == 0, dom.stderr[-2000:]
    match = re.search(r'<div id="probe">([^<]*)</div>', dom.stdout)
    assert match, dom.stdout[-2000:]
    result = json.loads(html_text.unescape(match.group(1)))
    assert result["errors"] == [], result["errors"]
    assert result["remote"] == 0
    assert result["plots"] and all(p["drawn"] for p in result["plots"].values())
    if artifacts_dir is not None:
        shot = artifacts_dir / f"sweep-{page.parent.name}.png"
        subprocess.run([CHROMIUM, *flags, "--window-size=1200,2400",
                        "--virtual-time-budget=15000", f"--screenshot={shot}", page.as_uri()],
                       capture_output=True, text=True, timeout=180)
    return result["plots"]


@pytest.mark.heavy
def test_calibration_heatmaps_and_fom_figure(tmp_path, artifacts_dir):
    cal = tmp_path / "cal"
    run = objtier("sweep", "--calibrate", "--knob", "bandit=0,100", "--threads", "1,2",
                  "--repeat", "1", "--bandit-size", "16M", "-q", "-o", str(cal))
    assert run.returncode == 0, run.stderr
    rows = json.loads((cal / "calibration.json").read_text())["rows"]
    page = cal / "sweep.html"
    assert oct(page.stat().st_mode & 0o777) == "0o600"
    plots = probe(page, tmp_path, artifacts_dir)
    assert set(plots) == {"plot-bandwidth", "plot-latency"}
    for name, key in (("plot-bandwidth", "gbps"), ("plot-latency", "ns")):
        (heat,) = plots[name]["traces"]
        assert heat["type"] == "heatmap" and heat["y"] == ["1", "2"]
        want = {(str(r["threads"]), r["label"]): r[key] for r in rows}
        got = {(t, label): heat["z"][i][j] for i, t in enumerate(heat["y"])
               for j, label in enumerate(heat["x"])}
        assert got == pytest.approx(want)

    out = tmp_path / "sweep"
    run = objtier("sweep", "--knob", "bandit=0,100", "--repeat", "2", "--bandit-size", "16M",
                  "--calibration", str(cal / "calibration.json"), "-q", "-o", str(out), "--",
                  str(binary("stream")), "-s", "200000", "-n", "3", "-t", "1")
    assert run.returncode == 0, run.stderr
    assert "sweep.html" in run.stdout
    doc = json.loads((out / "sweep.json").read_text())
    plots = probe(out / "sweep.html", tmp_path, artifacts_dir)
    assert set(plots) == {"plot-fom", "plot-bandwidth", "plot-latency"}
    fom = plots["plot-fom"]
    median = next(t for t in fom["traces"] if t["name"].startswith("median"))
    assert median["x"] == [lv["label"] for lv in doc["levels"]]
    assert median["y"] == pytest.approx([lv["median"] for lv in doc["levels"]])
    runs = next(t for t in fom["traces"] if t["name"] == "run")
    assert sorted(runs["y"]) == pytest.approx(sorted(v for lv in doc["levels"]
                                                     for v in lv["fom"]))
    assert fom["shapes"] == 3                        # the 90, 75 and 50 % lines
    for percent, level in doc["thresholds"].items():
        label = doc["threshold_status"][percent]["label"]     # a level, not reached, or
        if level is not None:                                 # not resolved (noise)
            assert label == next(lv["label"] for lv in doc["levels"] if lv["level"] == level)
        assert f"{percent}%: T{percent} = {label}" in fom["annotations"]


def test_per_object_page(tmp_path):
    from objtier.sweep.page import write_sweep_page
    from objtier.sweep.perobject import Arm, cumulative_curve, ratios

    arms = [Arm(0, "all fast", (), foms=[10.0, 11.0, 9.0]),
            Arm(1, "main > points", (0,), size=32 << 20, share=0.9, foms=[4.0, 5.0, 4.5]),
            Arm(2, "main > labels", (1,), size=1 << 20, share=0.1, foms=[9.0, 10.0, 9.5])]
    objects = ratios(arms, True)
    doc = {"knob": "per-object", "kind": "real", "command": ["kmeans"],
           "all_fast": {"fom": arms[0].foms}, "objects": objects,
           "curve": cumulative_curve(objects, 34 << 20)}
    out = tmp_path / "po"
    out.mkdir()
    plots = probe(write_sweep_page(out, perobject=doc), tmp_path)
    assert set(plots) == {"plot-objects", "plot-curve"}
    (bars,) = plots["plot-objects"]["traces"]
    assert bars["x"] == ["main > points", "main > labels"]
    assert bars["y"] == pytest.approx([r["median_ratio"] for r in objects])
    (curve,) = plots["plot-curve"]["traces"]
    assert curve["y"] == pytest.approx([p["predicted_fom"] for p in doc["curve"]])
    # with measured pairs: their ratios in a third figure
    doc["pairs"] = [{"objects": ["f <- main > points", "main > labels"], "median_ratio": 0.3},
                    {"objects": ["a", "b"], "median_ratio": None}]     # every run failed
    plots = probe(write_sweep_page(out, perobject=doc), tmp_path)
    assert set(plots) == {"plot-objects", "plot-pairs", "plot-curve"}
    (pairs,) = plots["plot-pairs"]["traces"]
    assert pairs["x"] == ["main > points + main > labels"] and pairs["y"] == [0.3]
    # a timed-out arm is drawn as its bound, a killed one as a mark at 0, both labelled
    arms[0].statuses, arms[0].walls = ["ok"] * 3, [0.5, 0.5, 0.5]
    arms += [Arm(3, "main > grid", (2,), size=8 << 20, foms=[None, None],
                 statuses=["timeout", "timeout"], walls=[10.0, 10.0]),
             Arm(4, "main > tmp", (3,), size=8 << 20, foms=[None], statuses=["OOM-killed"],
                 walls=[1.0])]
    doc.pop("pairs")
    doc["objects"] = ratios(arms, True)
    plots = probe(write_sweep_page(out, perobject=doc), tmp_path)
    traces = {t["name"]: t for t in plots["plot-objects"]["traces"]}
    assert set(traces) == {"measured", "timed out: ratio at most", "killed or failed: no ratio"}
    assert traces["timed out: ratio at most"]["x"] == ["main > grid"]
    assert traces["timed out: ratio at most"]["y"] == pytest.approx([0.05])     # <= 1/20
    assert traces["killed or failed: no ratio"]["x"] == ["main > tmp"]
    assert traces["measured"]["x"] == ["main > points", "main > labels"]
    page = (out / "sweep.html").read_text()
    assert "\\u2265 20\\u00d7 slower" in page       # the bar's label, in the figure's JSON

