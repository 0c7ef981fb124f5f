"""The C-AMAT model gives the same counts as the model before its hot path was rebuilt, on
streams of every kind it handles (one core and several, coherence and false sharing, the far
level with and without pinned objects, both interleavings): integer counts equal, shares of
cycles (sums of fractions, so their rounding depends on the order of addition) within 1e-9."""

from __future__ import annotations

import json

import pytest

from tests.camat.model_cases import CASES, FLOAT_FIELDS, GOLDEN, INT_FIELDS, as_dict, run_case

EXPECTED = json.loads(GOLDEN.read_text())


@pytest.mark.parametrize("name", sorted(CASES))
def test_counts_match_the_previous_model(name):
    got, want = as_dict(run_case(name)), EXPECTED[name]
    assert got["cycles"] == want["cycles"]
    for part in ("totals", "by_object", "by_region"):
        assert len(got[part]) == len(want[part])
        for i, (g, w) in enumerate(zip(got[part], want[part])):
            for f in INT_FIELDS:
                assert g[f] == w[f], f"{part}[{i}].{f}: {g[f]} != {w[f]}"
            for f in FLOAT_FIELDS:
                assert g[f] == pytest.approx(w[f], rel=1e-9, abs=1e-6), f"{part}[{i}].{f}"


def test_the_cases_exercise_every_mechanism():
    """The fixture is only a check where the streams reach what it is meant to pin down."""
    tot = {name: EXPECTED[name]["totals"] for name in CASES}
    assert tot["sharing-4core"][0]["false_sharing"] > 1000
    assert tot["mixed-2core-lag"][0]["coherence_misses"] > 1000
    assert tot["random-far"][4]["accesses"] > 10_000
    assert tot["random-far-pinned"][4]["accesses"] < tot["random-far"][4]["accesses"]
    assert all(t[3]["accesses"] > 1000 for n, t in tot.items() if n != "sharing-4core")
