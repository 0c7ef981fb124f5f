"""Predicting the FoM of a placement with several objects slow from per-object measurements.

Inputs are the per-object table (perobject.ratios(): each measured object's `loss`, the extra
time when it alone is slow, loss = 1 / ratio - 1) and, optionally, measured pairs (two objects
slow together, the rest fast). A negative loss (faster when slow) is run-to-run noise and counts
as 0; an infinite loss (every run failed) makes the prediction 0. The models, for a slow set S:

    additive        FoM(S) = 1 / (1 + sum_i loss_i)
    multiplicative  FoM(S) = prod_i 1 / (1 + loss_i)       (each slow object stretches the time
                                                            the others left: costs compound)
    pairwise        FoM(S) = 1 / (1 + sum_i loss_i + sum_{i<j in S} w_ij)
                    w_ij = loss_ij - loss_i - loss_j, from the pair's measured ratio; a pair not
                    measured has w_ij = 0 (the additive model for it)

The multiplicative prediction is never above the additive one (prod (1 + l) >= 1 + sum l).
Only the pairwise model needs more runs: one arm per pair. Which model predicts combined runs
best on this machine is measured in bench/sweep_perobject.py (docs/benchmarks.md).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from typing import Any

MODELS = ("additive", "multiplicative", "pairwise")


def clipped(loss: float | None) -> float:
    """A loss as the models use it: noise below 0 is 0, a missing loss (no FoM) is infinite."""
    if loss is None or (isinstance(loss, float) and math.isnan(loss)):
        return math.inf
    return max(0.0, float(loss))


def ratio_loss(ratio: float | None) -> float:
    """1 / ratio - 1, clipped; a ratio of 0 or None (every run failed) is an infinite loss."""
    if not ratio:
        return math.inf
    return clipped(1.0 / ratio - 1.0)


def _fom(loss: float) -> float:
    return 0.0 if math.isinf(loss) else 1.0 / (1.0 + loss)


def pair_terms(losses: Mapping[str, float], pairs: Mapping[frozenset, float]
               ) -> dict[frozenset, float]:
    """w_ij = loss_ij - loss_i - loss_j for every measured pair (ratio_ij); infinite stays
    infinite."""
    out = {}
    for key, ratio in pairs.items():
        a, b = sorted(key)
        both = ratio_loss(ratio)
        single = clipped(losses.get(a)) + clipped(losses.get(b))
        out[key] = math.inf if math.isinf(both) else both - (0.0 if math.isinf(single)
                                                               else single)
    return out


def predict(model: str, slow: Iterable[str], losses: Mapping[str, float],
            terms: Mapping[frozenset, float] | None = None) -> float:
    """Predicted FoM ratio (to all fast) with the objects `slow` slow; losses by label."""
    slow = list(slow)
    each = [clipped(losses.get(label)) for label in slow]
    if model == "additive":
        return _fom(sum(each))
    if model == "multiplicative":
        return 0.0 if any(math.isinf(x) for x in each) else math.prod(_fom(x) for x in each)
    if model == "pairwise":
        total = sum(each)
        for a, b in itertools.combinations(slow, 2):
            total += (terms or {}).get(frozenset((a, b)), 0.0)
        return _fom(max(0.0, total))
    raise ValueError(f"unknown model {model!r}")


def compare_models(checks: list[dict[str, Any]], losses: Mapping[str, float],
                   terms: Mapping[frozenset, float]) -> dict[str, Any]:
    """Predictions of every model for combined placements [{"slow": [labels], "measured":
    ratio}], with the error (measured - predicted) per check and the mean absolute error per
    model. A check whose slow set is a measured pair is marked in_sample: the pairwise model
    was fitted on that pair's own (separate) runs, so it is left out of the pairwise model's
    error only (the other models never see pair runs)."""
    rows = []
    for check in checks:
        slow = list(check["slow"])
        row = {"slow": slow, "measured": check["measured"],
               "in_sample": len(slow) == 2 and frozenset(slow) in terms}
        for model in MODELS:
            p = predict(model, slow, losses, terms)
            row[model] = p
            row[f"{model}_error"] = (None if check["measured"] is None
                                     else check["measured"] - p)
        rows.append(row)
    summary = {}
    for model in MODELS:
        errors = [abs(r[f"{model}_error"]) for r in rows if r[f"{model}_error"] is not None
                  and not (model == "pairwise" and r["in_sample"])]
        summary[model] = {"mean_abs_error": sum(errors) / len(errors) if errors else None,
                          "checks": len(errors)}
    return {"checks": rows, "models": summary}
