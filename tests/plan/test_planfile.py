"""The plan file: JSON round trip, validation, grouping by context, and the text form."""

from __future__ import annotations

import json

import pytest

from objtier.errors import UsageError
from objtier.plan import (ROOT, build_plan, load_plan, object_table, parse_budget, parse_text,
                          plan_phases, rank, spill, to_text, write_plan)
from objtier.plan.textexport import escape, unescape
from .plan_synthetic import PAGE, table

# contexts: 0xa has three objects, all slow (cold, one entry); 0xb has two, one fast and one
# split (one entry each); 0xc one fast object
OBJS = object_table(table([1, 1, 1, 6, 5, 2], [0, 0, 0, 60, 40, 30],
                          contexts=[0xa, 0xa, 0xa, 0xb, 0xb, 0xc],
                          occurrences=[0, 1, 2, 0, 1, 0]))
BINARY = {"path": "/opt/app/bin/app", "build_id": "ab" * 20, "size": 12345}


def make_plan():
    budget = parse_budget(str(10 * PAGE), 0)
    return build_plan(OBJS, spill(OBJS, budget.bytes), budget, BINARY, source="run.otr")


def test_entries_are_keyed_by_context_with_occurrence_and_size_range():
    plan = make_plan()
    assert plan["format"] == "objtier-plan" and plan["version"] == 1
    assert plan["algorithm"]["name"] == "spill"
    assert plan["budget"]["bytes"] == 10 * PAGE and plan["budget"]["page_bytes"] == PAGE
    got = [(e["context_key"], e["occurrence"], e["size_min"], e["size_max"], e["objects"],
            e["tier"], e["fast_bytes"], e["phase"]) for e in plan["entries"]]
    # spill: b#0 (6 pages, 10/page) fits; c#0 (2 pages, 15/page) went first; b#1 split at 2 pages
    assert got == [
        ("000000000000000a", None, PAGE, PAGE, 3, "slow", 0, ROOT),
        ("000000000000000b", 0, 6 * PAGE, 6 * PAGE, 1, "fast", 6 * PAGE, ROOT),
        ("000000000000000b", 1, 5 * PAGE, 5 * PAGE, 1, "split", 2 * PAGE, ROOT),
        ("000000000000000c", 0, 2 * PAGE, 2 * PAGE, 1, "fast", 2 * PAGE, ROOT),
    ]
    assert plan["entries"][0]["label"] == "main > alloc0"
    assert plan["summary"][0]["fast_bytes"] == 10 * PAGE


def test_json_round_trip(tmp_path):
    plan = make_plan()
    path = tmp_path / "plan.json"
    write_plan(plan, path)
    assert load_plan(path) == json.loads(json.dumps(plan))
    assert not list(tmp_path.glob(".*tmp*"))


@pytest.mark.parametrize("mutate, message", [
    (lambda p: p.update(format="other"), "not an objtier plan"),
    (lambda p: p.update(version=3), "plan version 3 is not supported"),
    (lambda p: p.update(version=2), "schedules were removed"),
    (lambda p: p.update(dynamic={"page_bytes": 4096}), "schedules were removed"),
    (lambda p: p.pop("version"), "no integer version"),
    (lambda p: p["entries"][0].update(tier="warm"), "tier must be one of"),
    (lambda p: p["entries"][0].update(context_key="XYZ"), "context_key"),
    (lambda p: p["entries"][0].update(size_min=10**9), "size_min > size_max"),
    (lambda p: p["entries"][0].update(phase="nope"), "unknown phase"),
    (lambda p: p.update(budget=None), "no valid budget"),
])
def test_load_rejects_bad_plans_with_one_line(tmp_path, mutate, message):
    plan = json.loads(json.dumps(make_plan()))
    mutate(plan)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(plan))
    with pytest.raises(UsageError, match=message) as info:
        load_plan(path)
    assert "\n" not in str(info.value)


def test_load_rejects_non_json_and_missing_files(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("{not json")
    with pytest.raises(UsageError, match="not a plan file"):
        load_plan(path)
    with pytest.raises(UsageError, match="cannot read plan"):
        load_plan(tmp_path / "missing.json")


def test_text_export_round_trip():
    plan = make_plan()
    text = to_text(plan)
    lines = text.splitlines()
    assert lines[0] == "objtier-plan 1"
    assert f"budget {10 * PAGE} {PAGE}" in lines
    assert "000000000000000b 1 20480 20480 split 8192 *" in lines
    assert "000000000000000a * 4096 4096 slow 0 *" in lines
    parsed = parse_text(text)
    assert parsed["binary"] == {"build_id": "ab" * 20, "size": 12345, "path": "/opt/app/bin/app"}
    assert parsed["budget"] == {"bytes": 10 * PAGE, "page_bytes": PAGE}
    keys = ("context_key", "occurrence", "size_min", "size_max", "tier", "fast_bytes", "phase")
    assert parsed["entries"] == [{k: e[k] for k in keys} for e in plan["entries"]]
    entry_lines = [line for line in lines if len(line.split(" ")[0]) == 16]
    assert len(entry_lines) == len(plan["entries"])
    assert all(len(line.split(" ")) == 7 for line in entry_lines)


def test_text_names_are_escaped():
    for name in ["solve loop", "100%", "a#b", "tab\there", "ünï", ""]:
        assert " " not in escape(name) and "\t" not in escape(name)
        assert unescape(escape(name)) == name
    with pytest.raises(UsageError, match="line 2"):
        parse_text("objtier-plan 1\nphase only-two\n")
    with pytest.raises(UsageError, match="first line"):
        parse_text("plan 1\n")


def test_phase_plans_carry_phase_names_and_merges():
    phases = {"phase": ["load graph", "bfs"], "parent": [None, None],
              "start_ns": [0, 10**9], "end_ns": [10**9, 3 * 10**9]}
    accesses = {"phase": ["load graph", "bfs"], "object": [3, 4], "accesses": [60.0, 40.0]}
    result = plan_phases(OBJS, phases, accesses, rank, 6 * PAGE, PAGE)
    plan = build_plan(OBJS, result, parse_budget(str(6 * PAGE), 0), BINARY)
    assert [p["name"] for p in plan["phases"]] == [ROOT, "load graph", "bfs"]
    by_phase = {}
    for e in plan["entries"]:
        by_phase.setdefault(e["phase"], set()).add((e["context_key"][-1], e["occurrence"],
                                                    e["tier"]))
    assert ("b", 0, "fast") in by_phase["load graph"]
    assert ("b", 1, "fast") in by_phase["bfs"] and ("b", 0, "slow") in by_phase["bfs"]
    text = to_text(plan)
    assert "phase load%20graph * load%20graph" in text
    assert parse_text(text)["phases"][1] == {"name": "load graph", "parent": "*",
                                             "target": "load graph"}


def test_objects_with_an_unknown_context_stay_slow_and_out_of_the_plan():
    raw = table([1, 1], [100, 1])
    raw["context_key"] = ["", "0000000000000001"]
    objs = object_table(raw)
    for algo in (rank, spill):
        p = algo(objs, 10 * PAGE)
        assert p.tier.tolist() == ["slow", "fast"]
        assert p.reason[0].startswith("unknown allocation context")
    plan = build_plan(objs, rank(objs, 10 * PAGE), parse_budget("10M", 0), BINARY)
    assert [e["context_key"] for e in plan["entries"]] == ["0000000000000001"]
    assert "1 object(s) with an unknown allocation context" in plan["warnings"][0]
