"""Which objects a plan names for large folios (plan.folios): swept objects with a slow part,
and the records' way through the plan file, its text form and validation."""

from __future__ import annotations

import json

import numpy as np
import pytest

from objtier.errors import UsageError
from objtier.plan import build_plan, load_plan, object_table, parse_budget, parse_text, spill, \
    to_text, write_plan
from objtier.plan.folios import large_folio_objects
from .plan_synthetic import PAGE, table

# object 0: swept, too big to be fast (split); 1: swept but small and hot (wholly fast);
# 2: gathered, slow; 3: swept, slow, two occurrences of one context; 4: share unknown
COLUMNS = table([20, 1, 8, 4, 4, 4], [200, 50, 8, 1, 1, 1], contexts=[1, 2, 3, 4, 4, 5],
                occurrences=[0, 0, 0, 0, 1, 0])
COLUMNS["sequential"] = np.array([0.95, 0.99, 0.3, 0.92, 0.91, np.nan])
OBJS = object_table(COLUMNS)


def make_plan():
    budget = parse_budget(str(10 * PAGE), 0)
    return build_plan(OBJS, spill(OBJS, budget.bytes), budget, None)


def test_swept_objects_with_a_slow_part_get_large_folios():
    plan = make_plan()
    chosen = [(r["context_key"], r["occurrence"], r["size_min"]) for r in plan["large_folios"]]
    assert chosen == [(f"{1:016x}", 0, 20 * PAGE), (f"{4:016x}", 0, 4 * PAGE),
                      (f"{4:016x}", 1, 4 * PAGE)]
    assert plan["large_folios"][0]["sequential"] == 0.95


def test_only_objects_predicted_a_share_of_the_swapins_keep_their_folios():
    """folios.worth_naming: a large-folio record is kept where the model predicts its object
    at least MIN_SHARE of the plan's swap-ins (a folio can spare at most those)."""
    from objtier.plan.folios import MIN_SHARE, worth_naming

    records = make_plan()["large_folios"]
    predicted = np.zeros(len(OBJS))
    predicted[0] = 900.0        # object 0: 90 % of the swap-ins
    predicted[3] = 100.0 * MIN_SHARE * 0.99 * 10   # object 3: just under the share
    predicted[2] = 1000.0 - predicted[0] - predicted[3]
    kept, dropped = worth_naming(records, OBJS, predicted)
    assert [(r["context_key"], r["occurrence"]) for r in kept] == [(f"{1:016x}", 0)]
    assert [(r["context_key"], r["occurrence"]) for r in dropped] == [(f"{4:016x}", 0),
                                                                     (f"{4:016x}", 1)]
    # no prediction at all: nothing is worth naming
    assert worth_naming(records, OBJS, np.zeros(len(OBJS)))[0] == []


def test_no_sequential_column_means_no_large_folios():
    plain = object_table({k: v for k, v in COLUMNS.items() if k != "sequential"})
    budget = parse_budget(str(10 * PAGE), 0)
    assert large_folio_objects(plain, {"*": spill(plain, budget.bytes)}) == []


def test_large_folios_survive_json_and_text(tmp_path):
    plan = make_plan()
    write_plan(plan, tmp_path / "plan.json")
    assert load_plan(tmp_path / "plan.json")["large_folios"] == plan["large_folios"]
    text = to_text(plan)
    assert f"folio {1:016x} 0 {20 * PAGE} {20 * PAGE}" in text.splitlines()
    keys = ("context_key", "occurrence", "size_min", "size_max")
    assert parse_text(text)["large_folios"] == [{k: r[k] for k in keys}
                                                for r in plan["large_folios"]]


@pytest.mark.parametrize("record", [
    {"context_key": "XYZ", "occurrence": 0, "size_min": 1, "size_max": 2},
    {"context_key": "0" * 16, "occurrence": -1, "size_min": 1, "size_max": 2},
    {"context_key": "0" * 16, "occurrence": None, "size_min": 3, "size_max": 2},
    "not a record",
])
def test_bad_large_folio_records_are_one_line_errors(tmp_path, record):
    plan = json.loads(json.dumps(make_plan()))
    plan["large_folios"] = [record]
    (tmp_path / "bad.json").write_text(json.dumps(plan))
    with pytest.raises(UsageError, match="large_folios record 0") as info:
        load_plan(tmp_path / "bad.json")
    assert "\n" not in str(info.value)
