"""`objtier sweep` from the command line: bad input gets one line and a non-zero exit; a short
threads sweep end to end (FoM parsed, files written)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from objtier.native import binary


def objtier(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "objtier", *args], capture_output=True,
                          text=True, timeout=timeout)


def one_line(stderr: str) -> bool:
    lines = [line for line in stderr.splitlines() if line.strip()]
    return len(lines) == 1 and "Traceback" not in stderr


@pytest.mark.parametrize("args, message", [
    (["--knob", "speed=1,2"], "unknown knob 'speed'"),
    (["--knob", "local=150%"], "local fraction must be in (0, 100]"),
    (["--knob", "local=100,abc"], "'abc' is not a number"),
    (["--knob", "local"], "expected KNOB=LEVELS"),
    (["--knob", "threads=1", "--repeat", "0"], "--repeat must be at least 1"),
    (["--knob", "threads=1", "--fom", "no group"], "needs one capture group"),
    (["--knob", "threads=1", "--fom", "(["], "not a regular expression"),
    (["--knob", "threads=1", "--threads", "0"], "positive whole numbers"),
    (["--knob", "mba=50", "--resctrl-root", "/nonexistent"], "no resctrl at /nonexistent"),
    (["--knob", "threads=1", "--", "/nonexistent/prog"], "command not found"),
    (["--knob", "local=50", "--pairs", "3"], "--pairs: only with --per-object"),
    (["--knob", "local=50", "--tier", "numa"], "--tier: only with --per-object"),
])
def test_bad_input_is_one_line(tmp_path, capsys, args, message):
    from objtier.cli import main

    try:
        code = main(["sweep", *args, "-o", str(tmp_path / "out"),
                     *([] if "--" in args else ["--", "true"])])
    except SystemExit as exit_:       # argparse's own errors
        code = exit_.code
    stderr = capsys.readouterr().err
    assert code != 0
    assert one_line(stderr), stderr
    assert message in stderr


def test_no_fom_match_stops_at_the_first_run(tmp_path):
    run = objtier("sweep", "--knob", "threads=1,2", "--fom", r"rate=(\d+)", "-o",
                  str(tmp_path / "o"), "--", "echo", "nothing here")
    assert run.returncode == 2
    assert one_line(run.stderr)
    assert "no match of --fom" in run.stderr


def test_threads_sweep_with_a_regex_fom(tmp_path):
    out = tmp_path / "o"
    run = objtier("sweep", "--knob", "threads=1,2", "--repeat", "2", "-q",
                  "--fom", r"^FOM stream=([0-9.e+]+)", "-o", str(out), "--",
                  str(binary("stream")), "-s", "200000", "-n", "3", "-t", "{threads}")
    assert run.returncode == 0, run.stderr
    doc = json.loads((out / "sweep.json").read_text())
    assert doc["knob"] == "threads" and doc["kind"] == "real"
    assert [lv["level"] for lv in doc["levels"]] == [1, 2]
    assert all(len(lv["fom"]) == 2 and all(v > 0 for v in lv["fom"]) for lv in doc["levels"])
    assert doc["levels"][1]["applied"] == "OMP_NUM_THREADS=2"
    assert set(doc["thresholds"]) == {"90", "75", "50"}
    assert "T90 =" in run.stdout
    png = (out / "sweep.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    assert oct((out / "sweep.png").stat().st_mode & 0o777) == "0o600"


def test_time_as_fom_is_lower_is_better(tmp_path):
    out = tmp_path / "o"
    run = objtier("sweep", "--knob", "threads=1", "--repeat", "2", "--time", "-q", "-o",
                  str(out), "--", "true")
    assert run.returncode == 0, run.stderr
    doc = json.loads((out / "sweep.json").read_text())
    assert doc["fom"]["higher_is_better"] is False and doc["fom"]["unit"] == "s"


def test_calibrate_then_thresholds_in_units(tmp_path):
    """--calibrate with the bandit knob (1 thread, 1 run per level), then a sweep stating its
    thresholds in GB/s and ns from that calibration."""
    cal = tmp_path / "cal"
    run = objtier("sweep", "--calibrate", "--knob", "bandit=0,100", "--threads", "1",
                  "--repeat", "1", "--bandit-size", "16M", "-q", "-o", str(cal))
    assert run.returncode == 0, run.stderr
    rows = json.loads((cal / "calibration.json").read_text())["rows"]
    assert [(r["threads"], r["level"]) for r in rows] == [(1, 0), (1, 100)]
    assert all(r["gbps"] > 0 and r["ns"] > 0 and r["kind"] == "emulated" for r in rows)
    assert (cal / "stream" / "sweep.json").exists() and (cal / "ptrchase" / "sweep.csv").exists()
    out = tmp_path / "o"
    run = objtier("sweep", "--knob", "bandit=0,100", "--repeat", "1", "--bandit-size", "16M",
                  "--calibration", str(cal / "calibration.json"), "-q", "-o", str(out), "--",
                  str(binary("stream")), "-s", "200000", "-n", "3", "-t", "1")
    assert run.returncode == 0, run.stderr
    doc = json.loads((out / "sweep.json").read_text())
    units = doc["thresholds_in_units"]
    assert set(units) == {"90", "75", "50"}
    for percent, level in doc["thresholds"].items():
        assert units[percent]["level"] == level
        if level is not None:
            assert units[percent]["gbps"] == next(r["gbps"] for r in rows if r["level"] == level)
    bad = objtier("sweep", "--knob", "bandit=0", "--calibration", str(out / "sweep.csv"),
                  "-o", str(tmp_path / "x"), "--", "true")
    assert bad.returncode == 2 and "not a calibration.json" in bad.stderr


def test_resume_runs_only_what_is_missing(tmp_path):
    from objtier.sweep.fom import FomSource
    from objtier.sweep.knobs import KnobOptions, make_knob
    from objtier.sweep.runner import SweepSettings, run_sweep

    out = tmp_path / "o"
    command = ["sh", "-c", "echo FOM x=$OMP_NUM_THREADS n time=0"]
    first = run_sweep(command, make_knob("threads", [1, 2], KnobOptions()),
                      SweepSettings(repeat=1, fom=FomSource("line"), output=out))
    assert [r.fom for r in first.records] == [1.0, 2.0]
    more = run_sweep(command, make_knob("threads", [1, 2], KnobOptions()),
                     SweepSettings(repeat=2, fom=FomSource("line"), output=out, resume=True))
    assert [(r.order, r.repeat, r.level) for r in more.records] == \
        [(1, 1, 1), (2, 1, 2), (3, 2, 1), (4, 2, 2)]
    doc = json.loads((out / "sweep.json").read_text())
    assert [lv["fom"] for lv in doc["levels"]] == [[1.0, 1.0], [2.0, 2.0]]


@pytest.mark.parametrize("script, expected, most", [
    # 90, 80, ..., 10 over threads 1..9: T90 at 2 (80 < 81), T75 at 4 (60 < 67.5), T50 at 6
    ("echo FOM x=$((100 - 10 * OMP_NUM_THREADS)) n time=0", {90: 2, 75: 4, 50: 6}, 8),
    # a cliff: 90 up to 5 threads, 10 from 6 on: every threshold at 6
    ("[ $OMP_NUM_THREADS -le 5 ] && v=90 || v=10; echo FOM x=$v n time=0",
     {90: 6, 75: 6, 50: 6}, 5),
    # never below 90 %: not reached, from the first and the last level alone
    ("echo FOM x=$((100 - OMP_NUM_THREADS)) n time=0", {90: None, 75: None, 50: None}, 2),
])
def test_bisect_finds_the_full_grid_thresholds_with_fewer_runs(tmp_path, script, expected,
                                                               most):
    from objtier.sweep.fom import FomSource
    from objtier.sweep.knobs import KnobOptions, make_knob
    from objtier.sweep.runner import SweepSettings, run_sweep

    command = ["sh", "-c", script]
    levels = [float(t) for t in range(1, 10)]
    full = run_sweep(command, make_knob("threads", levels, KnobOptions()),
                     SweepSettings(repeat=2, fom=FomSource("line"), output=tmp_path / "f"))
    fast = run_sweep(command, make_knob("threads", levels, KnobOptions()),
                     SweepSettings(repeat=2, fom=FomSource("line"), output=tmp_path / "b",
                                   bisect=True))
    assert full.metrics[0].thresholds == expected
    assert fast.metrics[0].thresholds == expected
    measured = {r.level for r in fast.records}
    assert {1, 9} <= measured and len(measured) <= most
    assert len(fast.records) == 2 * len(measured)
    doc = json.loads((tmp_path / "b" / "sweep.json").read_text())
    assert sum(lv["fom"] == [] for lv in doc["levels"]) == 9 - len(measured)


def test_help_texts_render():
    for args in (["--help"], ["sweep", "--help"]):
        run = objtier(*args)
        assert run.returncode == 0, run.stderr
        assert "sweep" in run.stdout


def test_report_of_a_sweep_dir_writes_its_page_again(tmp_path):
    out = tmp_path / "threads"
    run = objtier("sweep", "--knob", "threads=1,2", "--repeat", "1", "-q", "-o", str(out),
                  "--", str(binary("stream")), "-s", "100000", "-n", "2", "-t", "{threads}")
    assert run.returncode == 0, run.stderr
    page = out / "sweep.html"
    page.unlink()
    again = objtier("report", str(out))
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == f"report: {page}"
    assert 'id="plot-fom"' in page.read_text()
    (out / "sweep.json").write_text('{"knob": "threads"}')
    bad = objtier("report", str(out))
    lines = bad.stderr.strip().splitlines()
    assert bad.returncode != 0 and len(lines) == 1 and "not a sweep output" in lines[0]
    (out / "sweep.json").write_text('{"knob": "threads", "series": [{"levels": [{}]}]}')
    bad = objtier("report", str(out))
    lines = bad.stderr.strip().splitlines()
    assert bad.returncode != 0 and len(lines) == 1 and "malformed" in lines[0], bad.stderr


# A program whose FoM is noise around a mean per level: run k of level L (OMP_NUM_THREADS)
# prints VALUES[L][k] when given, else MEAN[L] * (1 + 0.3 * (u - 0.5)) with u the k-th draw of
# Random(L * 1000 + k) (+-15 %); the run count per level is kept in files under DIR.
NOISY = '''
import os, pathlib, random, sys
state, means, values = pathlib.Path(sys.argv[1]), eval(sys.argv[2]), eval(sys.argv[3])
level = int(os.environ["OMP_NUM_THREADS"])
count = state / f"runs-{level}"
k = int(count.read_text()) if count.exists() else 0
count.write_text(str(k + 1))
if level in values:
    value = values[level][k % len(values[level])]
else:
    value = means[level] * (1 + 0.3 * (random.Random(level * 1000 + k).random() - 0.5))
print(f"FOM noisy={value:.4f} n time=0")
'''


def noisy_command(tmp_path, means=None, values=None):
    script = tmp_path / "noisy.py"
    script.write_text(NOISY)
    state = tmp_path / "state"
    state.mkdir()
    return [sys.executable, str(script), str(state), repr(means or {}), repr(values or {})]


def test_issue_40_a_noisy_sweep_declares_no_threshold_and_names_the_dip(tmp_path):
    """Case 4 of issue 40 end to end: the issue's runs (medians 55.1 / 35.0 / 53.2, three
    runs a level, +-20 %) through a real sweep. Before: T90 = T75 = the middle level, the dip
    unnamed. Now: not resolved (noise) with the runs that would resolve it, in the table, in
    sweep.json and on the page; the curve's rise after the dip is named."""
    out = tmp_path / "o"
    values = {1: [55.1, 48.0, 64.0], 2: [35.0, 33.0, 60.0], 3: [53.2, 45.0, 66.0]}
    run = objtier("sweep", "--knob", "threads=1,2,3", "--repeat", "3", "-q", "-o", str(out),
                  "--", *noisy_command(tmp_path, values=values))
    assert run.returncode == 0, run.stderr
    doc = json.loads((out / "sweep.json").read_text())
    assert [lv["median"] for lv in doc["levels"]] == [55.1, 35.0, 53.2]
    assert doc["thresholds"] == {"90": None, "75": None, "50": None}
    for percent in ("90", "75"):
        status = doc["threshold_status"][percent]
        assert status["status"] == "not resolved" and status["repeats_needed"] > 3
    assert doc["threshold_status"]["50"]["status"] == "not reached"
    middle = doc["levels"][1]
    assert middle["sides"] == {"90": "noise", "75": "noise", "50": "above"}
    assert middle["ratio_ci"][0] < 0.75 and middle["ratio_ci"][1] > 0.90
    assert doc["non_monotonic"] == [{"dip": 2, "rise": 3, "percents": [90, 75],
                                     "beyond_noise": False}]
    text = " ".join(run.stdout.split())        # the table, whatever rich's line breaks
    assert "T90 = not resolved (noise), T75 = not resolved (noise), T50 = not reached" in text
    assert "T75? noise (~" in text
    assert "non-monotonic curve: the median falls below 90% and 75% of the baseline at 2 " \
           "threads and is back above at 3 threads" in text
    page = (out / "sweep.html").read_text()
    assert "T90 = not resolved (noise)" in page and "non-monotonic curve" in page


def test_repeat_auto_adds_runs_where_noise_decides_until_resolved(tmp_path):
    """--repeat auto on a real sweep: 3 runs a level leave T90 to noise; the sweep adds runs
    only at the levels that decide it and the baseline level until every threshold is
    resolved, and says so; with a lower cap it stops there and says that."""
    means = {1: 100, 2: 98, 3: 60, 4: 30}
    out = tmp_path / "o"
    run = objtier("sweep", "--knob", "threads=1,2,3,4", "--repeat", "auto", "-o", str(out),
                  "--", *noisy_command(tmp_path, means=means))
    assert run.returncode == 0, run.stderr
    doc = json.loads((out / "sweep.json").read_text())
    auto = doc["config"]["repeat_auto"]
    assert doc["config"]["repeat"] == "auto" and auto["start"] == 3 and auto["max"] == 20
    assert auto["stopped"] == "every threshold resolved"
    runs = [len(lv["fom"]) for lv in doc["levels"]]
    assert runs[2] == runs[3] == 3 and 3 < runs[0] == runs[1] < 20, runs
    assert doc["thresholds"] == {"90": 3, "75": 3, "50": 4}
    assert "--repeat auto: every threshold resolved" in run.stdout
    assert "--repeat auto:" in run.stderr and "more run(s) at 1 thread" in run.stderr
    capped = tmp_path / "capped"
    (tmp_path / "state").rename(tmp_path / "state-1")
    run = objtier("sweep", "--knob", "threads=1,2,3,4", "--repeat", "auto", "--max-repeat",
                  "5", "-q", "-o", str(capped), "--", *noisy_command(tmp_path, means=means))
    assert run.returncode == 0, run.stderr
    doc = json.loads((capped / "sweep.json").read_text())
    assert doc["config"]["repeat_auto"]["stopped"] == (
        "stopped at the cap of 5 runs per level (--max-repeat): T90 not resolved")
    assert max(len(lv["fom"]) for lv in doc["levels"]) == 5
    assert doc["threshold_status"]["90"]["status"] == "not resolved"
    assert "stopped at the cap of 5 runs per level" in " ".join(run.stdout.split())


@pytest.mark.parametrize("args, message", [
    (["--repeat", "auto", "--bisect"], "--bisect picks its levels"),
    (["--repeat", "3", "--max-repeat", "9"], "--max-repeat: only with --repeat auto"),
    (["--repeat", "auto", "--max-repeat", "2"], "--max-repeat must be at least 3"),
    (["--repeat", "many"], "expected a whole number or auto"),
])
def test_repeat_auto_bad_input_is_one_line(tmp_path, capsys, args, message):
    from objtier.cli import main

    try:
        code = main(["sweep", "--knob", "threads=1,2", *args, "-o", str(tmp_path / "out"),
                     "--", "true"])
    except SystemExit as exit_:
        code = exit_.code
    stderr = capsys.readouterr().err
    assert code != 0 and one_line(stderr) and message in stderr, stderr
