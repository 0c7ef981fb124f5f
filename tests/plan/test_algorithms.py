"""rank, spill, halving and exact on synthetic object tables with hand-computed answers."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pytest

from objtier.errors import UsageError
from objtier.plan import exact, halving, rank, spill
from objtier.plan.exact import knapsack
from objtier.plan.halving import priority
from .plan_synthetic import PAGE, fast_pages, table


# A: 6 pages, 10 accesses/page; B: 5 pages, 8/page; C: 4 pages, 5/page; D: 1 page, 1/page.
GAPS = table([6, 5, 4, 1], [60, 40, 20, 1])


def test_rank_takes_whole_objects_and_fills_gaps_with_smaller_ones():
    p = rank(GAPS, 10 * PAGE)
    # A fits (6), B does not (11 > 10), C fits the gap (10), D no longer fits
    assert p.tier.tolist() == ["fast", "slow", "fast", "slow"]
    assert fast_pages(p) == [6, 0, 4, 0]
    assert p.order.tolist() == [0, 1, 2, 3]
    assert (p.cumulative_fill // PAGE).tolist() == [6, 6, 10, 10]
    assert p.reason[1] == "does not fit: needs 5 pages, 4 left"
    assert p.reason[2].startswith("fits in a gap")
    assert p.used_bytes == 10 * PAGE


def test_spill_splits_the_first_object_that_does_not_fit_at_the_boundary():
    p = spill(GAPS, 10 * PAGE)
    assert p.tier.tolist() == ["fast", "split", "slow", "slow"]
    # B's fast prefix is the 4 pages left: split offset 4 * 4096 bytes
    assert p.fast_bytes.tolist() == [6 * PAGE, 4 * PAGE, 0, 0]
    assert p.reason[1] == "split at the boundary: 4 of 5 pages fast"


def test_spill_split_offset_is_page_aligned_for_unaligned_sizes():
    # 3 objects of 10000 bytes (3 pages each) with a 5-page budget: the first fits (3 pages),
    # the second gets the 2 pages left = 8192 bytes
    p = spill(table(None, [3, 2, 1], size_bytes=[10000, 10000, 10000]), 5 * PAGE)
    assert p.fast_bytes.tolist() == [10000, 2 * PAGE, 0]
    assert p.tier.tolist() == ["fast", "split", "slow"]


def test_halving_splits_in_half_and_stops_at_90_percent():
    # A 5 pages (12/page), B 8 pages (5/page), budget 10 pages.
    t = table([5, 8], [60, 40])
    # spill would give B the 5 pages left
    assert fast_pages(spill(t, 10 * PAGE)) == [5, 5]
    # halving: A fits (5); B does not, 5 < 9 -> halves 4+4; first half fits (9);
    # second does not and 9 pages is 90% full -> no further split
    p = halving(t, 10 * PAGE)
    assert fast_pages(p) == [5, 4]
    assert p.tier.tolist() == ["fast", "split"]
    assert p.reason[1] == "halved 1 time(s): 4 of 8 pages fast"
    assert p.used_bytes == 9 * PAGE


def test_halving_does_not_split_once_90_percent_full():
    t = table([9, 4], [90, 20])
    p = halving(t, 10 * PAGE)
    assert fast_pages(p) == [9, 0]
    assert "90% full" in p.reason[1]
    # without the 90% rule (threshold 100%) B is halved twice: 2+2, then 1+1, one page fits
    q = halving(t, 10 * PAGE, fill_threshold=1.0)
    assert fast_pages(q) == [9, 1]
    assert q.reason[1] == "halved 2 time(s): 1 of 4 pages fast"


def test_halving_alpha_beta_change_the_order():
    # A: 4 pages, 40 accesses; B: 1 page, 5 accesses; budget 4 pages
    t = table([4, 1], [40, 5])
    assert fast_pages(halving(t, 4 * PAGE)) == [4, 0]          # accesses/byte: A first
    # beta = 2: priority = accesses / size^2 -> B first (5 vs 40/16); A is halved to 2+2,
    # A[0:2] fits (3 pages, 75%), A[2:4] halved again, A[2:3] fits (4 pages)
    p = halving(t, 4 * PAGE, alpha=1.0, beta=2.0)
    assert fast_pages(p) == [3, 1]
    assert p.params["beta"] == 2.0


def test_priority_is_equation_1():
    assert priority(100.0, 10.0, 2.0, 1.0) == pytest.approx(1000.0)
    assert priority(100.0, 10.0, 1.0, 2.0) == pytest.approx(1.0)
    assert priority(5.0, 0.0) == pytest.approx(5.0)  # size clamped to 1 byte


def test_greedy_rank_is_worse_than_exact():
    # A: 6 pages, 7 accesses (density 1.17); B, C: 5 pages, 5 accesses (density 1.0)
    t = table([6, 5, 5], [7, 5, 5])
    greedy = rank(t, 10 * PAGE)
    best = exact(t, 10 * PAGE)
    assert greedy.tier.tolist() == ["fast", "slow", "slow"]
    assert best.tier.tolist() == ["slow", "fast", "fast"]
    assert greedy.fast_accesses == 7
    assert best.fast_accesses == 10
    assert best.warnings == ()


def test_exact_falls_back_to_rank_and_says_so():
    t = table([6, 5, 5], [7, 5, 5])
    p = exact(t, 10 * PAGE, max_cells=5)
    assert len(p.warnings) == 1
    assert "too large" in p.warnings[0] and "greedy rank" in p.warnings[0]
    assert p.params["fallback"] == "rank"
    assert p.tier.tolist() == rank(t, 10 * PAGE).tier.tolist()


def test_exact_matches_brute_force_on_random_instances():
    rng = np.random.default_rng(7)
    for _ in range(30):
        n = 8
        w = rng.integers(1, 9, n)
        v = rng.integers(0, 50, n).astype(float)
        cap = int(rng.integers(1, 25))
        best = max(sum(v[list(s)]) for k in range(n + 1)
                   for s in itertools.combinations(range(n), k) if sum(w[list(s)]) <= cap)
        p = exact(table(w, v), cap * PAGE)
        assert p.fast_accesses == pytest.approx(best)
        assert p.used_bytes <= cap * PAGE
        # whole-object greedy never beats the optimum
        assert rank(table(w, v), cap * PAGE).fast_accesses <= best + 1e-9


def test_knapsack_keeps_the_earlier_item_on_ties():
    assert knapsack(np.array([2, 2]), np.array([3.0, 3.0]), 2).tolist() == [True, False]


def test_exact_handles_objects_larger_than_the_tier_and_trivial_instances():
    p = exact(table([20, 2, 3], [100, 1, 1]), 10 * PAGE)
    assert p.tier.tolist() == ["slow", "fast", "fast"]
    assert p.reason[0].startswith("larger than the fast tier")


def test_cold_objects_stay_slow_unless_asked():
    t = table([1, 1], [5, 0])
    assert rank(t, 10 * PAGE).tier.tolist() == ["fast", "slow"]
    assert rank(t, 10 * PAGE).reason[1] == "no sampled accesses"
    assert rank(t, 10 * PAGE, include_cold=True).tier.tolist() == ["fast", "fast"]
    assert halving(t, 10 * PAGE).tier.tolist() == ["fast", "slow"]
    assert exact(t, 10 * PAGE).tier.tolist() == ["fast", "slow"]


def test_sizes_are_charged_in_whole_pages():
    # two 100-byte objects cost one page each: only one fits in one page
    t = table(None, [2, 1], size_bytes=[100, 100])
    assert rank(t, PAGE).tier.tolist() == ["fast", "slow"]
    # with byte granularity both fit
    assert rank(t, PAGE, page_bytes=1).tier.tolist() == ["fast", "fast"]


@pytest.mark.parametrize("algo", [rank, spill, halving, exact])
def test_never_over_budget_on_random_tables(algo):
    rng = np.random.default_rng(11)
    for _ in range(20):
        n = int(rng.integers(1, 60))
        size = rng.integers(1, 40 * PAGE, n)
        acc = rng.exponential(100.0, n) * (rng.random(n) > 0.2)
        cap = int(rng.integers(0, 400 * PAGE))
        p = algo(table(None, acc, size_bytes=size), cap)
        assert p.used_bytes <= cap
        assert np.all((p.fast_bytes >= 0) & (p.fast_bytes <= size))
        split = p.tier == "split"
        assert np.all(p.fast_bytes[split] % PAGE == 0)


def test_accepts_a_pyarrow_table():
    p = rank(pa.table(GAPS), 10 * PAGE)
    assert p.tier.tolist() == ["fast", "slow", "fast", "slow"]
    assert p.explain().column("order").to_pylist() == [0, 1, 2, 3]


@pytest.mark.parametrize("change, message", [
    ({"size": np.array([-1, 1, 1, 1])}, "negative object size"),
    ({"accesses": np.array([np.nan, 1, 1, 1])}, "NaN"),
    ({"context_key": ["xyz"] * 4}, "16 lowercase hex"),
    ({"object": np.array([1, 1, 2, 3])}, "not unique"),
])
def test_bad_tables_give_one_line_errors(change, message):
    bad = {**GAPS, **change}
    with pytest.raises(UsageError, match=message):
        rank(bad, PAGE)


def test_missing_column_is_named():
    bad = {k: v for k, v in GAPS.items() if k != "accesses"}
    with pytest.raises(UsageError, match="missing column.*accesses"):
        spill(bad, PAGE)
