"""A real `local` sweep on the swap tier (memory cgroup + zram, stat-flush reader): FoM parsed
from the workload's FOM line, nothing left on the machine, and a lower local fraction never
reported faster beyond noise."""

from __future__ import annotations

import json
import os

import pytest

from objtier.native import binary
from objtier.sweep.fom import FomSource
from objtier.sweep.knobs import KnobOptions, make_knob
from objtier.sweep.runner import SweepSettings, run_sweep

from ..experiments.helpers import leftovers, machine_state

pytestmark = pytest.mark.root


# Once in a fresh-clone CI run (2026-11-28) a record here was not "ok" (the cause was not
# kept; 46 runs at 60 % since, quiet and loaded: all ok). A record OOM-killed at 60 % (memcg v1
# reclaim even with the stat-flush reader), and nothing else, is retried once.
@pytest.mark.flaky(reruns=1, only_rerun=[r"OOM-killed"])
def test_local_sweep_on_stream(tmp_path):
    # stream -s 1000000: 3 arrays of 7.6 MiB (23 MiB); at 60 % a third of them is in swap
    command = [str(binary("stream")), "-s", "1000000", "-n", "3", "-t", "1"]
    knob = make_knob("local", [60, 100], KnobOptions())
    assert knob.levels == [100, 60]
    out = tmp_path / "sweep"
    before = machine_state()
    during = []
    outcome = run_sweep(command, knob, SweepSettings(repeat=2, fom=FomSource("line"),
                                                     output=out),
                        on_record=lambda r, i, n: during.append(machine_state()))
    after = machine_state()
    assert f"objtier-sweep-{os.getpid()}" in during[0][1]     # the cgroup existed
    assert leftovers(before, during[0], after) == []          # and nothing stayed
    assert len(outcome.records) == 4
    assert [r.level for r in outcome.records] == [100, 60, 100, 60]   # interleaved rounds
    assert all(r.status == "ok" and r.unit == "MB/s" and r.fom > 0 for r in outcome.records), [
        (r.level, r.status, r.unit, r.fom, r.reason, r.wall_s, r.extra) for r in outcome.records]
    assert all(r.extra["stat_flush_reads"] > 0 for r in outcome.records)
    at60 = [r for r in outcome.records if r.level == 60]
    assert all(r.extra["limit_bytes"] < 0.6 * knob.footprint + (4 << 20) + 4096 for r in at60)
    metric = outcome.metrics[0]
    full, limited = metric.levels
    # 60 % of the footprint cannot be faster than all of it beyond noise: its median stays
    # under the top of the 100 % level's interval, with a 25 % allowance
    assert limited.median <= 1.25 * full.ci_high
    doc = json.loads((out / "sweep.json").read_text())
    assert doc["config"]["stat_flush_ms"] == 10
    assert doc["config"]["footprint_bytes"] == knob.footprint
    assert {lv["kind"] for lv in doc["levels"]} == {"real"}
    assert oct((out / "sweep.json").stat().st_mode & 0o777) == "0o600"


@pytest.mark.heavy
def test_calibrate_local_in_gbps_and_ns_then_a_sweep_in_units(tmp_path):
    """--calibrate on the swap tier: STREAM and ptrchase at 100 % and 50 % of their own
    footprints (real cgroup limits, real swap-ins), rows in GB/s and ns, the footprints kept,
    the heatmaps in sweep.html; then a `local` sweep stating its thresholds from it."""
    import subprocess
    import sys

    cal = tmp_path / "cal"
    before = machine_state()
    run = subprocess.run([sys.executable, "-m", "objtier", "sweep", "--calibrate", "--knob",
                          "local=100,50", "--threads", "1", "--repeat", "2",
                          "--calibrate-stream", "1000000", "--calibrate-chase", "32M", "-q",
                          "-o", str(cal)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert leftovers(before, before, machine_state()) == []
    doc = json.loads((cal / "calibration.json").read_text())
    assert doc["knob"] == "local" and doc["kind"] == "real"
    assert doc["stream"][:2] == ["-s", "1000000"] and doc["ptrchase"][:2] == ["-s", str(32 << 20)]
    assert doc["footprints"]["stream"] > 16 << 20 and doc["footprints"]["ptrchase"] > 32 << 20
    rows = doc["rows"]
    assert [(r["threads"], r["level"]) for r in rows] == [(1, 100), (1, 50)]
    # 2 runs per level: one run failing on a loaded machine (a data point: worst FoM) still
    # leaves a median above 0
    assert all(r["kind"] == "real" for r in rows)
    assert all(r["gbps"] and r["gbps"] > 0 and r["ns"] and r["ns"] > 0 for r in rows), (
        rows, [(lv["level"], lv["failures"]) for name in ("stream", "ptrchase") for lv in
               json.loads((cal / name / "sweep.json").read_text())["levels"]])
    # the 50 % level really served part of each workload from swap
    for name in ("stream", "ptrchase"):
        runs = json.loads((cal / name / "sweep.json").read_text())["levels"]
        half = next(level for level in runs if level["level"] == 50)
        assert max(half["measured"]["swap_ins"]) > 0, (name, half["measured"])
    page = (cal / "sweep.html").read_text()
    assert "Calibration - " in page                                   # the heatmaps
    assert "local calibration: effective bandwidth and latency" in page
    out = tmp_path / "sweep"
    run = subprocess.run([sys.executable, "-m", "objtier", "sweep", "--knob", "local=100,50",
                          "--repeat", "1", "--calibration", str(cal / "calibration.json"),
                          "-q", "-o", str(out), "--", str(binary("stream")), "-s", "1000000",
                          "-n", "3", "-t", "1"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    sweep = json.loads((out / "sweep.json").read_text())
    for percent, level in sweep["thresholds"].items():
        unit = sweep["thresholds_in_units"][percent]
        assert unit["level"] == level
        if level is not None:
            assert unit["gbps"] == next(r["gbps"] for r in rows if r["level"] == level)
