"""--per-object on the real swap tier: a program with a hot and a cold array, recorded, then
one arm per object with only it slow. The hot array is the sensitive one; the plan matched
both objects; nothing is left on the machine. Plus the pure parts (ratios, curve)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from objtier.sweep.fom import FomSource
from objtier.sweep.perobject import Arm, cumulative_curve, ratios

from ..experiments.helpers import PROGS, leftovers, machine_state, needs_enforcement


def test_ratios_sort_most_sensitive_first_and_count_failures_worst():
    arms = [Arm(0, "all fast", (), foms=[10.0, 10.0, 10.0]),
            Arm(1, "a", (0,), size=1 << 20, foms=[9.0, 9.0, 9.0]),
            Arm(2, "b", (1,), size=4 << 20, foms=[5.0, 5.0, 5.0]),
            Arm(3, "c", (2,), size=1 << 20, foms=[None, None, 8.0]),
            Arm(4, "d", (3,), size=1 << 20, foms=[None, 8.0, 8.0])]
    rows = ratios(arms, higher_is_better=True)
    assert [r["object"] for r in rows] == ["c", "b", "d", "a"]
    assert rows[1]["median_ratio"] == pytest.approx(0.5)
    assert rows[1]["loss"] == pytest.approx(1.0)
    # most runs failed: no ratio (not 0.000 as data), an infinite loss, first in the order
    assert rows[0]["result"] == "failed" and rows[0]["median_ratio"] is None
    assert math.isinf(rows[0]["loss"]) and rows[0]["ci"] == [None, None]
    # one failure in three: measured, the failure counting worst in the median
    assert rows[2]["result"] == "measured" and rows[2]["median_ratio"] == pytest.approx(0.8)
    assert rows[2]["failures"] == {"failed": 1}
    times = ratios([Arm(0, "all fast", (), foms=[2.0]), Arm(1, "a", (0,), size=1, foms=[4.0])],
                   higher_is_better=False)
    assert times[0]["median_ratio"] == pytest.approx(0.5)


def test_timed_out_and_killed_arms_are_bounds_not_data():
    """Issue 40, case 5: an arm whose runs ran into the timeout says "at least the timeout
    slower" (wall time against the all-fast runs); a killed arm says nothing about speed."""
    def arm(index, label, size, foms, statuses, walls):
        made = Arm(index, label, (index - 1,) if index else (), size=size, foms=foms)
        made.statuses, made.walls = statuses, walls     # what keep_run records per run
        return made

    fast = arm(0, "all fast", 0, [10.0, 10.0], ["ok", "ok"], [0.5, 0.5])
    slow = arm(1, "hot", 4 << 20, [None, None], ["timeout", "timeout"], [15.0, 15.1])
    oom = arm(2, "big", 8 << 20, [None, 9.0, None], ["OOM-killed", "ok", "killed by signal 9"],
              [1.0, 0.6, 2.0])
    cold = arm(3, "cold", 1 << 20, [9.0, 10.0], ["ok", "ok"], [0.55, 0.5])
    # one run measured, one timed out: at most half succeeded, every failure a timeout
    mixed = arm(4, "mixed", 2 << 20, [5.0, None], ["ok", "timeout"], [1.0, 15.0])
    rows = {r["object"]: r for r in ratios([fast, slow, oom, cold, mixed], True)}
    hot = rows["hot"]
    assert hot["median_ratio"] is None                     # not "ratio 0.000"
    assert hot["result"] == "bound"
    assert hot["median_fom"] is None and hot["ci"] == [None, None]
    assert hot["slower_at_least"] == pytest.approx(15.05 / 0.5)
    assert hot["ratio_at_most"] == pytest.approx(0.5 / 15.05)
    assert hot["result_text"] == "≥ 30.1× slower"
    assert hot["loss"] == pytest.approx(15.05 / 0.5 - 1) and hot["loss_is_bound"]
    assert hot["failures"] == {"timeout": 2}
    assert rows["big"]["result"] == "killed" and rows["big"]["median_ratio"] is None
    assert rows["big"]["result_text"] == "killed (1 OOM-killed, 1 killed by signal 9)"
    assert math.isinf(rows["big"]["loss"]) and not rows["big"]["loss_is_bound"]
    assert rows["cold"]["result"] == "measured" and rows["cold"]["result_text"] == "0.950"
    # the median of 1.0 / 0.5 = 2x and >= 15 / 0.5 = 30x: at least 16x
    assert rows["mixed"]["result"] == "bound"
    assert rows["mixed"]["slower_at_least"] == pytest.approx(16.0)
    ordered = [r["object"] for r in ratios([fast, slow, oom, cold, mixed], True)]
    assert ordered == ["big", "hot", "mixed", "cold"]
    # the curve: a point with the timed-out object slow predicts at most its value
    curve = cumulative_curve([hot, rows["cold"]], 5 << 20)
    assert [p["added"] for p in curve] == [None, "hot", "cold"]      # most loss per byte
    assert [p["upper_bound"] for p in curve] == [True, False, False]
    assert curve[-1]["predicted_fom"] == pytest.approx(1.0) and not curve[-1]["upper_bound"]
    from objtier.sweep.perobject import arm_result, pair_ratios, pair_table

    assert arm_result(slow, fast, True)["result"] == "bound"
    # a pair that timed out: a bound too, its ratio bound in the pairwise table
    pair = Arm(5, "hot + cold", (0, 2), kind="pair", foms=[None], statuses=["timeout"],
               walls=[15.0])
    (row,) = pair_ratios([fast, slow, cold, pair], True)
    assert row["result"] == "bound" and row["result_text"] == "≥ 30× slower"
    assert pair_table([row])[frozenset(("hot", "cold"))] == pytest.approx(1 / 30)


def test_curve_adds_objects_by_loss_per_byte_and_ends_at_one():
    rows = [{"object": "big", "size": 8 << 20, "loss": 1.0, "loss_per_mib": 1 / 8},
            {"object": "small", "size": 1 << 20, "loss": 0.5, "loss_per_mib": 0.5}]
    curve = cumulative_curve(rows, total_bytes=10 << 20,   # 1 MiB of unmeasured objects
                             model="additive")
    assert [p["added"] for p in curve] == [None, "small", "big"]
    assert [p["fast_fraction"] for p in curve] == pytest.approx([0.1, 0.2, 1.0])
    assert [p["predicted_fom"] for p in curve] == pytest.approx([1 / 2.5, 1 / 2.0, 1.0])
    # the default model compounds: both slow = 1/2 * 1/1.5, not 1/2.5
    default = cumulative_curve(rows, total_bytes=10 << 20)
    assert [p["predicted_fom"] for p in default] == pytest.approx([1 / 3.0, 1 / 2.0, 1.0])
    assert [p["predicted_additive"] for p in default] == pytest.approx([1 / 2.5, 1 / 2.0, 1.0])
    noisy = [{"object": "n", "size": 1 << 20, "loss": -0.3, "loss_per_mib": -0.3}]
    assert [p["predicted_fom"] for p in cumulative_curve(noisy, 1 << 20)] == [1.0, 1.0]
    failed = [{"object": "x", "size": 1 << 20, "loss": math.inf, "loss_per_mib": math.inf},
              {"object": "y", "size": 1 << 20, "loss": 1.0, "loss_per_mib": 1.0}]
    assert [p["predicted_fom"] for p in cumulative_curve(failed, 2 << 20)] == \
        pytest.approx([0.0, 0.5, 1.0])
    # measured pairs: the pairwise model adds their interaction
    terms = {frozenset(("big", "small")): 1.5}
    paired = cumulative_curve(rows, 10 << 20, model="pairwise", terms=terms)
    assert [p["predicted_fom"] for p in paired] == pytest.approx([1 / 4.0, 1 / 2.0, 1.0])


def test_pair_arms_are_every_pair_of_the_most_accessed_and_not_objects():
    from objtier.plan import object_table
    from objtier.sweep.perobject import object_arms, pair_ratios, pair_table

    objects = object_table({
        "object": [0, 1, 2], "context_key": ["a" * 16, "b" * 16, "c" * 16],
        "occurrence": [0, 0, 0], "size": [1 << 20, 2 << 20, 4 << 20],
        "accesses": [50.0, 30.0, 20.0], "label": ["a", "b", "c"]})
    arms = object_arms(objects, [0, 1, 2], pairs=3)
    assert [(a.kind, a.label, a.slow_rows) for a in arms] == [
        ("all fast", "all fast", ()), ("object", "a", (0,)), ("object", "b", (1,)),
        ("object", "c", (2,)), ("pair", "a + b", (0, 1)), ("pair", "a + c", (0, 2)),
        ("pair", "b + c", (1, 2))]
    assert arms[4].size == 3 << 20
    assert len(object_arms(objects, [0, 1, 2], pairs=2)) == 5
    for arm, foms in zip(arms, ([10.0], [8.0], [5.0], [10.0], [2.0], [None], [4.0])):
        arm.foms = foms
    singles = ratios(arms, higher_is_better=True)
    assert [r["object"] for r in singles] == ["b", "a", "c"]      # pairs are not objects
    pairs = pair_ratios(arms, higher_is_better=True)
    assert [(p["objects"], p["median_ratio"], p["failed"]) for p in pairs] == [
        (["a", "b"], pytest.approx(0.2), 0), (["a", "c"], None, 1),     # failed: no ratio
        (["b", "c"], pytest.approx(0.4), 0)]
    assert pairs[1]["result"] == "failed"
    assert pair_table(pairs)[frozenset(("a", "b"))] == pytest.approx(0.2)


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
    # the hot arm timed out (a bound: its ratio is at most ...) or, on a fast day, finished
    assert (hot["median_ratio"] if hot["result"] == "measured" else hot["ratio_at_most"]) \
        < cold["median_ratio"]
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


@pytest.mark.root
@needs_enforcement
def test_issue_40_a_timed_out_arm_is_a_bound_in_the_table_json_and_page(compile_c, tmp_path):
    """Case 5 of issue 40 end to end: `objtier sweep --per-object` where the hot array's arm
    runs into a short --timeout. Before: "runs ok 0/1, median FoM 0, ratio 0.000, loss/MiB
    inf", exit 0. Now the row says what was learned: at least the timeout slower, in wall
    time, in the table, perobject.json and sweep.html, with a warning."""
    import csv
    import os
    import subprocess
    import sys

    from objtier.record.session import RecordSettings, record_program
    from objtier.sweep.page import perobject_figures

    exe = compile_c((PROGS / "hotcold.c").read_text(), "hotcold")
    command = [str(exe), "16", "24", "1"]
    recording = tmp_path / "hc.otr"
    returncode, _ = record_program(command, recording, RecordSettings(rate=200_000),
                                   force=True)
    assert returncode == 0
    before = machine_state()
    out = tmp_path / "po"
    run = subprocess.run([sys.executable, "-m", "objtier", "sweep", "--per-object",
                          str(recording), "--repeat", "1", "--timeout", "4", "-o", str(out),
                          "--", *command], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "COLUMNS": "200"})
    assert leftovers(before, before, machine_state()) == []
    assert run.returncode == 0, run.stderr
    doc = json.loads((out / "perobject.json").read_text())
    hot = next(r for r in doc["objects"] if "alloc_hot" in r["object"])
    if hot["runs"] - hot["failed"]:     # never on this machine: the hot arm takes minutes
        pytest.skip(f"the hot array's arm finished within 4 s ({hot['median_ratio']})")
    # the table: the bound where the ratio was, the runs' failure, no "0.000" / "inf"
    line = next(line for line in run.stdout.splitlines() if "alloc_hot" in line)
    assert "0.000" not in line and "inf" not in line, line
    assert hot["result_text"] in line and "0/1 (1 timeout)" in line, run.stdout
    assert hot["result"] == "bound" and hot["failures"] == {"timeout": 1}
    assert doc["timeout_s"] == 4
    assert hot["median_ratio"] is None and hot["median_fom"] is None
    with open(out / "sweep.csv", newline="") as f:
        fast_wall = next(float(r["wall_s"]) for r in csv.DictReader(f)
                         if r["label"] == "all fast")
    assert hot["slower_at_least"] >= 4 / fast_wall * 0.99          # at least the timeout
    assert hot["ratio_at_most"] == pytest.approx(1 / hot["slower_at_least"])
    assert hot["result_text"] == f"≥ {hot['slower_at_least']:.3g}× slower"
    assert doc["objects"][0]["object"] == hot["object"]             # most sensitive first
    assert "ran into the timeout (4.0 s): their rows are bounds in wall time" in \
        " ".join(run.stderr.split())
    # sensitivity.csv: the lower bound of the loss, marked
    with open(out / "sensitivity.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    row = next(r for r in rows if r["label"] == hot["object"])
    assert row["result"] == "bound" and float(row["loss"]) == pytest.approx(hot["loss"])
    # the page: a hatched bar at the ratio's bound, labelled, and a note
    figures = dict(perobject_figures(doc))
    bound = next(t for t in figures["objects"].data if t.name == "timed out: ratio at most")
    assert list(bound.x) == [hot["object"]] and list(bound.text) == [hot["result_text"]]
    page = (out / "sweep.html").read_text()
    assert "timed out: ratio at most" in page
    assert "ran into the timeout: their bars are bounds in wall time" in page


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


# ---- the NUMA tier (host parts; the placement itself: tests/testbed/test_guest_sweep_numa.py)

TOPOLOGY = Path(__file__).resolve().parents[1] / "tiers" / "fixtures"


def test_numa_tiers_from_sysfs_and_one_line_refusals():
    from objtier.errors import EnvironmentProblem, UsageError
    from objtier.sweep.perobject_numa import numa_tiers

    tiers = numa_tiers(None, None, TOPOLOGY / "cpuless_plain" / "sys")
    assert tiers.slow and tiers.fast and not set(tiers.fast) & set(tiers.slow)
    assert numa_tiers("0", "1", TOPOLOGY / "two_sockets" / "sys").slow_list == "1"
    with pytest.raises(EnvironmentProblem, match="needs a fast and a slow NUMA node: one "
                       "memory node"):
        numa_tiers(None, None, TOPOLOGY / "one_node" / "sys")
    with pytest.raises(UsageError, match="node 5 does not exist"):
        numa_tiers("0", "5", TOPOLOGY / "two_sockets" / "sys")
    with pytest.raises(UsageError, match="bad --slow-nodes"):
        numa_tiers("0", "x", TOPOLOGY / "two_sockets" / "sys")


@pytest.mark.parametrize("extra, message", [
    (["--tier", "numa"], None),                    # this machine's own answer, when one node
    (["--nodes", "0/"], "--nodes needs --tier numa"),
    (["--pairs", "1"], "--pairs must be 0 or between 2 and 8"),
    (["--tier", "numa", "--knob", "local=50"], "no --knob, --suite or --threads"),
])
def test_per_object_numa_bad_input_is_one_line(tmp_path, capsys, extra, message):
    from objtier.cli import main
    from objtier.tiers.numa_topology import detect_tiers

    if message is None:
        if detect_tiers("/sys").has_slow_tier:
            pytest.skip("this machine has a slow NUMA node: --tier numa is not refused here")
        message = "--tier numa needs a fast and a slow NUMA node: one memory node"
    recording = tmp_path / "rec.otr"
    recording.mkdir()
    code = main(["sweep", "--per-object", str(recording), *extra, "-o", str(tmp_path / "out"),
                 "--", "true"])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code != 0 and len(err) == 1 and message in err[0], err
    assert not (tmp_path / "out").exists()          # refused before anything was made
