"""without_backfill: nothing ranked below the first object that does not fit whole stays fast."""

from __future__ import annotations

from objtier.plan import halving, object_table, rank, spill, without_backfill
from .plan_synthetic import PAGE, fast_pages, table

# A: 6 pages, 10 accesses/page; B: 5 pages, 8/page; C: 4 pages, 5/page; D: 1 page, 1/page.
GAPS = table([6, 5, 4, 1], [60, 40, 20, 1])


def test_rank_gap_filler_colder_than_the_skipped_object_goes_slow():
    objects = object_table(GAPS)
    p = without_backfill(objects, rank(objects, 10 * PAGE))
    # rank took C into the gap B left; C is colder per byte than B: slow again
    assert p.tier.tolist() == ["fast", "slow", "slow", "slow"]
    assert fast_pages(p) == [6, 0, 0, 0]
    assert p.reason[2].startswith("ranked below object 1, which did not fit whole")
    assert p.reason[1] == "does not fit: needs 5 pages, 4 left"      # B's own reason is kept
    assert (p.cumulative_fill // PAGE).tolist() == [6, 6, 6, 6]
    assert p.params["backfill"] is False and p.algorithm == "rank"


def test_spill_keeps_the_split_prefix_and_nothing_after_it():
    objects = object_table(GAPS)
    p = without_backfill(objects, spill(objects, 10 * PAGE))
    assert p.tier.tolist() == ["fast", "split", "slow", "slow"]
    assert fast_pages(p) == [6, 4, 0, 0]


def test_everything_fits_or_nothing_was_filled_is_unchanged():
    objects = object_table(GAPS)
    whole = rank(objects, 16 * PAGE)
    assert without_backfill(objects, whole) is whole
    tight = rank(objects, 3 * PAGE)        # nothing fits: D (1 page) fills the gap
    p = without_backfill(objects, tight)
    assert tight.tier.tolist() == ["slow", "slow", "slow", "fast"]
    assert p.tier.tolist() == ["slow", "slow", "slow", "slow"]


def test_halving_pieces_below_the_first_short_object_go_slow():
    objects = object_table(table([8, 2, 2], [16, 2, 1]))
    p = halving(objects, 6 * PAGE)
    q = without_backfill(objects, p)
    # every object ranked after the first one left short has no fast bytes
    short = [i for i in range(3) if p.fast_bytes[i] < objects.size[i] and p.accesses[i] > 0]
    first = min(short, key=lambda i: p.order[i])
    assert all(q.fast_bytes[i] == 0 for i in range(3) if p.order[i] > p.order[first])
    assert all(q.fast_bytes[i] == p.fast_bytes[i] for i in range(3) if p.order[i] <= p.order[first])
