"""The `pages` planner: spill's objects, the split one's pages by their own samples; the ranges
in the plan file and its text form, and bad ranges."""

from __future__ import annotations

import numpy as np
import pytest

from objtier.errors import UsageError
from objtier.plan import Budget, build_plan, pages, parse_text, to_text, validate_plan
from objtier.plan.pages import runs

PG = 4096


def table():
    return {"object": [0, 1, 2], "context_key": ["a" * 16, "b" * 16, "c" * 16],
            "occurrence": [0, 0, 0], "size": [10 * PG, 2 * PG, 3 * PG + 100],
            "accesses": [10.0, 50.0, 1.0], "label": ["x", "y", "z"]}


SAMPLES = {"object": [0, 0, 0, 1, 1, 2], "page": [3, 7, 8, 0, 1, 2],
           "samples": [5, 4, 4, 1, 1, 9]}


def test_split_object_keeps_its_most_touched_pages():
    # spill by density: object 1 (50 / 2 pages) fast, object 0 (10 / 10 pages) split with the
    # 4 pages left; object 2 slow. object 0's 4 pages: 3 (5), 7 and 8 (4 each), then the first
    # unsampled one, page 0
    p = pages(table(), 6 * PG, PG, page_samples=SAMPLES)
    assert list(p.tier) == ["pages", "fast", "slow"]
    assert list(p.fast_bytes) == [4 * PG, 2 * PG, 0]
    assert p.ranges[0].tolist() == [[0, PG], [3 * PG, PG], [7 * PG, 2 * PG]]
    assert p.ranges[1] is None and p.ranges[2] is None
    assert "3 sampled, 1 unsampled" in p.reason[0]
    assert p.used_bytes == 6 * PG and p.algorithm == "pages"


def test_ties_in_address_order_and_other_objects_as_spill():
    from objtier.plan import spill
    tie = {"object": [0, 0, 0], "page": [9, 5, 2], "samples": [2, 2, 1]}
    p = pages(table(), 4 * PG, PG, page_samples=tie)
    assert p.ranges[0].tolist() == [[5 * PG, PG], [9 * PG, PG]]     # 2 pages left for it
    s = spill(table(), 4 * PG, PG)
    assert list(s.tier) == ["split", "fast", "slow"] and list(s.fast_bytes) == list(p.fast_bytes)


def test_without_backfill_first():
    # 13 pages: objects 1 and 0 fit whole, object 2 (the first that does not) is split at the
    # 1 page left, with or without backfill; with 11, object 0 is split and 2 stays slow
    p = pages(table(), 13 * PG, PG, page_samples=SAMPLES)
    assert list(p.tier) == ["fast", "fast", "pages"] and p.ranges[2].tolist() == [[2 * PG, PG]]
    p = pages(table(), 13 * PG, PG, page_samples=SAMPLES, backfill=False)
    assert list(p.tier) == ["fast", "fast", "pages"]   # object 2 is the first that does not fit
    p = pages(table(), 11 * PG, PG, page_samples=SAMPLES, backfill=False)
    assert list(p.tier) == ["pages", "fast", "slow"] and p.params["backfill"] is False


def test_cold_page_excess_tells_never_touched_pages_from_sparse_sampling():
    from objtier.plan.pages import cold_page_excess
    rng = np.random.default_rng(7)
    n = 20000
    # every page touched alike, 3 samples per page on average: a Poisson sampler leaves about
    # exp(-3) = 5 % of the pages unsampled, and that is no sign of cold pages
    even = rng.poisson(3.0, n)
    assert abs(cold_page_excess(np.arange(n), even, n)) < 0.01
    # the same mean over the object, but a third of its pages never touched
    skew = np.where(np.arange(n) % 3 == 0, 0, rng.poisson(4.5, n))
    assert cold_page_excess(np.arange(n), skew, n) > 0.25
    # pages outside the object do not count; an object without pages has no excess
    assert cold_page_excess(np.array([n + 5]), np.array([100]), n) == pytest.approx(1 - 1.0)
    assert cold_page_excess(np.array([], dtype=np.int64), np.array([]), 0) == 0.0


def test_auto_ranks_only_a_split_object_with_cold_pages():
    from objtier.plan import auto, spill
    rng = np.random.default_rng(11)
    big = 3000
    t = {"object": [0, 1], "context_key": ["a" * 16, "b" * 16], "occurrence": [0, 0],
         "size": [big * PG, 10 * PG], "accesses": [3000.0, 100.0], "label": ["g", "h"]}
    # object 0 (split at 2000 pages): every page sampled alike -> spill's prefix
    even = {"object": np.zeros(big, dtype=np.int64), "page": np.arange(big),
            "samples": rng.poisson(4.0, big)}
    p = auto(t, 2010 * PG, PG, page_samples=even)
    s = spill(t, 2010 * PG, PG)
    assert list(p.tier) == ["split", "fast"] and list(p.fast_bytes) == list(s.fast_bytes)
    assert "prefix kept" in p.reason[0] and p.algorithm == "auto"
    # pages 0-999 sampled once each, 1000-1999 at least twice, 2000-2999 never: ranked, and
    # the 1000 fast pages are the middle third
    k = np.arange(big)
    cold = dict(even, samples=np.select([k < 1000, k < 2000], [1, even["samples"] + 2], 0))
    p = auto(t, 1010 * PG, PG, page_samples=cold)
    assert p.tier[0] == "pages" and p.fast_bytes[0] == 1000 * PG
    assert p.ranges[0][:, 0].min() >= 1000 * PG           # pages 1000-1999, the most touched
    assert int(p.ranges[0][:, 1].sum()) == 1000 * PG


def test_auto_leaves_a_gathered_evenly_used_object_wholly_to_the_kernel():
    from objtier.plan import auto
    rng = np.random.default_rng(5)
    big = 3000
    t = {"object": [0, 1], "context_key": ["a" * 16, "b" * 16], "occurrence": [0, 0],
         "size": [big * PG, 10 * PG], "accesses": [3000.0, 100.0], "label": ["g", "h"],
         "sequential": [0.1, 0.95]}
    even = {"object": np.zeros(big, dtype=np.int64), "page": np.arange(big),
            "samples": rng.poisson(4.0, big)}
    # gathered (0.1) and every page alike: no part of it locked, the small object still fast
    p = auto(t, 2010 * PG, PG, page_samples=even)
    assert list(p.tier) == ["slow", "fast"] and list(p.fast_bytes) == [0, 10 * PG]
    assert "left unlocked: gathered" in p.reason[0] and p.ranges[0] is None
    assert p.used_bytes == 10 * PG
    # the same object swept (0.95): LRU loses on a sweep, the prefix stays locked
    p = auto(dict(t, sequential=[0.95, 0.95]), 2010 * PG, PG, page_samples=even)
    assert p.tier[0] == "split" and p.fast_bytes[0] == 2000 * PG
    # sequential share unknown (NaN: too few steps): the prefix rule as before
    p = auto(dict(t, sequential=[float("nan"), 0.95]), 2010 * PG, PG, page_samples=even)
    assert p.tier[0] == "split" and "prefix kept" in p.reason[0]
    # gathered with cold pages from enough samples a page: ranked as before
    k = np.arange(big)
    cold = dict(even, samples=np.where(k < 1000, 0, even["samples"] + 2))
    p = auto(t, 1010 * PG, PG, page_samples=cold)
    assert p.tier[0] == "pages" and p.fast_bytes[0] == 1000 * PG
    # the same skew from about one sample a page is chance: left unlocked
    thin = dict(even, samples=np.where(k < 1000, 0, rng.poisson(1.2, big)))
    p = auto(t, 1010 * PG, PG, page_samples=thin)
    assert p.tier[0] == "slow" and "samples a page" in p.reason[0]
    # `pages` (not auto) still ranks whatever it is given
    p = pages(t, 1010 * PG, PG, page_samples=thin)
    assert p.tier[0] == "pages"


def test_auto_locks_a_whole_object_only_well_above_what_the_kernel_keeps():
    from objtier.plan import auto, spill
    from objtier.plan.pages import CONTRAST
    big = 1000
    # per page: object 1 is 1.5x as dense as the edge-like object 0, object 2 is 10x
    t = {"object": [0, 1, 2], "context_key": ["a" * 16, "b" * 16, "c" * 16],
         "occurrence": [0, 0, 0], "size": [big * PG, 20 * PG, 10 * PG],
         "accesses": [1000.0, 30.0, 100.0], "label": ["e", "w", "h"],
         "sequential": [0.95, 0.5, 0.5]}
    samples = {"object": np.zeros(big, dtype=np.int64), "page": np.arange(big),
               "samples": np.full(big, 4)}
    s = spill(t, 530 * PG, PG)
    assert list(s.tier) == ["split", "fast", "fast"]
    p = auto(t, 530 * PG, PG, page_samples=samples)
    assert list(p.tier) == ["split", "slow", "fast"] and p.fast_bytes[1] == 0
    assert "1.50x the density of the densest object left to the kernel" in p.reason[1]
    assert p.params["contrast"] == CONTRAST == 2.0
    # nothing left to the kernel: every fast object stays locked
    p = auto(t, 2000 * PG, PG, page_samples=samples)
    assert list(p.tier) == ["fast", "fast", "fast"]
    # at 2x and above the lock stays (object 1 at 2.5x)
    p = auto(dict(t, accesses=[1000.0, 50.0, 100.0]), 530 * PG, PG, page_samples=samples)
    assert list(p.tier) == ["split", "fast", "fast"]


def test_pages_beyond_the_object_are_ignored():
    bad = {"object": [0, 0, 9], "page": [10, 2, 0], "samples": [100, 1, 100]}
    p = pages(table(), 3 * PG, PG, page_samples=bad)    # page 10 of a 10-page object: no such page
    assert p.ranges[0].tolist() == [[2 * PG, PG]]


def test_no_page_samples_is_a_usage_error():
    with pytest.raises(UsageError, match="samples per page"):
        pages(table(), PG, PG)


def test_runs():
    assert runs(np.array([5, 1, 2, 3, 9, 5])).tolist() == [[1, 3], [5, 1], [9, 1]]
    assert runs(np.array([], dtype=np.int64)).shape == (0, 2)


def plan_doc():
    from objtier.plan import object_table
    objects = object_table(table())
    p = pages(objects, 6 * PG, PG, page_samples=SAMPLES)
    return build_plan(objects, p, Budget(6 * PG, "24K", None, 0), None)


def test_plan_file_and_text_form_carry_the_ranges():
    doc = plan_doc()
    entries = {e["context_key"][0]: e for e in doc["entries"]}
    assert entries["a"]["tier"] == "pages"
    assert entries["a"]["ranges"] == [[0, PG], [3 * PG, PG], [7 * PG, 2 * PG]]
    assert "ranges" not in entries["b"]
    text = to_text(doc)
    assert f"aaaaaaaaaaaaaaaa 0 {10 * PG} {10 * PG} pages {4 * PG} * 0:{PG},{3 * PG}:{PG}," \
           f"{7 * PG}:{2 * PG}\n" in text
    back = {e["context_key"][0]: e for e in parse_text(text)["entries"]}
    assert back["a"]["ranges"] == entries["a"]["ranges"] and "ranges" not in back["b"]


@pytest.mark.parametrize("ranges", [
    None, [], [[0, PG]], [[PG, PG], [0, 3 * PG]], [[0, 2 * PG], [PG, 2 * PG]],
    [[0, 0], [0, 4 * PG]], [[0, 4 * PG, 1]], [["0", 4 * PG]],
])
def test_bad_ranges_are_refused(ranges):
    doc = plan_doc()
    entry = next(e for e in doc["entries"] if e["tier"] == "pages")
    if ranges is None:
        del entry["ranges"]
    else:
        entry["ranges"] = ranges
    with pytest.raises(UsageError, match="pages entry needs ranges"):
        validate_plan(doc)


def test_each_object_is_ranked_by_the_phase_that_touches_it_most():
    """dominant_phase_samples: object 0 is search's (5 of its accesses against 1 and 0), object
    1 the root's (10); the load's heavy samples of both are not used, and two phases that
    split object 0 by different amounts then lock nested sets of its pages."""
    import pyarrow as pa

    from objtier.analysis.page_samples import dominant_phase_samples

    def samples(obj, page, count):
        return pa.table({"object": pa.array(obj, pa.int64()), "page": pa.array(page, pa.int64()),
                         "samples": pa.array(count, pa.int64())})

    per_phase = {"*": samples([0, 1], [0, 5], [1, 1]),
                 "load": samples([0, 0, 1], [1, 2, 3], [9, 9, 9]),
                 "search": samples([0, 0], [7, 8], [4, 4])}
    accesses = {"*": np.array([0.0, 10.0]), "load": np.array([1.0, 2.0]),
                "search": np.array([5.0, 1.0])}
    order = dominant_phase_samples(per_phase, accesses)
    assert list(zip(*(order.column(c).to_pylist() for c in ("object", "page", "samples")))) == \
        [(0, 7, 4), (0, 8, 4), (1, 5, 1)]

    def fast_pages(capacity_pages):   # object 1 (2 pages) fast, object 0 split with the rest
        placed = pages(table(), capacity_pages * PG, PG, page_samples=order.to_pydict())
        return {(start + k * PG) // PG for start, length in placed.ranges[0].tolist()
                for k in range(length // PG)}

    assert fast_pages(4) == {7, 8} and fast_pages(4) < fast_pages(6)
