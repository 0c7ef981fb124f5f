"""Swap-tier semantics (zram, nvme, rdma presets): swap-in on access, LRU swap-out, mlocked
plans. Synthetic traces with known outcomes through the Python driver."""

import numpy as np
import pytest

from objtier.sim import load_preset, simulate
from objtier.trace import open_trace

from .conftest import MIB, MS, write_trace

FAST = 8 * MIB
HOT, COLD = 0x7f1000000000, 0x7f0000000000


@pytest.fixture
def swap_run(hot_cold_trace):
    trace = open_trace(hot_cold_trace)
    sim = simulate(trace, ["first-touch", "object", "oracle"], FAST, load_preset("zram"))
    return trace, sim, {r.policy: r for r in sim.results}


def test_swap_presets_select_swap_mode():
    assert load_preset("zram").swap and load_preset("nvme").swap and load_preset("rdma").swap
    assert not load_preset("cxl").swap and not load_preset("optane").swap


def test_every_slow_access_is_a_swap_in(swap_run):
    _, sim, res = swap_run
    assert sim.swap
    for name, r in res.items():
        c = r.counters
        slow = c["slow_loads"] + c["slow_stores"]
        assert c["pgmigrate_fail"] == 0, name  # plans left 10% unpinned: no thrash
        assert c["swap_fault_pinned"] == 0, name
        assert c["pswpin"] == c["pgmajfault"] == slow, name  # each brings one page in
        assert int(r.bins["swap_in"].sum()) == c["pswpin"], name
        assert int(r.bins["swap_out"].sum()) == c["pswpout"], name
        assert c["pgdemote_kswapd"] == 0 and c["pgpromote_success"] == 0, name
        # memory is full all the time: every page brought in after the fill pushed one out
        assert c["pswpout"] > 0 and c["peak_fast_pages"] == FAST // 4096, name


def test_first_touch_is_lru_over_the_whole_footprint(swap_run):
    trace, _, res = swap_run
    ft = res["first-touch"].counters
    # the hot object's 1024 pages were allocated slow (fast was full of the cold object) and
    # entered by zero-fill faults, not swap-ins
    assert ft["alloc_slow_pages"] == 3 * 1024
    assert ft["pgfault_first_touch"] > 0
    # far more accesses are fast than in NUMA mode, where nothing moves (hot object all slow)
    addr = trace.samples.column("addr").to_numpy()
    hot = int(np.sum(addr >= HOT))
    assert ft["fast_loads"] > hot


def test_object_plan_pins_the_hot_object(swap_run):
    trace, _, res = swap_run
    obj = res["object"].counters
    addr = trace.samples.column("addr").to_numpy()
    hot = int(np.sum(addr >= HOT))
    cold = len(addr) - hot
    # the plan mlocks the 4 MiB hot object: none of its accesses ever faults, and the cold
    # object's pages cycle through the other 4 MiB of fast memory
    assert obj["slow_loads"] <= cold
    assert obj["fast_loads"] >= hot
    assert obj["pswpin"] < res["first-touch"].counters["pswpin"]
    assert res["object"].speedup > 1.0
    # per object: the plan's swap-ins are all the cold object's, first-touch's mostly the hot
    per = {name: r.object_swap_ins for name, r in res.items()}
    for name, r in res.items():
        assert int(per[name].sum()) == r.counters["pswpin"], name
    cold_obj, hot_obj = (0, 1) if trace.allocations.column("addr")[0].as_py() == COLD else (1, 0)
    assert per["object"][hot_obj] == 0 and per["object"][cold_obj] > 0
    assert per["first-touch"][hot_obj] > 0


def test_a_plan_pins_an_object_allocated_when_memory_is_full(tmp_path):
    # the cold object is allocated and touched first (fast memory fills with its unpinned
    # pages); the hot one, allocated after, is planned fast: mlock swaps cold pages out for it
    start = 1_000_000_000
    cold, hot = 0x7f0000000000, 0x7f1000000000
    n_cold = 16 * MIB // 4096
    t_cold = start + 2 * MS + np.arange(n_cold, dtype=np.uint64) * 1000
    t_hot0 = int(t_cold[-1]) + 2 * MS
    rng = np.random.default_rng(3)
    n_hot = 50_000
    t_hot = t_hot0 + 2 * MS + np.arange(n_hot, dtype=np.uint64) * 1000
    samples = {"time_ns": np.concatenate([t_cold, t_hot]),
               "addr": np.concatenate([cold + np.arange(n_cold, dtype=np.uint64) * 4096,
                                       hot + rng.integers(0, 4 * MIB, n_hot).astype(np.uint64)])}
    path = write_trace(tmp_path / "late.otr", [(start + MS, cold, 16 * MIB, 1),
                                               (t_hot0, hot, 4 * MIB, 2)], samples,
                       start_ns=start)
    sim = simulate(open_trace(path), ["first-touch", "object"], FAST, load_preset("zram"))
    res = {r.policy: r for r in sim.results}
    obj = res["object"]
    assert obj.object_swap_ins[1] == 0  # the hot object never faults: its pages are locked
    assert obj.counters["alloc_fast_pages"] == 1024 and obj.counters["pgmigrate_fail"] == 0
    assert obj.counters["pswpout"] >= 1024  # cold pages swapped out to make room
    # without a plan the hot object's pages find memory full at allocation (they enter later,
    # by zero-fill faults)
    assert res["first-touch"].counters["alloc_fast_pages"] == FAST // 4096


def test_cyclic_scan_larger_than_memory_always_faults(tmp_path):
    """A loop over 12 pages with 8 fast pages under LRU: every access after the first pass is
    a swap-in (the classic LRU worst case), and the object plan that mlocks 6 of them leaves
    2 frames to the other 6 pages: their accesses fault, the pinned ones never do."""
    start = 1_000_000_000
    a = 0x7f0000000000
    rounds, pages = 50, 12
    t = start + MS + np.arange(rounds * pages, dtype=np.uint64) * 1000
    addr = a + (np.arange(rounds * pages) % pages).astype(np.uint64) * 4096
    path = write_trace(tmp_path / "loop.otr",
                       [(start, a, 6 * 4096, 1), (start + 1, a + 6 * 4096, 6 * 4096, 2)],
                       {"time_ns": t, "addr": addr}, start_ns=start)
    trace = open_trace(path)
    ft = simulate(trace, ["first-touch"], 8 * 4096, load_preset("zram")).results[0].counters
    # the first 8 pages were placed fast at allocation, the last 4 are first touched
    assert ft["pgfault_first_touch"] == 4
    assert ft["pswpin"] == (rounds - 1) * pages
    assert ft["fast_loads"] == pages  # the first pass: 8 resident + 4 zero-filled
    plan = {"format": "objtier-plan", "version": 1, "entries": []}
    keys = dict(zip(trace.contexts.column("context").to_pylist(),
                    trace.contexts.column("key").to_pylist()))
    plan["entries"].append({"phase": "*", "context_key": keys[1], "occurrence": None,
                            "size_min": 0, "size_max": 1 << 40, "tier": "fast",
                            "fast_bytes": 1 << 40})
    obj = simulate(trace, ["object"], 8 * 4096, load_preset("zram"),
                   plan_doc=plan).results[0].counters
    assert obj["fast_loads"] >= rounds * 6  # pinned pages: always fast
    assert obj["pswpin"] == (rounds - 1) * 6  # 6 pages through 2 frames: every access faults


def test_a_plan_that_pins_more_than_fast_memory_is_noted(hot_cold_trace):
    """Both objects (20 MiB) planned fast with 8 MiB of fast memory: once the pinned pages fill
    it, an access to a swapped page finds no room. Those accesses are counted apart and named
    in a note, never passed off as a run without swap-ins."""
    trace = open_trace(hot_cold_trace)
    plan = {"format": "objtier-plan", "version": 1, "entries": [
        {"phase": "*", "context_key": key, "occurrence": None, "size_min": 0,
         "size_max": 1 << 40, "tier": "fast", "fast_bytes": 1 << 40}
        for key in trace.contexts.column("key").to_pylist()]}
    sim = simulate(trace, ["object"], FAST, load_preset("zram"), plan_doc=plan)
    c = sim.results[0].counters
    assert c["swap_fault_pinned"] > 0
    assert c["swap_fault_pinned"] == c["slow_loads"] + c["slow_stores"] - c["pswpin"]
    assert [n for n in sim.notes if n.startswith("object:") and "pinned" in n]
    # the 10 % reserve of plans made here keeps the same program clear of it
    fine = simulate(trace, ["object"], FAST, load_preset("zram"))
    assert fine.results[0].counters["swap_fault_pinned"] == 0 and not fine.notes


def test_swap_mode_can_be_forced_off(hot_cold_trace):
    trace = open_trace(hot_cold_trace)
    sim = simulate(trace, ["first-touch"], FAST, load_preset("zram"), {"swap": "0"})
    c = sim.results[0].counters
    assert not sim.swap and c["pswpin"] == 0 and c["slow_loads"] > 0


def test_cli_swap_columns(hot_cold_trace, tmp_path, capsys):
    import csv

    from objtier.cli import main

    out = tmp_path / "out"
    assert main(["simulate", str(hot_cold_trace), "--fast", "8M", "--preset", "zram",
                 "--policy", "first-touch,object", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "swap-in" in text and "slow tier = swap" in text
    rows = {r["policy"]: r for r in csv.DictReader(open(out / "simulate.csv"))}
    assert int(rows["first-touch"]["swap_ins"]) > int(rows["object"]["swap_ins"]) > 0
    objects = list(csv.DictReader(open(out / "simulate-objects.csv")))
    assert {int(r["size_bytes"]) for r in objects} == {4 * MIB, 16 * MIB}
    assert sum(int(r["swap_ins_first-touch"]) for r in objects) == \
        int(rows["first-touch"]["swap_ins"])
    assert all(r["allocated_at"] for r in objects)
    assert main(["simulate", str(hot_cold_trace), "--fast", "8M", "--param",
                 "swap_reserve=2"]) != 0
    assert "swap_reserve" in capsys.readouterr().err
