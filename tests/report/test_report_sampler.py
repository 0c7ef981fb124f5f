"""The report says what the recording supports: a real program recorded under the pageout
sampler. Watched too rarely (a low --rate), Fig. 4 is withheld with how often each page was
watched; watched often enough, it is the share of each page's watches in which the program
touched it, which tells a hot object from a cold one (sampled touches per page would show
every sampled page "touched once" or "3+", by the scanner's visits). The page names the
sampler as recorded, shows sizes and shares as the terminal does, and draws Figs. 4 and 5 as
a histogram and a CDF (checked in headless Chromium).

Needs root: without swap, record adds a temporary zram swap device for pageout (and removes
it)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from objtier.report.build import build_report
from objtier.trace import open_trace
from tests.browser import CHROMIUM, dump_dom

# hot: read page by page for the whole run; cold: written once at the start, then left alone.
HOT_COLD = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
int main(int argc, char **argv) {
    size_t n = (size_t)2 << 20;   /* 2 MiB each: 512 pages */
    double secs = atof(argv[1]);
    volatile char *hot = malloc(n), *cold = malloc(n);
    for (size_t i = 0; i < n; i += 4096) { hot[i] = 1; cold[i] = 2; }
    double t0 = now();
    unsigned long s = 0;
    while (now() - t0 < secs)
        for (size_t i = 0; i < n; i += 4096) s += hot[i];
    printf("%lu %d\n", s, cold[4096]);
    return 0;
}
"""

PAGES = 2 * 512   # pages of the two objects


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("sampler")


@pytest.fixture(scope="module")
def hot_cold(work):
    src = work / "hotcold.c"
    src.write_text(HOT_COLD)
    exe = work / "hotcold"
    subprocess.run(["gcc", "-std=gnu11", "-O1", "-g", "-o", str(exe), str(src)], check=True)
    return exe


def record(exe, out, rate: int, overhead: str = "3"):
    """The program recorded for 1 s under the pageout sampler at `rate` pages/s, within
    `overhead` % of its CPU time (record's default; "0": the rate as given)."""
    from objtier import native
    from objtier.errors import EnvironmentProblem

    try:
        native.runtime_library()
    except EnvironmentProblem as error:
        pytest.skip(f"needs the built runtime: {error}")
    run = subprocess.run([sys.executable, "-m", "objtier", "record", "-q", "-o", str(out),
                          "--sampler", "pageout", "--rate", str(rate),
                          "--overhead", overhead,
                          "--counters-interval", "0", "--", str(exe), "1.0"],
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr
    return out


@pytest.fixture(scope="module")
def watched_often(hot_cold, work):
    """4000 pages/s for 1 s over 1024 pages: each page watched about 4 times. The rate as
    given: the overhead bound lowered it 8x when the sampler thread took 29 ms of the 1 s
    run, and the tests are of the report at a known rate."""
    return record(hot_cold, work / "high.otr", rate=4000, overhead="0")


def note_of(report, name):
    """The line the page shows instead of figure `name` ("" when it was drawn)."""
    return next((note for n, fig, note in report.figures if n == name and fig is None), "")


@pytest.mark.root
def test_rare_watching_withholds_touches_per_page_and_names_pageout(hot_cold, tmp_path):
    # 150 pages/s for 1 s over 1024 pages: each page watched about 0.1 times (93-136 pages
    # armed in five runs; at 50 pages/s the first 16-page window, on the cold object, was
    # often the only one, and no sample came)
    trace = open_trace(record(hot_cold, tmp_path / "low.otr", rate=150))
    report = build_report(trace, tmp_path / "rep", labels=False)
    note = note_of(report, "touches")
    match = re.search(r"each page was watched ([0-9.e-]+) times on average", note)
    assert match and 0 < float(match.group(1)) < 0.2, note
    assert "pageout sampler" in note and "--rate" in note, note
    assert "touches" not in report.tables
    page = report.index_html.read_text()
    assert 'id="sampler">pageout<' in page
    assert "estimated touches (pageout sampler)" in page
    assert "fault sampler" not in page and "fault/trace" not in page
    # the objects table as the terminal shows it: 2.0 MiB, shares in %, no e-notation
    table = page[page.index('<table id="objects"'):page.index("</table>", page.index(
        '<table id="objects"'))]
    cells = re.findall(r'<td data-v="[^"]*">([^<]*)</td>', table)
    assert cells.count("2.0 MiB") == 2, cells
    assert any(re.fullmatch(r"\d+\.\d%", c) for c in cells), cells
    assert not any(re.fullmatch(r"-?\d(\.\d+)?e[+-]\d+", c) for c in cells), cells
    assert "2097152<" not in table


@pytest.mark.root
def test_enough_watching_tells_the_hot_object_from_the_cold(watched_often, tmp_path):
    trace = open_trace(watched_often)
    report = build_report(trace, tmp_path / "rep", labels=False, render=False)
    assert not note_of(report, "touches")
    rows = report.tables["touches"].to_pylist()   # touches.csv: the histogram Fig. 4 draws
    assert sum(r["pages"] for r in rows) >= PAGES
    never = rows[0]
    assert never["bin"] == "0 %"
    # the cold object's 512 pages were watched and never touched: half the pages at 0 %
    assert 0.45 <= never["share"] <= 0.55, rows
    # the hot object's pages were touched in most of their watches
    often = sum(r["share"] for r in rows[1:] if r["lo"] >= 0.5)
    assert often >= 0.4, rows
    fig = next(fig for n, fig, _ in report.figures if n == "touches")
    assert {t.type for t in fig.data} == {"bar", "scatter"}   # histogram and CDF
    assert "estimated" in fig.layout.title.text


PROBE = """<script>
window.addEventListener("load", function () { setTimeout(function () {
  var out = {};
  ["touches", "reuse"].forEach(function (name) {
    var div = document.getElementById("plot-" + name);
    if (!div) { out[name] = "missing"; return; }
    var bars = div.querySelectorAll(".barlayer .trace path").length;
    var lines = div.querySelectorAll(".scatterlayer .trace path.js-line").length;
    var kinds = (div.data || []).map(function (t) { return t.type + ":" + t.name; });
    out[name] = bars + "/" + lines + "/" + kinds.join(",");
  });
  out.sampler = document.getElementById("sampler").textContent;
  var d = document.createElement("div");
  d.id = "probe";
  Object.keys(out).forEach(function (k) { d.setAttribute("data-" + k, out[k]); });
  document.body.appendChild(d);
}, 500); });
</script>"""


@pytest.mark.root
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/setup.sh)")
def test_touches_and_reuse_are_histograms_and_cdfs_in_chromium(watched_often, tmp_path):
    trace = open_trace(watched_often)
    out = tmp_path / "rep"
    report = build_report(trace, out, labels=False)
    probe = out / "probe.html"
    probe.write_text(report.index_html.read_text().replace("<head>", "<head>" + PROBE, 1))
    dom = dump_dom(probe, tmp_path / "profile")
    assert dom.returncode == 0, dom.stderr[-2000:]
    match = re.search(r'<div id="probe"([^>]*)>', dom.stdout)
    assert match, dom.stdout[-2000:]
    attrs = dict(re.findall(r'data-([a-z]+)="([^"]*)"', match.group(1)))
    assert attrs["sampler"] == "pageout"
    for name in ("touches", "reuse"):
        bars, lines, kinds = attrs[name].split("/", 2)
        assert int(bars) >= 2 and int(lines) == 1, (name, attrs[name])   # drawn in the SVG
        assert kinds == "bar:histogram,scatter:CDF", (name, kinds)
