"""The interactive report in headless Chromium: the page loads without a script error, the
Plotly figures render (their SVG is in the DOM), the objects table sorts and filters, and a
context's whole stack is its allocation site's hover text."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from objtier.report.build import build_report
from objtier.trace import open_trace
from tests.browser import CHROMIUM, chromium_flags, dump_dom

TRACES = Path(__file__).resolve().parent.parent / "fixtures" / "traces"

# Put first in <head>: records every error, then ~after load (and Plotly's drawing) sorts the
# objects table by "size" twice and filters it, and writes what it saw into <div id="probe">,
# which --dump-dom prints.
PROBE = """<script>
var probeErrors = [];
window.addEventListener("error", function (e) {
  probeErrors.push(String(e.message || ("resource: " + (e.target && e.target.tagName))));
}, true);
window.addEventListener("load", function () { setTimeout(function () {
  var out = {};
  try {
    var plots = document.querySelectorAll(".plot");
    var drawn = 0;
    plots.forEach(function (p) {
      if (p.classList.contains("js-plotly-plot") && p.querySelector("svg.main-svg")) { drawn++; }
    });
    out.plots = plots.length; out.drawn = drawn;
    var table = document.getElementById("objects");
    var heads = table.tHead.rows[0].cells, col = -1;
    for (var i = 0; i < heads.length; i++) { if (heads[i].textContent === "size") { col = i; } }
    function column() {
      return Array.prototype.map.call(table.tBodies[0].rows, function (r) {
        return parseFloat(r.cells[col].getAttribute("data-v")); });
    }
    heads[col].click();
    out.desc = column().join(",");
    heads[col].click();
    out.asc = column().join(",");
    var filter = document.getElementById("objects-filter");
    filter.value = "no-such-text-anywhere";
    filter.dispatchEvent(new Event("input"));
    out.hidden = Array.prototype.filter.call(table.tBodies[0].rows, function (r) {
      return r.style.display === "none"; }).length;
    out.rows = table.tBodies[0].rows.length;
    out.sites = Array.prototype.map.call(document.querySelectorAll("td.site"), function (c) {
      return c.title; }).join("|");
  } catch (err) { probeErrors.push("probe: " + err); }
  var d = document.createElement("div");
  d.id = "probe";
  d.setAttribute("data-errors", probeErrors.length);
  Object.keys(out).forEach(function (k) { d.setAttribute("data-" + k, out[k]); });
  d.textContent = probeErrors.join(" | ");
  document.body.appendChild(d);
}, 500); });
</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/setup.sh)")
@pytest.mark.parametrize("name", ["basic.otr", "fault.otr"])
def test_page_is_interactive_in_headless_chromium(name, tmp_path, artifacts_dir):
    out = tmp_path / "rep"
    report = build_report(open_trace(TRACES / name), out, labels=False)
    drawn = sum(fig is not None for _, fig, _ in report.figures)
    page = out / "index.html"
    probe = out / "probe.html"
    probe.write_text(page.read_text().replace("<head>", "<head>" + PROBE, 1))
    flags = chromium_flags(tmp_path / "profile")
    dom = dump_dom(probe, tmp_path / "profile")
    assert dom.returncode == 0, dom.stderr[-2000:]
    match = re.search(r'<div id="probe"([^>]*)>([^<]*)</div>', dom.stdout)
    assert match, dom.stdout[-2000:]
    attrs = dict(re.findall(r'data-([a-z]+)="([^"]*)"', match.group(1)))
    assert attrs["errors"] == "0", match.group(2)
    assert int(attrs["plots"]) == drawn >= (4 if name == "basic.otr" else 2)
    assert attrs["drawn"] == attrs["plots"]          # every figure drew its SVG
    sizes = sorted(r["size"] for r in report.objects.to_pylist())
    assert [float(v) for v in attrs["asc"].split(",")] == sizes
    assert [float(v) for v in attrs["desc"].split(",")] == sizes[::-1]
    assert attrs["hidden"] == attrs["rows"] == str(report.objects.num_rows)
    # every allocation site's hover text is its object's whole stack
    assert sorted(attrs["sites"].split("|")) == sorted(report.stacks)
    shot = artifacts_dir / f"report-{name}.png"
    run = subprocess.run([CHROMIUM, *flags, "--window-size=1200,3000",
                          "--virtual-time-budget=15000", f"--screenshot={shot}", page.as_uri()],
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0 and shot.exists() and shot.stat().st_size > 10_000
