"""Reclaim on a spare CPU: the helper lowers and restores a real cgroup v1 limit while a program
swaps under it, and the decision follows idle CPU and the reclaim rate it would need."""

from __future__ import annotations

import pytest

from objtier.experiments.measure import run_measured
from objtier.tiers.spare_reclaim import SpareReclaimer, check_first_run, decide
from objtier.tiers.swap import SwapTier

from .test_swap_tier import TOUCH


@pytest.mark.root
def test_the_helper_reclaims_ahead_and_leaves_the_limit_as_it_was(compile_c):
    exe = compile_c(TOUCH, "touch")
    with SwapTier(48 << 20) as tier:
        if tier.cgroup.version != 1:
            pytest.skip("the spare-CPU reclaimer is built for memory cgroup v1")
        plain = run_measured("plain", [str(exe), "96", "2"], preexec=tier.preexec)
        with SpareReclaimer(tier.cgroup.path) as helper:
            helped = run_measured("helped", [str(exe), "96", "2"], preexec=tier.preexec)
        assert tier.cgroup.limit_bytes == 48 << 20           # written back
    assert plain.ok and helped.ok, helped.stderr
    assert helped.stdout == plain.stdout                      # same output
    assert helper.reclaims > 0 and helper.seconds > 0        # it did reclaim, in itself


def test_decide_follows_idle_cpu_and_the_needed_rate():
    base = dict(cpus=2, unlimited_cpu_s=1.0, unlimited_wall_s=1.0, predicted_swapins=50_000,
                predicted_wall_s=1.0, kernel_system_s=1.0, kernel_swapouts=200_000)
    assert decide("auto", **base).use
    busy = decide("auto", **{**base, "unlimited_cpu_s": 1.8})
    assert not busy.use and "idle" in busy.why
    fast = decide("auto", **{**base, "predicted_swapins": 250_000})
    assert not fast.use and fast.needed_pages_per_s > fast.capacity_pages_per_s
    assert not decide("auto", **{**base, "cpus": 1}).use
    assert decide("on", **{**base, "unlimited_cpu_s": 1.9}).use
    assert not decide("off", **base).use
    unknown = decide("auto", **{**base, "predicted_swapins": None})
    assert not unknown.use and "no prediction" in unknown.why


def test_the_first_run_turns_the_helper_off_only_when_slower_with_more_swapins():
    # DuckDB at 70 % (2026-12-03): 1.61 s and 23,090 swap-ins against 1.36 s and 10,937
    why = check_first_run(1.36, 10_937, 1.61, 23_090)
    assert why and "1.61 s" in why and "23,090" in why and "kernel run 1" in why
    # faster with more swap-ins (SQLite at 50 %): the helper pays, kept
    assert check_first_run(4.31, 317_419, 3.88, 402_754) is None
    # slower with fewer swap-ins: not the helper's reclaim, kept
    assert check_first_run(1.0, 10_000, 1.05, 9_000) is None
    # equal: kept
    assert check_first_run(1.0, 10_000, 1.0, 10_000) is None
