"""--knob sim on a synthetic recording: a predicted curve, monotone in the multiplier, labelled
simulated; and its input checks."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from objtier.errors import UsageError
from objtier.sweep.knobs import KnobOptions, make_knob
from objtier.sweep.simknob import predict, scaled_model

from ..sim.conftest import make_hot_cold


def test_predicted_curve_is_monotone_and_starts_at_one(tmp_path):
    from objtier.trace import open_trace

    trace = open_trace(make_hot_cold(tmp_path))
    foms, applied, facts = predict(trace, [1, 2, 4, 16], "cxl", "25%")
    assert foms[0] == pytest.approx(1.0)
    assert all(a > b for a, b in zip(foms, foms[1:]))
    assert 0 < facts["fast_share"] < 1
    assert applied[0].startswith("slow 82 ns")


def test_slower_tier_with_more_fast_memory_loses_less(tmp_path):
    from objtier.trace import open_trace

    trace = open_trace(make_hot_cold(tmp_path))
    small, _, _ = predict(trace, [1, 8], "cxl", "10%")
    large, _, _ = predict(trace, [1, 8], "cxl", "90%")
    assert small[1] < large[1]


def test_scaled_model():
    from objtier.sim import load_preset

    model = scaled_model(load_preset("cxl"), 4)
    assert model.slow.load_ns == 4 * model.fast.load_ns
    assert model.slow.read_gbps == model.fast.read_gbps / 4


def test_sim_sweep_from_the_command_line(tmp_path):
    recording = make_hot_cold(tmp_path)
    out = tmp_path / "o"
    run = subprocess.run([sys.executable, "-m", "objtier", "sweep", "--knob", "sim=1,2,4,8",
                          "--recording", str(recording), "--sim-fast", "25%", "-q", "-o",
                          str(out)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    doc = json.loads((out / "sweep.json").read_text())
    assert doc["kind"] == "simulated"
    assert {lv["kind"] for lv in doc["levels"]} == {"simulated"}
    assert doc["levels"][0]["median"] == pytest.approx(1.0)
    assert "simulated" in run.stdout


def test_sim_needs_a_recording_and_sane_levels():
    with pytest.raises(UsageError, match="--recording"):
        make_knob("sim", [1, 2], KnobOptions())
    with pytest.raises(UsageError, match="from 1"):
        make_knob("sim", [0.5], KnobOptions(recording="x"))
