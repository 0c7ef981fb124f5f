"""Lifetime-aware planning: the budget bounds fast bytes live at the same moment.

Tables carry alloc_ns/free_ns (free_ns NaN or < 0 = live to the end); answers are computed
by hand in the comments. Times are in arbitrary ns units.
"""

from __future__ import annotations

import numpy as np
import pytest

from objtier.plan import exact, halving, rank, spill
from objtier.plan.lifetime import Timeline, cliques, segments
from objtier.plan.table import object_table
from .plan_synthetic import PAGE, fast_pages, table


def timed(pages, accesses, alloc, free, **kw):
    t = table(pages, accesses, **kw)
    t["alloc_ns"] = np.asarray(alloc, dtype=np.float64)
    t["free_ns"] = np.asarray(free, dtype=np.float64)
    return t


def blind(t):
    return {k: v for k, v in t.items() if k not in ("alloc_ns", "free_ns")}


@pytest.mark.parametrize("algo", [rank, spill, halving, exact])
def test_disjoint_lifetimes_as_large_as_the_budget_are_both_fast(algo):
    # A live [0, 10), B live [10, 20) (freed at 10, then allocated at 10: no overlap),
    # each 10 pages = the whole budget
    t = timed([10, 10], [100, 90], [0, 10], [10, 20])
    p = algo(t, 10 * PAGE)
    assert p.tier.tolist() == ["fast", "fast"]
    assert p.lifetimes and p.peak_bytes == 10 * PAGE
    assert p.used_bytes == 20 * PAGE  # the sum exceeds the budget; the live peak does not
    assert p.warnings == ()
    # without lifetimes only A fits (spill and halving give B nothing: the tier is full)
    q = algo(blind(t), 10 * PAGE)
    assert fast_pages(q) == [10, 0]
    assert not q.lifetimes and q.peak_bytes == q.used_bytes == 10 * PAGE


@pytest.mark.parametrize("algo", [rank, exact])
def test_overlapping_lifetimes_compete_for_the_budget(algo):
    # A [0, 10), B [5, 20): they overlap on [5, 10), so 10 + 10 pages do not fit
    t = timed([10, 10], [100, 90], [0, 5], [10, 20])
    assert algo(t, 10 * PAGE).tier.tolist() == ["fast", "slow"]
    # B never freed (NaN): it still overlaps A
    t = timed([10, 10], [100, 90], [0, 5], [10, np.nan])
    assert algo(t, 10 * PAGE).tier.tolist() == ["fast", "slow"]


def test_rank_fills_over_lifetimes():
    # budget 10 pages. By density: A 6 pages [0, 50), B 5 pages [0, 20), C 5 pages [36, 45),
    # D 4 pages [10, 35).
    # A fits (6). B: 6 + 5 = 11 > 10 over [0, 20): slow. C: live with A only: 11 > 10: slow.
    # D overlaps A alone (B, C slow): 6 + 4 = 10 fits. During C only A is live: fill 6.
    t = timed([6, 5, 5, 4], [600, 400, 300, 100], [0, 0, 36, 10], [50, 20, 45, 35])
    p = rank(t, 10 * PAGE)
    assert p.tier.tolist() == ["fast", "slow", "slow", "fast"]
    assert p.reason[1] == "does not fit: needs 5 pages, 4 left over its lifetime"
    assert p.peak_bytes == 10 * PAGE
    # cumulative fill = most fast bytes live at once during each object's lifetime
    assert (p.cumulative_fill // PAGE).tolist() == [10, 10, 6, 10]


def test_spill_splits_at_the_room_left_over_the_lifetime():
    # budget 10 pages. A 7 pages [0, 100) (densest). B 6 pages [0, 50): room over its
    # lifetime 3 -> 3 of 6 pages. C 8 pages [50, 100): B is freed at 50, so only A is live:
    # room 3 -> 3 of 8 pages. D 2 pages [200, 300): alone, fits whole.
    t = timed([7, 6, 8, 2], [700, 500, 400, 10], [0, 0, 50, 200], [100, 50, 100, 300])
    p = spill(t, 10 * PAGE)
    assert fast_pages(p) == [7, 3, 3, 2]
    assert p.tier.tolist() == ["fast", "split", "split", "fast"]
    assert p.reason[1] == "split at the room left over its lifetime: 3 of 6 pages fast"
    assert p.reason[2] == "split at the room left over its lifetime: 3 of 8 pages fast"
    assert p.peak_bytes == 10 * PAGE
    # C lives alongside B would leave it nothing: with B live to 60, C's room over [50, 100)
    # is 10 - 7 - 3 = 0 while B lives
    t2 = timed([7, 6, 8, 2], [700, 500, 400, 10], [0, 0, 50, 200], [100, 60, 100, 300])
    assert fast_pages(spill(t2, 10 * PAGE)) == [7, 3, 0, 2]
    # without lifetimes: A 7, B split at 3, everything else slow
    assert fast_pages(spill(blind(t), 10 * PAGE)) == [7, 3, 0, 0]


def test_halving_90_percent_rule_is_over_the_lifetime():
    # budget 10 pages (90% = 9). A 9 pages [0, 10), 10/page. B 8 pages [5, 20), 5/page:
    # over its lifetime 9 pages are live (90% full): no split, slow.
    # C 16 pages [20, 30), 2/page: nothing live then (0% full): halved 8 + 8, [0:8) fits (8);
    # [8:16) does not, 8 < 9: halved 4 + 4; [8:12) does not fit, 8 < 9: halved 2 + 2;
    # [8:10) fits (10); [10:12) and [12:16) do not, 10 >= 9: slow. C: 10 of 16 pages.
    t = timed([9, 8, 16], [90, 40, 32], [0, 5, 20], [10, 20, 30])
    p = halving(t, 10 * PAGE)
    assert fast_pages(p) == [9, 0, 10]
    assert "90% full over its lifetime" in p.reason[1]
    assert p.reason[2] == "halved 3 time(s): 10 of 16 pages fast"
    assert p.peak_bytes == 10 * PAGE
    # without lifetimes the tier is 90% full after A: B and C stay slow
    q = halving(blind(t), 10 * PAGE)
    assert fast_pages(q) == [9, 0, 0]


def test_exact_is_optimal_per_group_of_objects_live_at_once():
    # group 1 ([0, 10)): A 6 pages/7, B 5/5, C 5/5 -> B + C (10) beat A (7), as without
    # lifetimes. group 2 ([10, 20)): D 10 pages, alone: fast.
    t = timed([6, 5, 5, 10], [7, 5, 5, 3], [0, 0, 1, 10], [10, 9, 10, 20])
    p = exact(t, 10 * PAGE)
    assert p.tier.tolist() == ["slow", "fast", "fast", "fast"]
    assert p.warnings == ()
    assert p.fast_accesses == 13


def test_exact_uses_greedy_with_a_warning_when_lifetimes_overlap_partially():
    # A [0, 10), B [5, 15), C [12, 20): A-B and B-C overlap, A-C do not: one group with no
    # common moment. Greedy rank over lifetimes decides it, and says so.
    t = timed([6, 5, 5], [60, 40, 30], [0, 5, 12], [10, 15, 20])
    p = exact(t, 10 * PAGE)
    assert len(p.warnings) == 1 and "overlap only partially" in p.warnings[0]
    assert p.tier.tolist() == rank(t, 10 * PAGE).tier.tolist() == ["fast", "slow", "fast"]
    assert p.params["partial_overlap"] == "rank"
    assert p.reason[0] == "placed by greedy rank (lifetimes overlap partially)"


def test_segments_and_groups():
    # frees before allocations at equal times; NaN free = to the end; free == alloc = one
    # segment
    o = object_table(timed([1, 1, 1, 1], [1, 1, 1, 1], [0, 10, 5, 30], [10, np.nan, 5, 30]))
    lo, hi, count = segments(o.alloc_ns, o.free_ns)
    # times 0, 5, 10, 30 -> segments [0,5) [5,10) [10,30) [30,...)
    assert count == 4
    assert lo.tolist() == [0, 2, 1, 3] and hi.tolist() == [2, 4, 2, 4]
    label, all_cliques = cliques(np.array([0, 2, 5]), np.array([2, 4, 6]))
    assert label.tolist() == [0, 1, 2] and all_cliques
    label, all_cliques = cliques(np.array([0, 1, 3]), np.array([2, 4, 5]))
    assert label.tolist() == [0, 0, 0] and not all_cliques


def test_timeline_checks_the_range_not_the_sum():
    o = object_table(timed([4, 4, 4], [1, 1, 1], [0, 10, 5], [10, 20, 15]))
    tl = Timeline(o, 8)
    tl.add(0, 4)
    tl.add(1, 4)
    assert tl.peak == 4          # disjoint: never more than 4 live
    assert tl.room(2) == 4 and tl.fits(2, 4) and not tl.fits(2, 5)


@pytest.mark.parametrize("algo", [rank, spill, halving, exact])
def test_random_tables_never_exceed_the_budget_at_any_moment(algo):
    rng = np.random.default_rng(5)
    for _ in range(20):
        n = int(rng.integers(1, 50))
        size = rng.integers(1, 40 * PAGE, n)
        acc = rng.exponential(100.0, n) * (rng.random(n) > 0.2)
        alloc = rng.integers(0, 1000, n)
        free = np.where(rng.random(n) < 0.2, np.nan, alloc + rng.integers(0, 500, n))
        cap = int(rng.integers(0, 300 * PAGE))
        t = table(None, acc, size_bytes=size)
        t["alloc_ns"], t["free_ns"] = alloc, free
        p = algo(t, cap)
        # brute force: at every allocation time, fast pages of the objects live then
        charged = (p.fast_bytes + PAGE - 1) // PAGE * PAGE
        end = np.where(np.isnan(free), np.inf, free)
        for t0 in alloc:
            live = (alloc <= t0) & ((end > t0) | (alloc == t0))
            assert charged[live].sum() <= cap
        assert p.peak_bytes <= cap
