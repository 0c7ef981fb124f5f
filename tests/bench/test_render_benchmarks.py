"""docs/benchmarks.md is rendered from the results files in bench/results/ (objtier.bench_results,
bench/render_benchmarks.py): a page from real results files, a bad file refused in one line, and
the committed page equal to what its files give."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from objtier import bench_results

REPO = Path(__file__).resolve().parents[2]
RENDER = REPO / "bench" / "render_benchmarks.py"
#: a committed result whose raw runs were kept (the third-party suite, 2026-12-03)
KEPT = bench_results.RESULTS_DIR / "compare_suite-2026-12-03-suite-1203e.json"


def table_rows(page: str) -> dict[str, list[list[str]]]:
    """section heading -> its table's rows (cells), header and rule left out."""
    sections: dict[str, list[list[str]]] = {}
    current = None
    for line in page.splitlines():
        if line.startswith("## "):
            current = line[3:]
            sections[current] = []
        elif current and line.startswith("| ") and not line.startswith("| measurement |"):
            sections[current].append([c.strip() for c in line.strip("|").split(" | ")])
    return sections


@pytest.fixture(scope="module")
def two_results(tmp_path_factory) -> Path:
    """A results dir with a file a benchmark wrote here and now (record_fixed_cost, its smallest
    size: `record -- true` once) and a committed one from the raw runs of a compare suite."""
    where = tmp_path_factory.mktemp("results")
    run = subprocess.run([sys.executable, str(REPO / "bench" / "record_fixed_cost.py"),
                          "--repeat", "1", "--skip-programs", "--results-dir", str(where)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "results file: " in run.stdout
    shutil.copy(KEPT, where)
    assert len(list(where.glob("*.json"))) == 2
    return where


def test_a_benchmark_writes_a_results_file_that_reads_back(two_results):
    written = next(p for p in two_results.glob("record_fixed_cost-*.json"))
    data = bench_results.read(written)
    assert data["benchmark"] == "record_fixed_cost" and data["question"] == "recording-cost"
    assert data["command"] == "bench/record_fixed_cost.py --repeat 1 --skip-programs"
    assert data["machine"]["vcpus"] and data["machine"]["kernel"]
    assert data["source"] == "measured" and data["commit"]
    wall = data["medians"]["walls"]["record --sampler auto -- true"]
    assert wall == data["raw"]["true"]["record --sampler auto -- true"][0][0] > 0
    assert set(data["medians"]["steps"]) >= {"cli import and parser", "trace read and summary"}


def test_page_has_a_section_per_question_and_every_row_links_file_and_command(two_results,
                                                                               tmp_path):
    results = bench_results.read_all(two_results)
    page = bench_results.render(results, results_link=str(two_results))
    assert page.startswith("# Benchmarks\n")
    head = page.split("## ", 1)[0]
    assert "Generated from the results files" in head and "`make bench-doc`" in head
    for word in ("**real**", "**emulated**", "**simulated**", "**exact**", "**estimated**"):
        assert head.count(word) == 1, word
    sections = table_rows(page)
    assert list(sections)[:4] == list(bench_results.QUESTIONS.values())
    for name, data in results.items():
        heading = bench_results.QUESTIONS[data["question"]]
        rows = [r for r in sections[heading] if f"[{name}]({two_results}/{name})" in r[6]]
        assert len(rows) == 1, (name, sections[heading])
        assert rows[0][7] == f"`{data['command']}`"
        assert rows[0][1] == data["figure"]
    assert sections["How fast the tools are"] == [] and sections["How right the predictions are"] \
        == []
    assert "No current result." in page
    for cells in (c for rows in sections.values() for c in rows):
        assert len(cells) == 8, cells
        for cell in cells:
            assert bench_results.words(cell) <= bench_results.MAX_WORDS, cell


def test_the_page_is_what_the_script_writes(two_results, tmp_path):
    out = tmp_path / "page.md"
    run = subprocess.run([sys.executable, str(RENDER), "--results", str(two_results), "-o",
                          str(out)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert out.read_text() == bench_results.render(bench_results.read_all(two_results))
    check = subprocess.run([sys.executable, str(RENDER), "--results", str(two_results), "-o",
                            str(out), "--check"], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stderr
    out.write_text(out.read_text() + "hand edit\n")
    check = subprocess.run([sys.executable, str(RENDER), "--results", str(two_results), "-o",
                            str(out), "--check"], capture_output=True, text=True, timeout=60)
    assert check.returncode == 1 and "is not what" in check.stderr


@pytest.mark.parametrize("damage, message", [
    (lambda d: "{", "not JSON"),
    (lambda d: json.dumps({k: v for k, v in d.items() if k != "command"}), "no 'command'"),
    (lambda d: json.dumps(dict(d, question="speed")), "question 'speed' is not one of"),
    (lambda d: json.dumps(dict(d, benchmark="no_such_bench")), "not in objtier.benchmarks"),
    (lambda d: json.dumps(dict(d, finding="word " * 30)), "'finding' has 30 words"),
    (lambda d: json.dumps(dict(d, kind="measured")), "names none of real"),
])
def test_a_bad_results_file_is_a_one_line_error(two_results, tmp_path, damage, message):
    where = tmp_path / "results"
    shutil.copytree(two_results, where)
    (where / "zz-bad.json").write_text(damage(json.loads(KEPT.read_text())))
    out = tmp_path / "page.md"
    run = subprocess.run([sys.executable, str(RENDER), "--results", str(where), "-o", str(out)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    assert "zz-bad.json" in lines[0] and message in lines[0], lines[0]
    assert not out.exists()


def test_write_never_overwrites_a_result(tmp_path):
    data = bench_results.read(KEPT)
    first = bench_results.write(data, tmp_path, "suite")
    second = bench_results.write(data, tmp_path, "suite")
    assert first != second and first.name == "compare_suite-2026-12-03-suite.json"
    assert bench_results.read(second) == bench_results.read(first) == data


def test_committed_page_is_rendered_from_bench_results():
    """docs/benchmarks.md cannot drift from its files: regenerate with `make bench-doc`."""
    results = bench_results.read_all(bench_results.RESULTS_DIR)
    assert bench_results.PAGE.read_text() == bench_results.render(results), (
        "docs/benchmarks.md differs from bench/results/: run make bench-doc")


def test_every_link_of_the_committed_page_resolves():
    page = bench_results.PAGE.read_text()
    docs = bench_results.PAGE.parent
    links = re.findall(r"\]\(([^)]+)\)", page)
    assert links
    results = {p.name for p in bench_results.RESULTS_DIR.glob("*.json")}
    linked = {Path(link).name for link in links if link.startswith("../bench/results/")}
    assert linked == results, "every results file is on the page, and only those"
    for link in links:
        path, _, anchor = link.partition("#")
        assert (docs / path).is_file(), link
        if anchor:
            assert anchor in bench_results.anchors(docs / path), link
    for data in bench_results.read_all().values():
        if data["source"] != "measured":
            assert data["raw"] is None and data["source"].startswith("transcribed from "), data
