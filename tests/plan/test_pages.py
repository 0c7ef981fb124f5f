"""The `pages` planner: ranking pages by their own samples, filling with unsampled pages, the
ranges in the plan file and its text form, and bad ranges."""

from __future__ import annotations

import numpy as np
import pytest

from objtier.errors import UsageError
from objtier.plan import Budget, build_plan, pages, parse_text, to_text, validate_plan
from objtier.plan.pages import runs

PG = 4096


def table():
    return {"object": [0, 1, 2], "context_key": ["a" * 16, "b" * 16, "c" * 16],
            "occurrence": [0, 0, 0], "size": [10 * PG, 2 * PG, 3 * PG + 100],
            "accesses": [10.0, 50.0, 1.0], "label": ["x", "y", "z"]}


SAMPLES = {"object": [0, 0, 0, 1, 1, 2], "page": [3, 7, 8, 0, 1, 2],
           "samples": [5, 4, 4, 1, 1, 9]}


def test_pages_ranked_by_their_own_samples():
    # 6 pages: object 2's page 2 (9), object 0's pages 3, 7, 8 (5, 4, 4), object 1's 0, 1 (1)
    p = pages(table(), 6 * PG, PG, page_samples=SAMPLES)
    assert list(p.tier) == ["pages", "fast", "pages"]
    assert list(p.fast_bytes) == [3 * PG, 2 * PG, PG]
    assert p.ranges[0].tolist() == [[3 * PG, PG], [7 * PG, 2 * PG]]
    assert p.ranges[1] is None and p.ranges[2].tolist() == [[2 * PG, PG]]
    assert p.used_bytes == 6 * PG


def test_ties_go_to_the_denser_object_and_the_budget_is_whole_pages():
    # 3 pages: 9, 5, then a tie at 4 between object 0's pages 7 and 8: page order decides
    p = pages(table(), 3 * PG + PG // 2, PG, page_samples=SAMPLES)
    assert p.ranges[0].tolist() == [[3 * PG, PG], [7 * PG, PG]]
    assert p.tier[1] == "slow" and p.fast_bytes[1] == 0
    # same sample count in two objects: object 1 (50 accesses / 2 pages) beats object 0
    tie = {"object": [0, 1], "page": [0, 0], "samples": [2, 2]}
    p = pages(table(), PG, PG, page_samples=tie)
    assert list(p.fast_bytes) == [0, PG, 0]


def test_room_left_is_filled_with_unsampled_pages_densest_object_first():
    p = pages(table(), 9 * PG, PG, page_samples=SAMPLES)
    # 6 sampled pages, then 3 more: object 1 has none unsampled, object 0 (next densest) gets
    # its unsampled pages 0, 1, 2 in address order
    assert p.ranges[0].tolist() == [[0, 4 * PG], [7 * PG, 2 * PG]]
    assert "3 by touches, 3 unsampled" in p.reason[0]
    assert p.used_bytes == 9 * PG


def test_pages_beyond_the_object_and_unknown_objects_are_ignored():
    bad = {"object": [0, 0, 9], "page": [10, 2, 0], "samples": [100, 1, 100]}
    p = pages(table(), PG, PG, page_samples=bad)    # page 10 of a 10-page object: no such page
    assert p.ranges[0].tolist() == [[2 * PG, PG]]


def test_no_page_samples_is_a_usage_error():
    with pytest.raises(UsageError, match="samples per page"):
        pages(table(), PG, PG)


def test_runs():
    assert runs(np.array([5, 1, 2, 3, 9, 5])).tolist() == [[1, 3], [5, 1], [9, 1]]
    assert runs(np.array([], dtype=np.int64)).shape == (0, 2)


def plan_doc():
    from objtier.plan import object_table
    objects = object_table(table())
    p = pages(objects, 6 * PG, PG, page_samples=SAMPLES)
    return build_plan(objects, p, Budget(6 * PG, "24K", None, 0), None)


def test_plan_file_and_text_form_carry_the_ranges():
    doc = plan_doc()
    entries = {e["context_key"][0]: e for e in doc["entries"]}
    assert entries["a"]["tier"] == "pages"
    assert entries["a"]["ranges"] == [[3 * PG, PG], [7 * PG, 2 * PG]]
    assert "ranges" not in entries["b"]
    text = to_text(doc)
    assert f"aaaaaaaaaaaaaaaa 0 {10 * PG} {10 * PG} pages {3 * PG} * {3 * PG}:{PG},{7 * PG}:" \
           f"{2 * PG}\n" in text
    back = {e["context_key"][0]: e for e in parse_text(text)["entries"]}
    assert back["a"]["ranges"] == entries["a"]["ranges"] and "ranges" not in back["b"]


@pytest.mark.parametrize("ranges", [
    None, [], [[0, PG]], [[PG, PG], [0, 2 * PG]], [[0, 2 * PG], [PG, PG]], [[0, 0], [0, 3 * PG]],
    [[0, 3 * PG, 1]], [["0", 3 * PG]],
])
def test_bad_ranges_are_refused(ranges):
    doc = plan_doc()
    entry = next(e for e in doc["entries"] if e["tier"] == "pages")
    if ranges is None:
        del entry["ranges"]
    else:
        entry["ranges"] = ranges
    with pytest.raises(UsageError, match="pages entry needs ranges"):
        validate_plan(doc)
