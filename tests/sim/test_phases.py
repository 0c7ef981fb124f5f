"""The phases policy: per-phase placements switched at the trace's PHASE records."""


import numpy as np
import pytest

from objtier.sim import load_preset, simulate
from objtier.sim.phase_events import ROOT, timeline
from objtier.trace import open_trace

from .conftest import MIB, MS, write_trace

A, B, C = 0x7f0000000000, 0x7f1000000000, 0x7f2000000000
START = 1_000_000_000


def two_phase_trace(directory, n=100_000):
    """Three 4 MiB objects; phase "build" (0.01-2 s) sends 90% of its samples to A, phase
    "search" (2-4 s) 90% to B, the rest to C. With 4 MiB fast, one whole-program plan can hold
    only one of A and B; a per-phase plan holds the right one in each phase."""
    rng = np.random.default_rng(3)
    t = np.sort(rng.integers(START + 10 * MS, START + 4000 * MS, n)).astype(np.uint64)
    second = t >= START + 2000 * MS
    hot = rng.random(n) < 0.9
    base = np.where(hot, np.where(second, B, A), C).astype(np.uint64)
    addr = base + rng.integers(0, 4 * MIB, n).astype(np.uint64)
    weight = np.full(n, 100, dtype=np.uint64)  # a sampling period of 100 accesses
    allocs = [(START + 1 * MS, A, 4 * MIB, 1), (START + 2 * MS, B, 4 * MIB, 2),
              (START + 3 * MS, C, 4 * MIB, 3)]
    phases = [(START + 5 * MS, 1, 1), (START + 2000 * MS, 1, 2), (START + 2000 * MS, 2, 1),
              (START + 4050 * MS, 2, 2)]
    return write_trace(directory / "phases.otr", allocs,
                       {"time_ns": t, "addr": addr, "weight": weight},
                       phases=phases, names={1: "build", 2: "search"}, start_ns=START)


@pytest.fixture
def phased(tmp_path):
    return open_trace(two_phase_trace(tmp_path))


def test_timeline_reads_phase_records(phased):
    tl = timeline(phased, START + 5000 * MS)
    assert tl.name == ["build", "search"] and tl.parent == ["", ""]
    assert tl.start_ns.tolist() == [START + 5 * MS, START + 2000 * MS]
    assert tl.switch_name == ["build", ROOT, "search", ROOT]


@pytest.mark.parametrize("preset", ["cxl", "optane"])
def test_phases_beat_object_when_hot_objects_change(phased, preset):
    sim = simulate(phased, ["first-touch", "object", "phases", "oracle"], 4 * MIB,
                   load_preset(preset))
    res = {r.policy: r for r in sim.results}
    ph, obj = res["phases"].counters, res["object"].counters
    # into build, into search (the exit of build at the same time is no switch), out of search
    assert ph["phase_switches"] == 3
    # the switch to search moves A out and B in: 1024 pages each way
    assert ph["pgmigrate_phase"] >= 2 * 1024
    assert ph["pgpromote_success"] >= 1024 and ph["pgdemote_kswapd"] >= 1024
    # each phase's hot object is fast: ~90% of accesses fast, vs ~50% for one static plan
    total = sum(ph[k] for k in ("fast_loads", "slow_loads"))
    assert ph["fast_loads"] > 0.85 * total
    assert obj["fast_loads"] < 0.6 * total
    assert res["phases"].stall["total_ns"] < res["object"].stall["total_ns"]
    assert res["phases"].speedup > res["object"].speedup
    # migrations were charged
    assert res["phases"].stall["migration_ns"] > 0


def test_phases_from_a_plan_file(phased, tmp_path):
    ctx = phased.contexts
    keys = dict(zip(ctx.column("context").to_pylist(), ctx.column("key").to_pylist()))

    def entry(phase, context, fast=1 << 40):
        return {"phase": phase, "context_key": keys[context], "occurrence": None,
                "size_min": 0, "size_max": 1 << 40, "tier": "fast" if fast else "slow",
                "fast_bytes": fast}

    plan = {"format": "objtier-plan", "version": 1,
            "phases": [{"name": "*", "target": "*"}, {"name": "build", "target": "build"},
                       {"name": "search", "target": "build"}],
            "entries": [entry("*", 3), entry("build", 1), entry("build", 3, 0)]}
    sim = simulate(phased, ["phases"], 4 * MIB, load_preset("cxl"), plan_doc=plan)
    c = sim.results[0].counters
    # search runs build's plan (A fast): the exit of build and the entry of search at the same
    # time are no switch. Entering build moves C out and A in; leaving search (the end of the
    # trace) moves them back.
    assert c["phase_switches"] == 2
    assert c["pgmigrate_phase"] == 4 * 1024
    assert c["pgpromote_success"] == c["pgdemote_kswapd"] == 2 * 1024
    # without its own entry for C, build keeps C's "*" entry (as the runtime does): C stays
    # pinned in the full fast tier and A finds no room
    plan["entries"] = [entry("*", 3), entry("build", 1)]
    c = simulate(phased, ["phases"], 4 * MIB, load_preset("cxl"),
                 plan_doc=plan).results[0].counters
    assert c["pgmigrate_phase"] == 0 and c["pgmigrate_fail"] >= 1024


def test_phases_need_phase_records(hot_cold_trace):
    with pytest.raises(Exception, match="no phases"):
        simulate(open_trace(hot_cold_trace), ["phases"], 8 * MIB, load_preset("cxl"))
