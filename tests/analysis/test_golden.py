"""Golden tests on the checked-in synthetic traces (tests/fixtures/traces/make_traces.py).

Every expected number below is derived by hand from the sample list in make_traces.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from objtier.analysis import pages, tiers
from objtier.analysis.mapping import sample_objects
from objtier.analysis.objects import object_table, unmapped_count
from objtier.trace import open_trace

TRACES = Path(__file__).resolve().parent.parent / "fixtures" / "traces"
S = 1_000_000_000
START = 1_000_000_000_000


@pytest.fixture(scope="module")
def basic():
    return open_trace(TRACES / "basic.otr")


@pytest.fixture(scope="module")
def fault():
    return open_trace(TRACES / "fault.otr")


def test_sample_to_object_mapping_and_unmapped_samples(basic):
    mapped = sample_objects(basic)
    assert len(mapped) == 19
    assert unmapped_count(mapped) == 3  # freed object 1, munmapped tail of object 2, no object
    assert sorted(mapped.tolist()).count(0) == 10


def test_object_table_shares_sizes_lifetimes(basic):
    rows = object_table(basic, labels=False).to_pylist()
    assert [r["samples"] for r in rows] == [10, 2, 2, 2]
    assert [r["share"] for r in rows] == pytest.approx([10 / 19, 2 / 19, 2 / 19, 2 / 19])
    assert [r["pages_touched"] for r in rows] == [5, 2, 2, 2]
    assert rows[0]["density"] == pytest.approx(10 / (65536 / 2**20))
    assert rows[0]["mean_latency"] == pytest.approx(4400 / 10)
    assert rows[0]["slow_share"] == pytest.approx(0.4)
    assert rows[1]["cache_samples"] == 2 and rows[1]["slow_share"] is None
    # object 1 freed at 1.0 s; others live to the END record at 3.0 s
    assert rows[1]["free_ns"] == START + S
    assert [r["free_ns"] is None for r in rows] == [True, False, True, True]
    assert [r["lifetime_s"] for r in rows] == pytest.approx([2.9, 0.8, 2.7, 1.5])
    # address reuse: object 3 has object 1's address and call stack, so it is occurrence 1
    assert rows[3]["addr"] == rows[1]["addr"]
    assert rows[3]["context_key"] == rows[1]["context_key"] != rows[0]["context_key"]
    assert [r["occurrence"] for r in rows] == [0, 0, 0, 1]
    assert rows[0]["node0_samples"] == 10


def test_touch_distribution(basic, fault):
    with_levels = pages.touch_distribution(basic).to_pydict()
    assert with_levels["pages"] == [4, 5, 1]  # the two cache hits are left out
    assert with_levels["share"] == pytest.approx([0.4, 0.5, 0.1])
    assert pages.touch_distribution(fault).to_pydict()["pages"] == [3, 5, 2]


def test_reuse_statistics_of_the_hottest_object(basic):
    intervals = pages.reuse_intervals(basic, sample_objects(basic), 0)
    assert sorted(intervals.tolist()) == pytest.approx([0.5, 1.0, 2.0])
    stats = dict(zip(*pages.reuse_statistics(intervals).to_pydict().values()))
    assert stats["min"] == pytest.approx(0.5) and stats["max"] == pytest.approx(2.0)
    assert stats["p25"] == pytest.approx(0.75) and stats["p50"] == pytest.approx(1.0)
    assert stats["p75"] == pytest.approx(1.5)
    assert stats["mean"] == pytest.approx(3.5 / 3)
    assert stats["std"] == pytest.approx(((0.5 - 7 / 6) ** 2 + (1 - 7 / 6) ** 2
                                          + (2 - 7 / 6) ** 2) ** 0.5 / 3 ** 0.5)


def test_tier_tables(basic, fault):
    split = tiers.tier_split(basic.samples).to_pylist()[0]
    assert split["outside_cache"] == pytest.approx(17 / 19)
    assert split["fast"] == pytest.approx(12 / 17) and split["slow"] == pytest.approx(5 / 17)
    cost = tiers.latency_split(basic.samples).to_pylist()[0]
    assert cost["fast_cost"] == pytest.approx(2400 / 5900)
    tlb = {(r["tier"], r["tlb"]): r["mean_latency"] for r in tiers.cost_by_tlb(basic.samples).to_pylist()}
    assert tlb == pytest.approx({("fast", "hit"): 170.0, ("fast", "miss"): 350.0,
                                 ("slow", "hit"): 600.0, ("slow", "miss"): 850.0})
    assert tiers.tier_split(fault.samples) is None and tiers.cost_by_tlb(fault.samples) is None


def test_retouch_interval_comes_from_fault_samples_only(basic, fault):
    # the two traces hold the same sample list, from the PEBS and the fault sampler: only the
    # fault sampler's latency is a re-reference interval (protect -> touch, us)
    perf = object_table(basic, labels=False).to_pylist()
    hint = object_table(fault, labels=False).to_pylist()
    assert all(r["retouch_us"] is None for r in perf)
    assert [r["retouch_us"] for r in hint] == pytest.approx([r["mean_latency"] for r in hint])
    assert hint[0]["retouch_us"] == pytest.approx(440.0)
