"""`objtier compare --dynamic` on the real swap tier: the program in two marked phases (one
array swept per phase) under a memory cgroup with zram; the objtier-dynamic arm runs the
schedule learned from the profile next to the baseline and the static plan, finishes with the
baseline's output, and its advice counts reach summary.json. Nothing is left on the machine."""

from __future__ import annotations

import json
import os
import stat

import pytest

from .helpers import leftovers, machine_state, objtier
from objtier.experiments.compare_swap import CompareSettings, run_compare
from ..phased_program import phased_source

pytestmark = pytest.mark.root


def test_dynamic_arm_runs_the_schedule_next_to_the_static_plan(compile_c, tmp_path):
    from objtier.native import NATIVE_DIR

    exe = compile_c(phased_source(32), "phased",
                    flags=("-O1", "-g", f"-I{NATIVE_DIR / 'include'}", "-ldl"))
    out = tmp_path / "out"
    settings = CompareSettings(local="60%", repeat=1, margin="12M", algo="spill",
                               rate=200_000, arms=("objtier-dynamic",), output=out)
    before = machine_state()
    during = []
    result = run_compare([str(exe)], settings, on_row=lambda row: during.append(machine_state()))
    assert [r.config for r in result.rows] == ["baseline", "objtier", "objtier-dynamic"]
    dyn = next(r for r in result.rows if r.config == "objtier-dynamic")
    assert dyn.returncode == 0
    runs = out / "runs"
    outputs = {r.config: (runs / f"{r.order:02d}-{r.config}-1.out").read_text()
               for r in result.rows if r.returncode == 0}
    assert outputs["objtier-dynamic"] == outputs["objtier"]
    # the schedule: learned for the static plan's limit, run by the runtime, counted
    plan = json.loads((out / "plan-dynamic.json").read_text())
    assert stat.S_IMODE((out / "plan-dynamic.json").stat().st_mode) == 0o600
    assert plan["version"] == 2 and plan["dynamic"]["steps"]
    limit = result.summary["local"]["mlock_limit_bytes"]
    assert 0 < plan["dynamic"]["lock_bytes"] <= limit
    # bounded by what the static arm's plan keeps fast at once, and that plan is a candidate
    from objtier.experiments.compare_dynamic import planned_peak

    static_plan = json.loads((out / "plan.json").read_text())
    assert plan["dynamic"]["lock_bytes"] <= max(planned_peak(static_plan), 4096)
    assert "plan" in plan["dynamic"]["simulated_swap_ins"]
    summary = json.loads((out / "summary.json").read_text())["dynamic"]
    assert summary["runs_with_counts"] == 1 and summary["steps"] == len(plan["dynamic"]["steps"])
    assert summary["schedule"] in summary["simulated_swap_ins"]
    assert summary["median"]["objects_matched"] >= 1
    assert summary["median_advice_calls"] > 0 and summary["median"]["calls_failed"] == 0
    assert summary["median"]["locked_peak_bytes"] <= limit
    counts = next(runs.glob("*-objtier-dynamic-1.dynamic.txt"))
    assert stat.S_IMODE(counts.stat().st_mode) == 0o600
    assert "objtier-dynamic" in result.summary["arm_ratios"]
    # this process's cgroup was there during the runs and is gone (other experiments on the
    # machine may hold their own devices meanwhile)
    mine = f"objtier-{os.getpid()}"
    assert mine in during[0][1] and mine not in machine_state()[1]
    assert not [d for d in leftovers(before, during[0], machine_state()) if mine in d]


def test_dynamic_is_refused_on_the_numa_tier(tmp_path):
    run = objtier("compare", "--tier", "numa", "--dynamic", "-o", str(tmp_path / "o"), "--",
                  "/bin/true")
    assert run.returncode == 2 and "--dynamic apply to --tier swap only" in run.stderr
    assert "Traceback" not in run.stderr
