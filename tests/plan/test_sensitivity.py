"""`objtier plan --sensitivity FILE`: a sensitivity.csv (written by the per-object sweep's own
writer) reorders the measured objects by measured loss per byte; bad or mismatched files are
one-line refusals."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

from objtier.plan import load_plan, object_table, rank
from objtier.plan.sensitivity import read_sensitivity, weight_by_sensitivity
from objtier.sweep.perobject import sensitivity_csv

from ..cli.helpers import assert_one_line_refusal, call
from .plan_synthetic import PAGE, table

# sampled: object 0 the densest, then 1, then 2; object 3 small and lukewarm (not measured)
OBJECTS = table([4, 4, 4, 1], [800, 400, 100, 60])


def sensitivity_rows(losses: dict[int, float]) -> list[dict]:
    """Rows as perobject.ratios() makes them, for objects of OBJECTS."""
    rows = []
    for obj, loss in losses.items():
        size = int(OBJECTS["size"][obj])
        ratio = 0.0 if math.isinf(loss) else 1.0 / (1.0 + loss)
        rows.append({"object": OBJECTS["label"][obj], "context_key": OBJECTS["context_key"][obj],
                     "occurrence": 0, "size": size, "access_share": 0.3,
                     "median_ratio": ratio, "loss": loss,
                     "loss_per_mib": loss / (size / (1 << 20)), "runs": 3, "failed": 0})
    return rows


def write_sensitivity(path, losses: dict[int, float]):
    path.write_text(sensitivity_csv(sensitivity_rows(losses)))
    return path


@pytest.fixture
def objects_csv(tmp_path):
    path = tmp_path / "objects.csv"
    pacsv.write_csv(pa.table(OBJECTS), path)
    return path


def fast_objects(plan) -> list[int]:
    return sorted(int(e["context_key"], 16) for e in plan["entries"] if e["tier"] == "fast")


def test_plan_orders_measured_objects_by_measured_loss(objects_csv, tmp_path, capsys):
    sens = write_sensitivity(tmp_path / "sensitivity.csv", {0: 0.05, 1: 2.0, 2: 0.5})
    plain, measured = tmp_path / "plain.json", tmp_path / "measured.json"
    code, err = call(capsys, "plan", objects_csv, "--fast", str(4 * PAGE), "--algo", "rank",
                     "--no-backfill", "-o", plain)
    assert code == 0, err
    code, err = call(capsys, "plan", objects_csv, "--fast", str(4 * PAGE), "--algo", "rank",
                     "--no-backfill", "--sensitivity", sens, "-o", measured)
    assert code == 0, err
    assert fast_objects(load_plan(plain)) == [0]          # sampled: the densest
    assert fast_objects(load_plan(measured)) == [1]       # measured: the most loss per byte
    assert f"--sensitivity {sens}" in load_plan(measured)["source"]
    # room for two: the two with the most measured loss, not the two most sampled
    code, err = call(capsys, "plan", objects_csv, "--fast", str(8 * PAGE), "--algo", "halving",
                     "--sensitivity", sens, "-o", measured)
    assert code == 0, err
    assert fast_objects(load_plan(measured)) == [1, 2]


def test_weights_keep_the_measured_total_and_rank_failed_first_insensitive_last(tmp_path):
    objects = object_table(OBJECTS)
    sens = read_sensitivity(write_sensitivity(tmp_path / "s.csv", {0: 1.0, 1: 3.0}))
    weighted, warnings = weight_by_sensitivity(objects, sens)
    assert warnings == []
    assert weighted.accesses[[0, 1]].sum() == pytest.approx(1200.0)
    assert weighted.accesses[1] == pytest.approx(3 * weighted.accesses[0])
    assert weighted.accesses[[2, 3]].tolist() == [100.0, 60.0]     # not measured: unchanged
    # object 2 failed when slow (loss inf), object 0 showed no loss, 1 some
    sens = read_sensitivity(write_sensitivity(tmp_path / "t.csv", {2: math.inf, 0: -0.2,
                                                                    1: 0.3}))
    weighted, warnings = weight_by_sensitivity(objects, sens)
    assert any("no loss" in w for w in warnings)
    density = weighted.accesses / weighted.size
    # 1 keeps its sampled weight (the only finite positive loss): above the unmeasured 3
    assert np.argsort(-density, kind="stable").tolist() == [2, 1, 3, 0]
    placement = rank(weighted, 4 * PAGE, PAGE)
    assert placement.fast_bytes[2] == 4 * PAGE and placement.fast_bytes[0] == 0


def test_partial_match_is_a_warning(objects_csv, tmp_path, capsys):
    rows = sensitivity_rows({1: 2.0})
    rows.append({**rows[0], "context_key": "00000000deadbeef", "object": "elsewhere"})
    sens = tmp_path / "s.csv"
    sens.write_text(sensitivity_csv(rows))
    out = tmp_path / "p.json"
    code, err = call(capsys, "plan", objects_csv, "--fast", str(4 * PAGE), "--algo", "rank",
                     "--sensitivity", sens, "-o", out)
    assert code == 0, err
    assert "1 of 2 object(s)" in err
    assert any("1 of 2 object(s)" in w for w in load_plan(out)["warnings"])


@pytest.mark.parametrize("content, fragment", [
    ("", "no rows"),
    ("context_key,occurrence,size\n0000000000000001,0,4096\n", "missing column(s) loss"),
    ("context_key,occurrence,loss\nnot-a-key,0,1.0\n", "16 lowercase hex"),
    ("context_key,occurrence,loss\n0000000000000001,0,lots\n", "loss a number"),
    ("context_key,occurrence,loss\n0000000000000001,0,nan\n", "not a number"),
    ("context_key,occurrence,loss\n0000000000000001,0,1\n0000000000000001,0,2\n", "twice"),
    ("context_key,occurrence,loss\n00000000000000ff,0,1.0\n", "none of its 1 object(s)"),
    (b"\xff\xfe\x00garbage", "cannot read"),
])
def test_bad_or_mismatched_files_are_one_line_refusals(objects_csv, tmp_path, capsys,
                                                       content, fragment):
    sens = tmp_path / "bad.csv"
    if isinstance(content, bytes):
        sens.write_bytes(content)
    else:
        sens.write_text(content)
    code, err = call(capsys, "plan", objects_csv, "--fast", "50%", "--sensitivity", sens,
                     "-o", tmp_path / "p.json")
    assert_one_line_refusal(code, err, fragment)
    assert not (tmp_path / "p.json").exists()


def test_missing_file_and_per_phase_or_page_plans_are_refused(objects_csv, tmp_path, capsys):
    code, err = call(capsys, "plan", objects_csv, "--fast", "50%", "--sensitivity",
                     tmp_path / "absent.csv", "-o", tmp_path / "p.json")
    assert_one_line_refusal(code, err, "absent.csv")
    sens = write_sensitivity(tmp_path / "s.csv", {0: 1.0})
    code, err = call(capsys, "plan", objects_csv, "--fast", "50%", "--algo", "pages",
                     "--sensitivity", sens, "-o", tmp_path / "p.json")
    assert_one_line_refusal(code, err, "--sensitivity")
