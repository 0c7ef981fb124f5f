"""The runtime's online placement replayed by the simulator (objtier.plan.dynamic.learn_online,
`simulate --policy dynamic --param dynamic.mode=4`): a synthetic exact trace whose hot set
alternates between two arrays A and B of 1024 pages every 100 ms. The online rule only knows
what came before each tick: it locks the array of the phase a tick or two into the phase, keeps
it to the phase's end, and is still on the old array at the first tick of the next one — where
a schedule learned ahead (hot) is already on the new one."""

import numpy as np
import pytest

from objtier.errors import UsageError
from objtier.plan import dynamic as D
from objtier.sim import load_preset, simulate
from objtier.trace import format as F
from objtier.trace import open_trace
from tests.sim.conftest import write_trace

PAGE = 4096
MS = 1_000_000
START = 1_000_000_000
A, B = 0x7F0000000000, 0x7F0001000000
PAGES = 1024
PHASE_MS = 100
PHASES = 6


def _accesses() -> tuple[np.ndarray, np.ndarray]:
    """Every page of the phase's array once per 10 ms, in order, through each phase."""
    times, addrs = [], []
    for k in range(PHASES):
        base = A if k % 2 == 0 else B
        for sweep in range(PHASE_MS // 10):
            t0 = START + (k * PHASE_MS + sweep * 10) * MS
            times.append(t0 + np.arange(PAGES, dtype=np.int64) * (10 * MS // PAGES))
            addrs.append(base + np.arange(PAGES, dtype=np.int64) * PAGE + 64)
    return np.concatenate(times).astype(np.uint64), np.concatenate(addrs).astype(np.uint64)


@pytest.fixture
def trace(tmp_path):
    times, addrs = _accesses()
    end = int(times[-1]) + MS
    path = write_trace(tmp_path / "alt.otr", [(START - 2 * MS, A, PAGES * PAGE, 1),
                                              (START - MS, B, PAGES * PAGE, 2)],
                       {"time_ns": times, "addr": addrs},
                       frees=[(end, A, 0), (end, B, 0)], source=F.SOURCE_TRACE)
    return open_trace(path)


def _locked_after(sched: D.Schedule, base: list[int]) -> list[set[int]]:
    """The objects holding locked pages after each step."""
    held: dict[int, int] = {}
    out = []
    for s in sched.steps:
        for act, obj, _, n in s.actions:
            if act == D.LOCK:
                held[obj] = held.get(obj, 0) + n
            elif act in (D.UNLOCK, D.PAGEOUT):
                held[obj] = held.get(obj, 0) - n
        out.append({o for o, n in held.items() if n > 0})
    return out


def test_online_locks_the_array_in_use_one_tick_behind():
    times, addrs = _accesses()
    obj = np.where(addrs >= B, 1, 0)
    ticks = D.online_ticks(START, int(times[-1]), np.zeros(0, np.int64), [], 20 * MS)
    sched = D.learn_online(times, obj, addrs, np.array([A, B], np.uint64),
                           np.array([PAGES * PAGE] * 2, np.uint64),
                           np.array([START - 2 * MS, START - MS]), np.array([-1, -1]),
                           ticks, PAGES, 12, armed_per_tick=400.0)
    assert sched.mode == "online" and len(sched.steps) == len(ticks)
    held = _locked_after(sched, [0, PAGES])
    for k, (t, ordinal, _, off) in enumerate(ticks):
        assert ordinal == 0 and off == t - START
        phase = (t - START) // (PHASE_MS * MS)
        into = (t - START) % (PHASE_MS * MS)
        if phase >= PHASES:
            continue
        if into >= 40 * MS:             # two ticks into the phase: its array, alone
            assert held[k] == {phase % 2}, (k, held[k])
        if into == 0 and phase > 0:     # at the switch it cannot know yet: the old array
            assert held[k] == {(phase - 1) % 2}, (k, held[k])
    # never more than the budget: one array of the two
    pages = 0
    for s in sched.steps:
        pages += sum(n for a, _, _, n in s.actions if a == D.LOCK)
        pages -= sum(n for a, _, _, n in s.actions if a in (D.UNLOCK, D.PAGEOUT))
        assert 0 <= pages <= PAGES
    # it moved its locks at every phase after the first
    assert sum(1 for s in sched.steps for a in s.actions if a[0] == D.UNLOCK) >= PHASES - 1


def test_simulated_online_sits_between_the_kernel_and_belady(trace):
    sim = simulate(trace, ["first-touch", "spill", "belady", "dynamic"], 5 * PAGES * PAGE // 4,
                   load_preset("zram"), params={"dynamic.mode": "4", "dynamic.online_ms": "20"})
    c = {r.policy: r.counters for r in sim.results}
    belady, spill, online = (c["belady"]["pswpin"], c["spill"]["pswpin"],
                             c["dynamic"]["pswpin"])
    # the spill plan keeps one array and faults on the other's every sweep; online follows
    # the phases a tick or two behind (20-40 % of a phase's sweeps fault on the new array
    # while the old one is still locked): below spill, above Belady
    assert belady <= online < 0.75 * spill, (belady, online, spill)
    assert c["dynamic"]["pglock_step"] >= (PHASES - 1) * PAGES // 2


def test_bad_online_parameters_are_refused(trace):
    for key, value in (("dynamic.online_ms", "0"), ("dynamic.sample_rate", "0"),
                       ("dynamic.mode", "5")):
        with pytest.raises(UsageError, match=key.split(".")[1]):
            simulate(trace, ["dynamic"], "50%", load_preset("zram"),
                     params={"dynamic.mode": "4", key: value})


def _phased_trace(tmp_path):
    """The same accesses with a phase marker at each phase's start: "a" sweeps A, "b" B."""
    times, addrs = _accesses()
    end = int(times[-1]) + MS
    phases = []
    for k in range(PHASES):
        t = START + k * PHASE_MS * MS
        if k:
            phases.append((t, 1 + (k - 1) % 2, 2))
        phases.append((t, 1 + k % 2, 1))
    path = write_trace(tmp_path / "alt-phases.otr", [(START - 2 * MS, A, PAGES * PAGE, 1),
                                                     (START - MS, B, PAGES * PAGE, 2)],
                       {"time_ns": times, "addr": addrs}, frees=[(end, A, 0), (end, B, 0)],
                       phases=phases, names={1: "a", 2: "b"}, source=F.SOURCE_TRACE)
    return open_trace(path)


def _learn_with_switches(memory: bool) -> tuple[list, list[set[int]]]:
    """The online rule with a period longer than the run (only switch ticks act), phase
    switches at every phase's start."""
    times, addrs = _accesses()
    obj = np.where(addrs >= B, 1, 0)
    switch = START + np.arange(PHASES, dtype=np.int64) * PHASE_MS * MS
    names = ["a" if k % 2 == 0 else "b" for k in range(PHASES)]
    ticks = D.online_ticks(START - 30 * MS, int(times[-1]), switch, names, 10_000 * MS,
                           switch_gap_ns=5 * MS)
    sched = D.learn_online(times, obj, addrs, np.array([A, B], np.uint64),
                           np.array([PAGES * PAGE] * 2, np.uint64),
                           np.array([START - 2 * MS, START - MS]), np.array([-1, -1]),
                           ticks, PAGES, 12, armed_per_tick=400.0, phase_memory=memory)
    return ticks, _locked_after(sched, [0, PAGES])


def test_switch_ticks_serve_every_switch_once():
    """With a switch gap, a tick at each switch (the period is longer than the run), named by
    the phase entered, offset 0; without one, no tick before the period's end."""
    switch = START + np.arange(PHASES, dtype=np.int64) * PHASE_MS * MS
    names = ["a" if k % 2 == 0 else "b" for k in range(PHASES)]
    end = START + PHASES * PHASE_MS * MS
    ticks = D.online_ticks(START - 30 * MS, end, switch, names, 10_000 * MS, switch_gap_ns=5 * MS)
    assert [t for t, _, _, _ in ticks] == switch.tolist()
    assert [(o, n, off) for _, o, n, off in ticks] == [(k + 1, names[k], 0)
                                                       for k in range(PHASES)]
    assert D.online_ticks(START - 30 * MS, end, switch, names, 10_000 * MS) == []
    # two switches closer than the gap: the second waits for the gap after the first's tick
    close = np.array([START, START + 2 * MS], np.int64)
    ticks = D.online_ticks(START - 30 * MS, end, close, ["a", "b"], 10_000 * MS,
                           switch_gap_ns=5 * MS)
    assert [(t - START, n) for t, _, n, _ in ticks] == [(0, "a"), (5 * MS, "b")]


def test_phase_memory_locks_a_phase_seen_before_at_its_start():
    """At the switch tick into a phase seen before, the memory locks that phase's array at
    once; the same rule without the memory is still on the array of the phase that ended."""
    ticks, held = _learn_with_switches(memory=True)
    _, held_without = _learn_with_switches(memory=False)
    assert len(ticks) == PHASES
    for k in range(2, PHASES):
        assert held[k] == {k % 2}, (k, held)
        assert held_without[k] == {(k - 1) % 2}, (k, held_without)


def test_simulated_phase_memory_cuts_the_lag(tmp_path):
    trace = _phased_trace(tmp_path)
    fast = 5 * PAGES * PAGE // 4
    got = {}
    for memory in ("1", "0"):
        sim = simulate(trace, ["belady", "dynamic"], fast, load_preset("zram"),
                       params={"dynamic.mode": "4", "dynamic.online_ms": "20",
                               "dynamic.phase_memory": memory})
        c = {r.policy: r.counters for r in sim.results}
        got[memory] = c["dynamic"]["pswpin"]
        belady = c["belady"]["pswpin"]
    # without the memory the first 20-40 ms of every phase fault on the new array while the
    # old one holds the locks; with it, from the third phase on the array is locked at the
    # switch
    assert belady <= got["1"] < 0.8 * got["0"], (belady, got)
    with pytest.raises(UsageError, match="phase_memory"):
        simulate(trace, ["dynamic"], fast, load_preset("zram"),
                 params={"dynamic.mode": "4", "dynamic.phase_memory": "2"})


def test_a_late_switch_tick_keeps_the_phase_left_apart():
    """Switch ticks 5 ms into each phase (half a sweep of the new array already done): the
    accesses before the switch are scored for the phase left, those after it for the phase
    entered, so the memory of a phase holds only its own array and each phase from the third
    on has its array alone locked at its tick."""
    times, addrs = _accesses()
    obj = np.where(addrs >= B, 1, 0)
    names = ["a" if k % 2 == 0 else "b" for k in range(PHASES)]
    ticks = [(START + (k * PHASE_MS + 5) * MS, k + 1, names[k], 5 * MS) for k in range(PHASES)]
    sched = D.learn_online(times, obj, addrs, np.array([A, B], np.uint64),
                           np.array([PAGES * PAGE] * 2, np.uint64),
                           np.array([START - 2 * MS, START - MS]), np.array([-1, -1]),
                           ticks, PAGES, 12, armed_per_tick=400.0, phase_memory=True)
    held = _locked_after(sched, [0, PAGES])
    for k in range(2, PHASES):
        assert held[k] == {k % 2}, (k, held)
