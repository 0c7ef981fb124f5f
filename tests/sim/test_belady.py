"""The belady policy (Belady's MIN in swap mode): the simulator's counts equal a direct
implementation of MIN on the same reference string, and no other policy has fewer swap-ins."""

import numpy as np
import pytest

from objtier.errors import UsageError
from objtier.sim import load_preset, simulate
from objtier.trace import open_trace
from objtier.trace import format as F

from .conftest import MIB, MS, reference_min, write_trace

PAGE = 4096
BASE = 0x7f0000000000


def page_trace(path, pages: np.ndarray, npages: int):
    """An exact trace (source TRACE, weight 1) of one object of npages pages; sample i touches
    page pages[i], 1 us apart."""
    start = 1_000_000_000
    n = len(pages)
    samples = {"time_ns": start + MS + 1000 * np.arange(n, dtype=np.uint64),
               "addr": BASE + pages.astype(np.uint64) * PAGE + 64}
    return write_trace(path, [(start, BASE, npages * PAGE, 1)], samples,
                       frees=[(start + 2 * MS + 1000 * n, BASE, 0)], start_ns=start,
                       source=F.SOURCE_TRACE)


def run(trace_path, fast_pages: int, policies=("first-touch", "belady")):
    sim = simulate(open_trace(trace_path), list(policies), fast_pages * PAGE,
                   load_preset("zram"), {"swap_reserve": "0"})
    return sim, {r.policy: r.counters for r in sim.results}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_belady_equals_a_direct_min(tmp_path, seed):
    rng = np.random.default_rng(seed)
    npages = 60
    # loops of varying length mixed with random jumps: LRU and MIN differ a lot here
    parts = []
    for _ in range(40):
        if rng.random() < 0.5:
            parts.append(np.arange(int(rng.integers(10, npages))))
        else:
            parts.append(rng.integers(0, npages, int(rng.integers(5, 40))))
    pages = np.concatenate(parts)
    path = page_trace(tmp_path / "mix.otr", pages, npages)
    for cap in (8, 25, 50):
        sim, c = run(path, cap)
        swap_ins, zero_fills = reference_min(pages.tolist(), cap)
        assert c["belady"]["pswpin"] == swap_ins, cap
        assert c["belady"]["pgfault_first_touch"] == zero_fills, cap
        assert c["belady"]["pgmigrate_fail"] == 0
        assert c["belady"]["pswpin"] <= c["first-touch"]["pswpin"], cap
        assert c["belady"]["peak_fast_pages"] <= cap
    assert sim.notes == []  # exact trace, one object never reused


def test_cyclic_sweep_min_keeps_a_fixed_set(tmp_path):
    # 10 sweeps over 100 pages with room for 60: LRU misses every page of every later sweep;
    # MIN misses only about the 40 that do not fit (plus one per sweep)
    npages, cap, sweeps = 100, 60, 10
    pages = np.tile(np.arange(npages), sweeps)
    _, c = run(page_trace(tmp_path / "loop.otr", pages, npages), cap)
    assert c["first-touch"]["pswpin"] == (sweeps - 1) * npages
    swap_ins, _ = reference_min(pages.tolist(), cap)
    assert c["belady"]["pswpin"] == swap_ins
    assert (sweeps - 1) * (npages - cap) <= swap_ins <= (sweeps - 1) * (npages - cap + 1)


def test_belady_is_a_lower_bound_for_the_other_policies(hot_cold_trace):
    trace = open_trace(hot_cold_trace)
    sim = simulate(trace, ["first-touch", "object", "spill", "oracle", "belady"], 8 * MIB,
                   load_preset("zram"))
    c = {r.policy: r.counters for r in sim.results}
    for policy in ("first-touch", "object", "spill", "oracle"):
        assert c["belady"]["pswpin"] <= c[policy]["pswpin"], policy
    assert c["belady"]["pswpin"] < c["first-touch"]["pswpin"]
    # the fault-sampler trace is not a reference string: the note says so
    assert any("sampled, not exact" in n for n in sim.notes)


def test_belady_needs_the_swap_tier(hot_cold_trace):
    with pytest.raises(UsageError, match="belady needs the swap tier"):
        simulate(open_trace(hot_cold_trace), ["belady"], 8 * MIB, load_preset("cxl"))


def test_address_reuse_is_noted(tmp_path):
    start = 1_000_000_000
    n = 100
    samples = {"time_ns": start + 10 * MS + 1000 * np.arange(n, dtype=np.uint64),
               "addr": np.full(n, BASE + 64, dtype=np.uint64)}
    allocs = [(start, BASE, 4 * PAGE, 1), (start + 5 * MS, BASE, 4 * PAGE, 2)]
    path = write_trace(tmp_path / "reuse.otr", allocs, samples,
                       frees=[(start + 4 * MS, BASE, 0)], start_ns=start)
    sim = simulate(open_trace(path), ["belady"], 2 * PAGE, load_preset("zram"))
    assert any("reuses the addresses" in n for n in sim.notes)


def test_a_trace_too_large_for_memory_is_refused_before_the_oom_killer(hot_cold_trace,
                                                                          monkeypatch):
    import objtier.procfs
    from objtier.errors import EnvironmentProblem
    from objtier.sim.run import driver_memory_bytes

    trace = open_trace(hot_cold_trace)
    n = trace.samples.num_rows
    assert driver_memory_bytes(n, ["first-touch"]) < driver_memory_bytes(n, ["oracle", "belady"])
    monkeypatch.setattr(objtier.procfs, "meminfo_bytes", lambda field: 1 << 20)
    with pytest.raises(EnvironmentProblem, match=f"{n:,} samples.*GiB is available"):
        simulate(trace, ["belady"], 8 * MIB, load_preset("zram"))


def test_meminfo_reads_this_machine():
    from objtier.procfs import meminfo_bytes

    total, available = meminfo_bytes("MemTotal"), meminfo_bytes("MemAvailable")
    assert total and available and 0 < available <= total
    assert meminfo_bytes("NoSuchField") is None
