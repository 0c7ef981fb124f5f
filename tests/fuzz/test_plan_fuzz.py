"""Fuzzing the plan readers: the JSON plan (objtier.plan.load_plan) and the text form's
reference parser (objtier.plan.parse_text). Every corrupt input is a UsageError with a
one-line message, never another exception; every plan load_plan accepts can be turned into
the text form the runtime reads, and parsed back.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from objtier.errors import UsageError
from objtier.enforcement import plan_min_size, plan_warnings
from objtier.plan import load_plan, parse_text, to_text

from .seeds import fuzz_settings, plan_document, plan_json, plan_text

FUZZ = fuzz_settings(120)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("planfuzz") / "plan.json"


def one_line(error: Exception) -> None:
    message = str(error)
    assert message and "\n" not in message, f"not one line: {message!r}"


def load_and_use(path) -> str:
    """load_plan, then what `objtier run` does with an accepted plan."""
    try:
        plan = load_plan(path)
    except UsageError as error:
        one_line(error)
        return "UsageError"
    text = to_text(plan)
    parsed = parse_text(text)  # an accepted plan has a text form the reference parser reads
    assert len(parsed["entries"]) == len(plan["entries"])
    assert [e["size_max"] for e in parsed["entries"]] == [e["size_max"] for e in plan["entries"]]
    plan_min_size(plan)
    plan_warnings(plan, "/bin/true")
    return "ok"


def test_the_seed_plan_is_accepted(scratch):
    scratch.write_text(plan_json())
    assert load_and_use(scratch) == "ok"
    assert parse_text(plan_text())["entries"]


# -- JSON plans ---------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.text(max_size=12)
    | st.integers() | st.sampled_from([-1, 0, 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 10**30,
                                       1e30, "*", "fast", "0000000000000000"]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8),
                                                                       children, max_size=3),
    max_leaves=6)


def _paths(node, prefix=()):
    """Every (container path, key) of a JSON tree, for structural mutation."""
    items = node.items() if isinstance(node, dict) else enumerate(node) \
        if isinstance(node, list) else ()
    for key, child in items:
        yield prefix, key
        yield from _paths(child, prefix + (key,))


def _at(node, path):
    for key in path:
        node = node[key]
    return node


@FUZZ
@given(data=st.data())
def test_json_plans_with_fields_replaced_or_removed(scratch, data):
    plan = plan_document()
    for _ in range(data.draw(st.integers(1, 3))):
        paths = list(_paths(plan))
        if not paths:
            break
        path, key = data.draw(st.sampled_from(paths))
        container = _at(plan, path)
        if data.draw(st.booleans()):
            container[key] = data.draw(JSON_VALUES)
        elif isinstance(container, dict):
            del container[key]
        else:
            container.pop(key)
    scratch.write_text(json.dumps(plan))
    load_and_use(scratch)


@FUZZ
@given(data=st.data())
def test_json_plan_bytes_truncated_or_mutated(scratch, data):
    raw = bytearray(plan_json().encode())
    if data.draw(st.booleans()):
        raw = raw[:data.draw(st.integers(0, len(raw) - 1))]
    else:
        for position, value in data.draw(st.lists(
                st.tuples(st.integers(0, len(raw) - 1), st.integers(0, 255)),
                min_size=1, max_size=6)):
            raw[position] = value
    scratch.write_bytes(bytes(raw))
    load_and_use(scratch)


@FUZZ
@given(value=JSON_VALUES)
def test_json_documents_that_are_not_plans(scratch, value):
    scratch.write_text(json.dumps(value))
    assert load_and_use(scratch) == "UsageError"


@pytest.mark.parametrize("field, value", [
    ("size_max", 10**30), ("size_max", 1e30), ("size_max", 2**63), ("fast_bytes", -1),
    ("occurrence", 2**64 - 1), ("size_min", True), ("phase", ["*"]), ("phase", {"*": 1}),
    ("context_key", "00000000000000aa\n"),
])
def test_out_of_range_entry_values_are_refused(scratch, field, value):
    plan = plan_document()
    plan["entries"][0][field] = value
    scratch.write_text(json.dumps(plan))
    with pytest.raises(UsageError) as error:
        load_plan(scratch)
    one_line(error.value)


@pytest.mark.parametrize("budget", [-1, 0, 2**63, 1e9, "1G", None])
def test_negative_zero_or_wrong_budgets_are_refused(scratch, budget):
    plan = plan_document()
    plan["budget"]["bytes"] = budget
    scratch.write_text(json.dumps(plan))
    with pytest.raises(UsageError, match="budget"):
        load_plan(scratch)


def test_names_with_no_utf8_form_are_refused(scratch):
    plan = plan_document()
    plan["phases"][1]["name"] = plan["phases"][1]["target"] = "\ud800"
    for entry in plan["entries"]:
        if entry["phase"] != "*":
            entry["phase"] = "\ud800"
    scratch.write_text(json.dumps(plan))  # json escapes the lone surrogate as \ud800
    with pytest.raises(UsageError, match="not valid Unicode"):
        load_plan(scratch)


# -- the text form --------------------------------------------------------------------------

def parse_or_refuse(text: str) -> str:
    try:
        parse_text(text)
    except UsageError as error:
        one_line(error)
        return "UsageError"
    return "ok"


FIELD_VALUES = st.one_of(
    st.text(max_size=24),
    st.sampled_from(["-1", "+5", " 5", "5_000", "٣", "18446744073709551615",
                     "18446744073709551616", "99999999999999999999999", "1e30", "*", "%",
                     "%zz", "%2", "0:0", "0:1,0:1", "4096:4096,0:4096", "pages", "fast", "-",
                     "0000000000000000", "00000000000000AA"]))


@FUZZ
@given(data=st.data())
def test_text_plans_with_fields_replaced(data):
    lines = [line.split(" ") for line in plan_text().split("\n")]
    for _ in range(data.draw(st.integers(1, 3))):
        row = data.draw(st.integers(1, len(lines) - 1))
        if not lines[row] or lines[row] == [""]:
            continue
        column = data.draw(st.integers(0, len(lines[row]) - 1))
        lines[row][column] = data.draw(FIELD_VALUES)
        if data.draw(st.booleans()):
            lines[row] = lines[row][:data.draw(st.integers(0, len(lines[row])))]
    parse_or_refuse("\n".join(" ".join(fields) for fields in lines))


@FUZZ
@given(data=st.data())
def test_text_plans_truncated_or_mutated(data):
    text = plan_text()
    if data.draw(st.booleans()):
        text = text[:data.draw(st.integers(0, len(text) - 1))]
    else:
        chars = list(text)
        for position, char in data.draw(st.lists(
                st.tuples(st.integers(0, len(chars) - 1), st.characters()), min_size=1,
                max_size=6)):
            chars[position] = char
        text = "".join(chars)
    parse_or_refuse(text)


@pytest.mark.parametrize("line", [
    "budget -1 4096", "budget 1e30 4096", "00000000000000aa * 1 1000000000000000000000000000000 "
    "fast 1 *", "00000000000000aa * 5 4 fast 1 *", "00000000000000aa 18446744073709551615 1 2 "
    "fast 1 *", "00000000000000aa * 1 2 pages 1 *", "00000000000000aa * 1 9000 pages 8192 * "
    "4096:4096,0:4096", "phase a * nowhere",
])
def test_text_records_the_runtime_refuses_are_refused(line):
    assert parse_or_refuse(f"objtier-plan 1\n{line}\n") == "UsageError"


def test_more_phases_than_the_runtime_takes_are_refused():
    phases = "".join(f"phase p{i} * p{i}\n" for i in range(256))
    assert parse_or_refuse(f"objtier-plan 1\n{phases}") == "UsageError"
    assert parse_or_refuse(f"objtier-plan 1\n{phases[:phases.rindex('phase')]}") == "ok"
