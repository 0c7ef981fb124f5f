"""--suite: the file format, the ranking (Table I, most sensitive first), and a real suite of
three small programs, one of which fails."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from objtier.errors import UsageError
from objtier.sweep.metric import compute_metric
from objtier.sweep.suite import SuiteRow, parse_suite, rank


def test_suite_file_format():
    entries = parse_suite("# comment\n\nfast: prog -x 1\nprog 'a b'\nprog\n", "s.txt")
    assert [(e.name, e.command) for e in entries] == [
        ("fast", ["prog", "-x", "1"]), ("prog.2", ["prog", "a b"]), ("prog.3", ["prog"])]
    with pytest.raises(UsageError, match="s.txt:1"):
        parse_suite("prog 'unclosed\n", "s.txt")
    with pytest.raises(UsageError, match="no command"):
        parse_suite("# only a comment\n", "s.txt")


def test_rank_is_most_sensitive_first_failures_last():
    def metric(*medians):
        return compute_metric([(lvl, f"{lvl}", [m] * 3) for lvl, m in
                               zip((100, 50, 10), medians)])

    rows = [SuiteRow("flat", ["a"], metric(100, 99, 95), "x"),
            SuiteRow("broken", ["b"], None, None, "exit 1"),
            SuiteRow("steep", ["c"], metric(100, 40, 10), "x"),
            SuiteRow("middle", ["d"], metric(100, 80, 60), "x")]
    assert [r.name for r in rank(rows)] == ["steep", "middle", "flat", "broken"]


def test_suite_end_to_end(tmp_path):
    suite = tmp_path / "suite.txt"
    suite.write_text(
        "steep: sh -c 'echo FOM x=$((100 / OMP_NUM_THREADS)) n time=0'\n"
        "flat: sh -c 'echo FOM x=100 n time=0'\n"
        "broken: false\n")
    out = tmp_path / "o"
    run = subprocess.run([sys.executable, "-m", "objtier", "sweep", "--suite", str(suite),
                          "--knob", "threads=1,2,4", "--repeat", "2", "-q", "-o", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    doc = json.loads((out / "suite.json").read_text())
    assert [p["program"] for p in doc["programs"]] == ["steep", "flat", "broken"]
    steep, flat, broken = doc["programs"]
    assert (steep["T90"], steep["T75"], steep["T50"]) == ("2 threads", "2 threads", "4 threads")
    assert flat["T90"] == "not reached"
    assert "failed" in broken["error"]
    assert (out / "01-steep" / "sweep.json").exists()
    assert "| steep |" in (out / "suite.md").read_text()


def test_suite_with_a_calibration_states_each_programs_thresholds_in_units(tmp_path):
    suite = tmp_path / "suite.txt"
    suite.write_text("steep: sh -c 'echo FOM x=$((100 / OMP_NUM_THREADS)) n time=0'\n")
    calibration = tmp_path / "calibration.json"
    calibration.write_text(json.dumps({"rows": [
        {"threads": 1, "level": level, "label": f"{level} threads", "kind": "real",
         "gbps": 10.0 / level, "ns": 100.0 * level} for level in (1, 2, 4)]}))
    out = tmp_path / "o"
    run = subprocess.run([sys.executable, "-m", "objtier", "sweep", "--suite", str(suite),
                          "--knob", "threads=1,2,4", "--repeat", "2", "--calibration",
                          str(calibration), "-q", "-o", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    doc = json.loads((out / "01-steep" / "sweep.json").read_text())
    assert doc["thresholds"]["50"] == 4
    assert doc["thresholds_in_units"]["50"] == {"level": 4, "threads": 1, "gbps": 2.5,
                                                "ns": 400.0}
    assert "T50: level 4 = 2.5 GB/s, 400.0 ns" in run.stdout
