"""Policies on synthetic traces with known outcomes, through the Python driver."""

import numpy as np
import pytest

from objtier.sim import load_preset, simulate
from objtier.sim.events import from_trace
from objtier.sim.replay import run_policy
from objtier.trace import open_trace

from .conftest import MIB, MS, write_trace

FAST = 8 * MIB
QUICK = {"numab2.scan_delay_ms": "10", "tpp.scan_delay_ms": "10"}


@pytest.fixture
def hot_cold(hot_cold_trace):
    trace = open_trace(hot_cold_trace)
    sim = simulate(trace, ["first-touch", "numab2", "tpp", "memtis", "hemem", "object", "spill",
                           "oracle"], FAST, load_preset("cxl"), QUICK)
    return trace, {r.policy: r for r in sim.results}


def fast_acc(result):
    return result.counters["fast_loads"] + result.counters["fast_stores"]


def test_first_touch_fills_fast_in_allocation_order(hot_cold):
    trace, res = hot_cold
    ft = res["first-touch"].counters
    assert ft["alloc_fast_pages"] == FAST // 4096
    assert ft["alloc_slow_pages"] == (20 * MIB - FAST) // 4096
    # the cold object came first: exactly its samples in its first 8 MiB are fast
    addr = trace.samples.column("addr").to_numpy()
    expected = int(np.sum((addr >= 0x7f0000000000) & (addr < 0x7f0000000000 + FAST)))
    assert fast_acc(res["first-touch"]) == expected
    assert ft["pgpromote_success"] == 0 and ft["pgdemote_kswapd"] == 0


def test_no_static_policy_beats_the_oracle(hot_cold):
    _, res = hot_cold
    oracle = fast_acc(res["oracle"])
    for name in ("first-touch", "object", "spill"):
        assert fast_acc(res[name]) <= oracle, name
    # the plan puts the hot object in fast: close to the oracle, far above first-touch
    assert fast_acc(res["object"]) > 5 * fast_acc(res["first-touch"])


def test_page_policies_promote_the_hot_object(hot_cold):
    _, res = hot_cold
    for name in ("numab2", "tpp", "memtis", "hemem"):
        r = res[name]
        assert r.counters["pgpromote_success"] > 0, name
        assert r.counters["pgdemote_kswapd"] > 0, name  # fast was full: room was made
        assert fast_acc(r) > 3 * fast_acc(res["first-touch"]), name
    assert res["numab2"].counters["numa_hint_faults"] > 0
    assert res["numab2"].counters["numa_pte_updates"] > 0


def test_speedup_is_relative_to_first_touch(hot_cold):
    _, res = hot_cold
    assert res["first-touch"].speedup == pytest.approx(1.0)
    assert res["oracle"].speedup > 1.0


def test_rate_limit_caps_promotions_per_second(hot_cold_trace):
    trace = open_trace(hot_cold_trace)
    src = from_trace(trace)
    # 1 MB/s = 256 pages per 1-s window; the trace spans about 4 s -> at most 5 windows
    limited, _ = run_policy(src, "numab2", FAST, 12, 100 * MS,
                            {"scan_delay_ms": 10, "promote_rate_limit_MBps": 1})
    free, _ = run_policy(src, "numab2", FAST, 12, 100 * MS, {"scan_delay_ms": 10})
    assert 0 < limited["pgpromote_success"] <= 256 * 5
    assert free["pgpromote_success"] > limited["pgpromote_success"]


def test_hot_threshold_blocks_late_faults(tmp_path):
    """Pages first touched 2 s after the scan that armed them stay slow; a page touched within
    the threshold of its scan is promoted."""
    start = 1_000_000_000
    a, b = 0x7f0000000000, 0x7f1000000000
    # fast: 64 KiB (16 pages) all taken by `a`; `b` (16 pages) is slow
    t = np.array([start + 50 * MS, start + 2500 * MS], dtype=np.uint64)
    addr = np.array([b, b + 5 * 4096], dtype=np.uint64)
    path = write_trace(tmp_path / "t.otr", [(start, a, 64 * 1024, 1), (start + 1, b, 64 * 1024, 2)],
                       {"time_ns": t, "addr": addr}, start_ns=start)
    src = from_trace(open_trace(path))
    c, _ = run_policy(src, "numab2", 64 * 1024, 12, 100 * MS,
                      {"scan_delay_ms": 10, "scan_period_min_ms": 10000, "min_free_kbytes": 0,
                       "watermark_scale_factor": 0, "demotion_enabled": 1})
    assert c["numa_hint_faults"] == 2
    assert c["pgpromote_success"] <= 1
    assert c["slow_loads"] >= 1


def test_chunking_does_not_change_results(hot_cold_trace):
    src = from_trace(open_trace(hot_cold_trace))
    whole, bins_whole = run_policy(src, "numab2", FAST, 12, 100 * MS, {"scan_delay_ms": 10})
    small, bins_small = run_policy(src, "numab2", FAST, 12, 100 * MS, {"scan_delay_ms": 10},
                                   chunk=997)
    assert whole == small
    assert np.array_equal(bins_whole, bins_small)


def test_huge_pages(hot_cold_trace):
    src = from_trace(open_trace(hot_cold_trace))
    c, _ = run_policy(src, "first-touch", FAST, 21, 100 * MS)
    assert c["alloc_fast_pages"] == 4 and c["alloc_slow_pages"] == 6


def test_frees_release_fast_pages(tmp_path):
    """After the first object is freed, a later allocation gets the fast tier."""
    start = 1_000_000_000
    a, b = 0x7f0000000000, 0x7f1000000000
    t = np.array([start + 5 * MS], dtype=np.uint64)
    path = write_trace(tmp_path / "f.otr", [(start, a, 64 * 1024, 1), (start + 2 * MS, b, 64 * 1024, 2)],
                       {"time_ns": t, "addr": np.array([b], dtype=np.uint64)},
                       frees=[(start + 1 * MS, a, 0)], start_ns=start)
    c, _ = run_policy(from_trace(open_trace(path)), "first-touch", 64 * 1024, 12, 100 * MS)
    assert c["alloc_fast_pages"] == 32 and c["fast_loads"] == 1


def test_scale_multiplies_every_weight(hot_cold_trace):
    trace = open_trace(hot_cold_trace)
    one = simulate(trace, ["first-touch"], FAST, load_preset("cxl")).results[0]
    ten = simulate(trace, ["first-touch"], FAST, load_preset("cxl"), {"scale": "10"}).results[0]
    for key in ("fast_loads", "slow_loads"):
        assert ten.counters[key] == 10 * one.counters[key]
    assert ten.counters["samples"] == one.counters["samples"]
