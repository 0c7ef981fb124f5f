"""--per-object on the real swap tier: a program with a hot and a cold array, recorded, then
one arm per object with only it slow. The hot array is the sensitive one; the plan matched
both objects; nothing is left on the machine. Plus the pure parts (ratios, curve)."""

from __future__ import annotations

import json
import math

import pytest

from objtier.sweep.fom import FomSource
from objtier.sweep.perobject import Arm, cumulative_curve, ratios

from ..experiments.helpers import PROGS, leftovers, machine_state, needs_enforcement


def test_ratios_sort_most_sensitive_first_and_count_failures_worst():
    arms = [Arm(0, "all fast", (), foms=[10.0, 10.0, 10.0]),
            Arm(1, "a", (0,), size=1 << 20, foms=[9.0, 9.0, 9.0]),
            Arm(2, "b", (1,), size=4 << 20, foms=[5.0, 5.0, 5.0]),
            Arm(3, "c", (2,), size=1 << 20, foms=[None, None, 8.0])]
    rows = ratios(arms, higher_is_better=True)
    assert [r["object"] for r in rows] == ["c", "b", "a"]
    assert rows[1]["median_ratio"] == pytest.approx(0.5)
    assert rows[1]["loss"] == pytest.approx(1.0)
    assert rows[0]["median_ratio"] == 0.0 and math.isinf(rows[0]["loss"])
    times = ratios([Arm(0, "all fast", (), foms=[2.0]), Arm(1, "a", (0,), size=1, foms=[4.0])],
                   higher_is_better=False)
    assert times[0]["median_ratio"] == pytest.approx(0.5)


def test_curve_adds_objects_by_loss_per_byte_and_ends_at_one():
    rows = [{"object": "big", "size": 8 << 20, "loss": 1.0, "loss_per_mib": 1 / 8},
            {"object": "small", "size": 1 << 20, "loss": 0.5, "loss_per_mib": 0.5}]
    curve = cumulative_curve(rows, total_bytes=10 << 20)   # 1 MiB of unmeasured objects
    assert [p["added"] for p in curve] == [None, "small", "big"]
    assert [p["fast_fraction"] for p in curve] == pytest.approx([0.1, 0.2, 1.0])
    assert [p["predicted_fom"] for p in curve] == pytest.approx([1 / 2.5, 1 / 2.0, 1.0])
    noisy = [{"object": "n", "size": 1 << 20, "loss": -0.3, "loss_per_mib": -0.3}]
    assert [p["predicted_fom"] for p in cumulative_curve(noisy, 1 << 20)] == [1.0, 1.0]
    failed = [{"object": "x", "size": 1 << 20, "loss": math.inf, "loss_per_mib": math.inf},
              {"object": "y", "size": 1 << 20, "loss": 1.0, "loss_per_mib": 1.0}]
    assert [p["predicted_fom"] for p in cumulative_curve(failed, 2 << 20)] == \
        pytest.approx([0.0, 0.5, 1.0])


@pytest.mark.root
@needs_enforcement
def test_per_object_hot_array_is_most_sensitive(compile_c, tmp_path):
    from objtier.record.session import RecordSettings, record_program
    from objtier.sweep.perobject import PerObjectSettings, run_per_object

    exe = compile_c((PROGS / "hotcold.c").read_text(), "hotcold")
    command = [str(exe), "16", "24", "1"]
    recording = tmp_path / "hc.otr"
    returncode, _ = record_program(command, recording, RecordSettings(rate=200_000),
                                   force=True)
    assert returncode == 0
    before = machine_state()
    during = []
    out = tmp_path / "po"
    # the hot array alone in swap makes every update a fault: its arm runs into the timeout
    # (a failed data point, counted as the worst FoM), the cold array's arm finishes
    # min_share: both arrays are arms however the sampler spread its samples on a busy machine
    doc = run_per_object(command, PerObjectSettings(recording=recording, repeat=1,
                                                    timeout_s=15, output=out,
                                                    min_share=0.0),
                         FomSource("line"), on_run=lambda i, n, s: during.append(
                             machine_state()))
    after = machine_state()
    assert leftovers(before, during[0], after) == []
    labels = [row["object"] for row in doc["objects"]]
    assert len(labels) == 2
    assert "alloc_hot" in labels[0] and "alloc_cold" in labels[1]
    hot, cold = doc["objects"]
    assert hot["median_ratio"] < cold["median_ratio"]
    assert doc["curve"][-1]["predicted_fom"] == pytest.approx(1.0)
    runs = (out / "sweep.csv").read_text().splitlines()[1:]
    assert len(runs) == 3
    saved = json.loads((out / "perobject.json").read_text())
    assert saved["objects"][0]["object"] == hot["object"]
    assert (out / "sensitivity.csv").read_text().startswith("context_key,")
    assert oct((out / "perobject.json").stat().st_mode & 0o777) == "0o600"
    # the table is a plan input: its rows name the recording's objects, and a budget of the
    # hot array's size keeps the measured most sensitive object fast
    from objtier.cli import main
    from objtier.plan import load_plan

    plan_path = tmp_path / "plan.json"
    assert main(["plan", str(recording), "--fast", str(hot["size"]), "--algo", "rank",
                 "--sensitivity", str(out / "sensitivity.csv"), "-o", str(plan_path)]) == 0
    plan = load_plan(plan_path)
    assert not any("not in the planned table" in w for w in plan["warnings"])
    fast = [e for e in plan["entries"] if e["tier"] == "fast"]
    assert [e["context_key"] for e in fast] == [hot["context_key"]]


def test_candidates_are_objects_with_one_percent_of_accesses():
    import numpy as np

    from objtier.plan import object_table
    from objtier.sweep.perobject import candidate_rows

    objects = object_table({
        "object": [0, 1, 2, 3], "context_key": ["a" * 16, "b" * 16, "", "c" * 16],
        "occurrence": [0, 0, 0, 0], "size": [4096, 4096, 4096, 4096],
        "accesses": [5.0, 994.0, 500.0, 0.5], "label": ["a", "b", "unknown", "c"]})
    # shares 0.33 %, 66 %, 33 % (no context: not plannable), 0.03 %
    assert candidate_rows(objects).tolist() == [1]
    assert candidate_rows(objects, 0.003).tolist() == [1, 0]
    assert np.array_equal(candidate_rows(object_table({
        "object": [0], "context_key": ["a" * 16], "occurrence": [0], "size": [1],
        "accesses": [0.0], "label": ["a"]})), [])
