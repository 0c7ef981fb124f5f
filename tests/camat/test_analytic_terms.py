"""The model's C-AMAT terms against values worked out by hand, on streams small enough to follow
cycle by cycle: cold misses to memory on one core, L1 hit 4, L2 14, LLC 50, memory 250 cycles,
so a miss's data returns 4 + 14 + 50 + 250 = 318 cycles after issue.

These pin the numbers the checks in test_stream_and_model.py only bound: miss concurrency equals
the number of misses in flight (and stops at the miss registers), a dependent chain has C_M 1,
and APC = accesses / active cycles where the active cycles are counted by hand."""

from __future__ import annotations

import numpy as np
import pytest

from objtier.camat.model import ACCESS_DTYPE, Cache, Hierarchy, SimConfig, simulate
from objtier.camat.terms import level_terms

MSHRS = 12
HIER = Hierarchy("hand", Cache(32 << 10, 8, 4, MSHRS), Cache(1 << 20, 16, 14, 32),
                 Cache(8 << 20, 16, 50, 48), issue_width=16, window=64, mem_cycles=250,
                 reorder=0)
TRIP = 4 + 14 + 50 + 250


def _stream(lines: int, dep: bool = False) -> np.ndarray:
    a = np.zeros(lines, dtype=ACCESS_DTYPE)
    a["addr"] = 0x10000000 + np.arange(lines, dtype=np.uint64) * 4096  # distinct lines and sets
    a["flags"] = 8 << 8
    if dep:
        a["dep"][1:] = 1  # each load waits for the one before it
    return a


def _l1(accesses: np.ndarray) -> dict:
    counts = simulate(accesses, SimConfig(HIER, 1, 1, 1))
    return level_terms(counts.totals[0], totals=True)


@pytest.mark.parametrize("k", [1, 2, 8, MSHRS])
def test_k_independent_misses_issued_together(k):
    t = _l1(_stream(k))
    # all issue in cycle 0: hit phase [0, 4) for each, miss phase [4, 318) for each
    assert t["H"] == 4 and t["C_H"] == pytest.approx(k)
    assert t["pMR"] == 1 and t["pAMP"] == TRIP - 4
    assert t["C_M"] == pytest.approx(k)
    assert t["active_cycles"] == TRIP
    assert t["camat"] == pytest.approx(TRIP / k)
    assert t["apc"] * t["camat"] == pytest.approx(1.0)
    assert t["amat"] == TRIP  # AMAT ignores the overlap


def test_misses_beyond_the_registers_wait_for_one():
    k = MSHRS + 4
    t = _l1(_stream(k))
    # 12 in flight over [4, 318); the other 4 wait (not active) until registers free at 318,
    # so their hit phase is [314, 318) and their miss phase [318, 632)
    assert t["active_cycles"] == 2 * TRIP - 4
    hit_cycles = 4 + 4
    pure_cycles = t["active_cycles"] - hit_cycles
    assert t["C_M"] == pytest.approx((MSHRS * (TRIP - 4 - 4) + 4 * (TRIP - 4)) / pure_cycles)
    assert t["C_M"] <= MSHRS
    assert t["camat"] == pytest.approx(t["active_cycles"] / k)


def test_dependent_chain_is_serial():
    k = 6
    t = _l1(_stream(k, dep=True))
    # one at a time: each issues when the one before returns
    assert t["active_cycles"] == k * TRIP
    assert t["C_M"] == pytest.approx(1.0)
    assert t["C_H"] == pytest.approx(1.0)
    assert t["camat"] == pytest.approx(TRIP)
