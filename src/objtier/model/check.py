"""Every run checks the prediction: the kernel model's swap-ins and time beside what was
measured.

Inputs are plain numbers: the plan document's "model" section (pipeline.model_section) and the
medians of measured runs. Time is predicted as the unlimited run's wall time plus swap-ins x the
cost of one swap-in, and that cost is measured from the kernel arm (its wall time over the
unlimited one, per swap-in it took): so the kernel arm's time is the calibration, not a check,
and only the plan arm's time is predicted. When compare fitted the model to its first kernel run
(pipeline: calibrate_to), the kernel arm's prediction is no independent check, and says so. A prediction is off when it differs from the
measurement by more than OFF of the larger of the two and by more than FLOOR swap-ins (a few
hundred swap-ins either way are noise next to the program's own page faults).
Units: swap-ins (counts), seconds.
"""

from __future__ import annotations

from typing import Any

OFF = 0.25
FLOOR = 500


def error(predicted: float, measured: float) -> float | None:
    """(predicted - measured) / measured; None when nothing was measured."""
    return None if measured <= 0 else (predicted - measured) / measured


def is_off(predicted: float, measured: float) -> bool:
    gap = abs(predicted - measured)
    return gap > FLOOR and gap > OFF * max(predicted, measured, 1.0)


SWAPIN_FIELDS = ("memcg_refault_anon", "pswpin", "memcg_pgmajfault", "major_faults")


def measured_swapins(get) -> float | None:
    """A run's (or an arm's medians') swap-ins in pages, as the model counts them: the
    cgroup's anonymous refaults, else the pages swapped in, else the major faults (a fault
    may bring a large folio of several pages). get(field) reads one of SWAPIN_FIELDS."""
    return next((get(k) for k in SWAPIN_FIELDS if get(k) is not None), None)


def seconds_per_swapin(unlimited_wall_s: float, kernel_wall_s: float, kernel_swapins: float
                       ) -> float:
    """What one swap-in costs on this machine [s]: the kernel arm's time over the unlimited
    run's, per swap-in it took."""
    return max(0.0, (kernel_wall_s - unlimited_wall_s) / kernel_swapins)


def check(model: dict[str, Any] | None, measured: dict[str, dict[str, Any]],
          unlimited_wall_s: float | None) -> dict[str, Any] | None:
    """Predicted vs measured per arm. measured: arm ("baseline", "objtier") -> medians with
    "swapins" and "wall_s" (None where the arm did not finish). None without a model section
    that chose."""
    if not model or not model.get("chosen"):
        return None
    predicted = model["predicted_swapins"]
    arms: dict[str, Any] = {}
    for arm, key in (("baseline", "kernel"), ("objtier", "plan")):
        got = measured.get(arm) or {}
        swapins = got.get("swapins")
        row: dict[str, Any] = {"predicted_swapins": predicted[key], "measured_swapins": swapins}
        if swapins is not None:
            row["swapin_error"] = error(predicted[key], swapins)
            row["off"] = is_off(predicted[key], swapins)
        arms[arm] = row
    base = measured.get("baseline") or {}
    cost = None
    if unlimited_wall_s is not None and base.get("wall_s") and base.get("swapins"):
        cost = seconds_per_swapin(unlimited_wall_s, base["wall_s"], base["swapins"])
        wall = unlimited_wall_s + cost * predicted["plan"]
        arms["objtier"]["predicted_wall_s"] = wall
        got = (measured.get("objtier") or {}).get("wall_s")
        if got:
            arms["objtier"]["measured_wall_s"] = got
            arms["objtier"]["wall_error"] = error(wall, got)
    return {"what": model.get("what", ""), "chosen": model["chosen"],
            "seconds_per_swapin": cost, "arms": arms,
            "calibration": model.get("calibration"),
            "off": [a for a, r in arms.items() if r.get("off")]}


def lines(result: dict[str, Any] | None) -> list[str]:
    """The check as the lines compare and run print."""
    if result is None:
        return []
    out = []
    for arm, row in result["arms"].items():
        if row.get("measured_swapins") is None:
            out.append(f"model, {arm}: {row['predicted_swapins']:,} swap-ins predicted "
                       f"(estimated); not measured (the arm did not finish)")
            continue
        err = row.get("swapin_error")
        text = (f"model, {arm}: {row['predicted_swapins']:,} swap-ins predicted (estimated), "
                f"{row['measured_swapins']:,.0f} measured"
                + (f" ({100 * err:+.0f} %)" if err is not None else ""))
        if "predicted_wall_s" in row and "measured_wall_s" in row:
            text += (f"; time {row['predicted_wall_s']:.2f} s predicted, "
                     f"{row['measured_wall_s']:.2f} s measured")
        if arm == "baseline" and result.get("calibration"):
            text += " (the model was fitted to kernel run 1: not an independent check)"
        if row.get("off"):
            text += f" — the model is off by more than {100 * OFF:.0f} % here"
        out.append(text)
    return out
