"""The models that predict a combined placement from per-object (and pair) measurements."""

from __future__ import annotations

import math

import pytest

from objtier.sweep.interaction import (clipped, compare_models, pair_terms, predict,
                                       ratio_loss)

LOSSES = {"a": 1.0, "b": 0.5, "c": -0.2, "x": math.inf}


def test_losses_are_clipped_and_failures_infinite():
    assert clipped(-0.2) == 0.0 and clipped(0.3) == 0.3
    assert math.isinf(clipped(None)) and math.isinf(clipped(float("nan")))
    assert ratio_loss(0.5) == pytest.approx(1.0) and ratio_loss(1.2) == 0.0
    assert math.isinf(ratio_loss(0.0)) and math.isinf(ratio_loss(None))


def test_additive_and_multiplicative_models():
    assert predict("additive", ["a", "b"], LOSSES) == pytest.approx(1 / 2.5)
    assert predict("multiplicative", ["a", "b"], LOSSES) == pytest.approx(1 / 3.0)
    assert predict("additive", ["c"], LOSSES) == 1.0          # noise: no loss
    assert predict("multiplicative", [], LOSSES) == 1.0
    for model in ("additive", "multiplicative", "pairwise"):
        assert predict(model, ["a", "x"], LOSSES) == 0.0      # a failed object: nothing left
    # compounding is never more optimistic than adding
    for slow in (["a"], ["a", "b"], ["a", "b", "c"]):
        assert predict("multiplicative", slow, LOSSES) <= predict("additive", slow, LOSSES)
    with pytest.raises(ValueError):
        predict("quadratic", ["a"], LOSSES)


def test_pairwise_model_adds_measured_interactions_only():
    # a and b together: ratio 0.25 -> loss 3 = 1 + 0.5 + w, w = 1.5
    terms = pair_terms(LOSSES, {frozenset(("a", "b")): 0.25, frozenset(("a", "c")): 0.0})
    assert terms[frozenset(("a", "b"))] == pytest.approx(1.5)
    assert math.isinf(terms[frozenset(("a", "c"))])           # the pair never finished
    assert predict("pairwise", ["a", "b"], LOSSES, terms) == pytest.approx(0.25)
    # b and c were not measured together: additive for that pair
    assert predict("pairwise", ["b", "c"], LOSSES, terms) == pytest.approx(1 / 1.5)
    assert predict("pairwise", ["a", "b", "c"], LOSSES, terms) == 0.0
    # a pair faster than its parts (negative w) cannot make the set faster than all fast
    less = pair_terms(LOSSES, {frozenset(("a", "b")): 1.0})
    assert less[frozenset(("a", "b"))] == pytest.approx(-1.5)
    assert predict("pairwise", ["a", "b"], LOSSES, less) == 1.0


def test_compare_models_leaves_fitted_pairs_out_of_the_error():
    terms = pair_terms(LOSSES, {frozenset(("a", "b")): 0.25})
    result = compare_models([{"slow": ["a", "b"], "measured": 0.25},
                             {"slow": ["a", "b", "c"], "measured": 0.3},
                             {"slow": ["b", "c"], "measured": None}], LOSSES, terms)
    first, second, third = result["checks"]
    assert first["in_sample"] and not second["in_sample"]
    assert first["pairwise_error"] == pytest.approx(0.0)
    assert second["additive"] == pytest.approx(1 / 2.5)
    assert second["additive_error"] == pytest.approx(0.3 - 0.4)
    assert third["additive_error"] is None
    models = result["models"]
    # pairwise: only the second check counts (the first is its fitted pair, the third has no
    # measurement); the other models never saw the pair, so the first counts for them
    assert models["pairwise"] == {"mean_abs_error": pytest.approx(0.05), "checks": 1}
    assert models["multiplicative"]["checks"] == 2
    assert models["multiplicative"]["mean_abs_error"] == pytest.approx(
        (abs(0.25 - 1 / 3) + abs(0.3 - 1 / 3)) / 2)
