"""Which advice-call budget `objtier run` gives a plan's dynamic schedule."""

from __future__ import annotations

from objtier.record import dynamic_run


def test_the_budget_given_then_the_plans_then_the_default():
    made_for_500 = {"dynamic": {"advice_rate": 500, "steps": []}}
    unrecorded = {"dynamic": {"steps": []}}
    assert dynamic_run.advice_rate(made_for_500, 300) == 300
    assert dynamic_run.advice_rate(made_for_500, None) == 500
    assert dynamic_run.advice_rate(unrecorded, None) == dynamic_run.DEFAULT_ADVICE_RATE
    assert dynamic_run.advice_rate({}, None) == dynamic_run.DEFAULT_ADVICE_RATE
