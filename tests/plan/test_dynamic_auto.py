"""Schedule auto per phase: a synthetic exact trace (written with the real TraceWriter, replayed
by the real simulator) whose phases favour different schedules. Phase "x" alternates between
two arrays P and Q of 80 pages in short blocks, each swept 8 times: a locked set that follows
the blocks (next-use with windows) brings each array in once per block, one fixed for the
phase leaves 70 pages of one array to fault on every sweep. Phase "y" walks an array R of 130
pages over and over in one fixed shuffled order (no sweep: nothing to prefetch): a fixed
locked set keeps 90 of its pages, a moving one brings most of R in on every walk. The fast
tier holds 100 pages, 90 of them lockable."""

import numpy as np
import pytest

from objtier.plan import dynamic as D
from objtier.sim.dynamic import PhaseEvaluator, schedule_for
from objtier.sim.events import from_trace
from objtier.trace import format as F
from objtier.trace import open_trace
from tests.sim.conftest import write_trace

PAGE = 4096
US = 1000
P, Q, R = 0x7F0000000000, 0x7F0000100000, 0x7F0000200000
SIZES = {P: 80, Q: 80, R: 130}
LOCK_PAGES = 90


def _program(start: int) -> tuple[list[int], list[int], list[tuple[int, int, int]]]:
    """(times, addresses, phase records) of x, y, x, y: one access a microsecond."""
    times, addrs, phases = [], [], []
    t = start + 10 * US
    walk = np.random.default_rng(3).permutation(SIZES[R]).tolist()

    def sweep(base: int, times_over: int, order=None) -> None:
        nonlocal t
        for _ in range(times_over):
            for p in range(SIZES[base]) if order is None else order:
                times.append(t)
                addrs.append(base + p * PAGE + 8)
                t += US

    for _ in range(2):
        phases.append((t, 1, 1))
        for block in range(8):
            sweep(P if block % 2 == 0 else Q, 8)
        phases.append((t, 1, 2))
        phases.append((t, 2, 1))
        sweep(R, 6, walk)
        phases.append((t, 2, 2))
    return times, addrs, phases


@pytest.fixture
def phased(tmp_path):
    start = 1_000_000_000
    times, addrs, phases = _program(start)
    allocs = [(start + k * US, base, SIZES[base] * PAGE, k + 1) for k, base in
              enumerate((P, Q, R))]
    end = times[-1] + 10 * US
    frees = [(end, base, 0) for base in (P, Q, R)]
    path = write_trace(tmp_path / "phased.otr", allocs,
                       {"time_ns": np.asarray(times, np.uint64),
                        "addr": np.asarray(addrs, np.uint64)}, frees, start_ns=start,
                       phases=phases, names={1: "x", 2: "y"}, source=F.SOURCE_TRACE)
    return open_trace(path)


def test_per_phase_schedule_beats_every_single_candidate(phased):
    source = from_trace(phased)
    fast = 100 * PAGE
    evaluate = PhaseEvaluator(source, fast, 12, {"advice_rate": 0})
    sched = schedule_for(phased, source, LOCK_PAGES * PAGE, 12, None, {"advice_rate": 0},
                         evaluate=evaluate)
    scores = dict(sched.evaluated)
    assert sched.mode == "per-phase", scores
    singles = {k: v for k, v in scores.items() if k != "per-phase"}
    assert len(singles) >= 4
    assert scores["per-phase"] < min(singles.values())
    # the phases went to different candidates: x to a moving set, y to a fixed one
    segs = D.segments(sched)
    by_phase = {sched.steps[lo].phase: [] for _, lo, _ in segs}
    for (_, lo, _), name in zip(segs, sched.phases):
        by_phase[sched.steps[lo].phase].append(name)
    assert all(n.startswith("nextuse w=") and n != "nextuse w=0" for n in by_phase["x"])
    assert not any(n.startswith("nextuse w=") and n != "nextuse w=0" for n in by_phase["y"])
    # the recorded figure is a replay of the stitched schedule as kept, not a sum of pieces
    again = PhaseEvaluator(source, fast, 12, {"advice_rate": 0})(sched)
    assert again[0] == scores["per-phase"]
    assert int(again[0]) == int(evaluate.per_phase[id(sched)].sum())


def test_phase_counts_add_up_to_the_whole_run(phased):
    """The per-phase swap-ins of a replay sum to its total, and the phases that sweep R with
    a fixed locked set fault on R's unlocked pages on every sweep but the first."""
    source = from_trace(phased)
    evaluate = PhaseEvaluator(source, 100 * PAGE, 12, {"advice_rate": 0})
    hot = schedule_for(phased, source, LOCK_PAGES * PAGE, 12, None, {"mode": 1})
    total, _ = evaluate(hot)
    per = evaluate.per_phase[id(hot)]
    assert int(per.sum()) == total
    names = [hot.steps[lo].phase for _, lo, _ in D.segments(hot)]
    assert names[:5] == ["*", "x", "y", "x", "y"]
    y = [int(per[i]) for i, n in enumerate(names) if n == "y"]
    # 40 of R's 130 pages unlocked, at most 10 of them resident: >= 30 swap-ins a sweep
    assert all(v >= 5 * 30 for v in y)


def test_stitch_moves_the_locked_set_at_the_junction():
    """Two one-object schedules on the same switches; stitched, phase 1 runs B's steps: its
    first step unlocks what A left locked and locks B's set, and the locked sets replay."""
    page_base = np.array([0, 10, 20], np.int64)
    a = D.Schedule([D.Step(0, 0, "*", 0, [(D.LOCK, 0, 0, 10)]),
                    D.Step(5, 1, "x", 0, [])], 10, 12, 0.0, mode="static")
    b = D.Schedule([D.Step(0, 0, "*", 0, [(D.LOCK, 1, 0, 4)]),
                    D.Step(5, 1, "x", 0, [(D.PAGEOUT, 1, 0, 4), (D.LOCK, 1, 5, 5),
                                          (D.WILLNEED, 0, 0, 2)]),
                    D.Step(7, 1, "x", 2, [(D.UNLOCK, 1, 5, 1)])], 10, 12, 1.0, mode="hot")
    s = D.stitch([a, b], [0, 1], page_base)
    assert [(x.time_ns, x.switch) for x in s.steps] == [(0, 0), (5, 1), (7, 1)]
    assert s.steps[0].actions == [(D.LOCK, 0, 0, 10)]
    assert sorted(s.steps[1].actions) == sorted([(D.UNLOCK, 0, 0, 10), (D.LOCK, 1, 5, 5),
                                                 (D.WILLNEED, 0, 0, 2)])
    assert s.steps[2].actions == [(D.UNLOCK, 1, 5, 1)]
    after = D.locked_after(s, page_base)
    assert after[-1].tolist() == [16, 17, 18, 19]
    with pytest.raises(ValueError):
        D.stitch([a, b], [0], page_base)


def test_auto_keeps_the_static_schedule_unless_another_wins_by_the_margin(phased):
    """With room for every page the phase-switch schedules simulate no swap-in: a tie, and
    auto keeps the static one. On the tight tier the per-phase schedule simulates 70 % fewer
    swap-ins than the static one: kept with the default margin (5 %), not with a margin of
    90 % (dynamic.min_gain), which keeps the static schedule instead."""
    source = from_trace(phased)
    roomy = PhaseEvaluator(source, 400 * PAGE, 12, {"advice_rate": 0})
    sched = schedule_for(phased, source, 360 * PAGE, 12, None, {"advice_rate": 0},
                         evaluate=roomy)
    assert sched.evaluated["static"] == sched.evaluated["hot w=0"] == 0
    assert sched.mode == "static"
    tight = PhaseEvaluator(source, 100 * PAGE, 12, {"advice_rate": 0})
    kept = schedule_for(phased, source, LOCK_PAGES * PAGE, 12, None, {"advice_rate": 0},
                        evaluate=tight)
    assert kept.evaluated["per-phase"] < 0.3 * kept.evaluated["static"]
    assert kept.mode == "per-phase"
    strict = schedule_for(phased, source, LOCK_PAGES * PAGE, 12, None,
                          {"advice_rate": 0, "min_gain": 0.9}, evaluate=tight)
    assert strict.mode == "static" and strict.evaluated == kept.evaluated
    # a margin of 1 % clears the gain, but needs the static count to be 1 / 0.01^2 = 10,000
    # or more to show it (its 5,840 do not): static again
    fine = schedule_for(phased, source, LOCK_PAGES * PAGE, 12, None,
                        {"advice_rate": 0, "min_gain": 0.01}, evaluate=tight)
    assert 1 / 0.01 ** 2 > fine.evaluated["static"] > 1 / 0.05 ** 2
    assert fine.mode == "static"
    assert [s.actions for s in strict.steps] == [
        s.actions for s in schedule_for(phased, source, LOCK_PAGES * PAGE, 12, None,
                                        {"mode": 3}).steps]
    with pytest.raises(Exception, match="min_gain"):
        schedule_for(phased, source, LOCK_PAGES * PAGE, 12, None, {"min_gain": 1},
                     evaluate=tight)


def test_a_given_plan_runs_as_a_schedule_and_is_the_fallback(phased):
    """A per-phase plan (x keeps P, y keeps R) as a schedule: at each switch into x, P's 80
    pages locked and R's unlocked, into y the reverse, R capped at the 90 lockable pages.
    With it, auto's fallback is that plan, not the spill plan."""
    from objtier.sim.dynamic import plan_candidate
    from objtier.sim.placement import context_keys

    source = from_trace(phased)
    keys = context_keys(phased, source)
    addr = source.addr.tolist()

    def entry(base, phase, fast):
        o = addr.index(base)
        return {"phase": phase, "context_key": str(keys[o]), "occurrence": 0,
                "size_min": SIZES[base] * PAGE, "size_max": SIZES[base] * PAGE,
                "fast_bytes": fast}

    doc = {"entries": [entry(P, "x", 80 * PAGE), entry(R, "y", 130 * PAGE)],
           "phases": [{"name": "*", "target": "*"}, {"name": "x", "target": "x"},
                      {"name": "y", "target": "y"}]}
    tight = PhaseEvaluator(source, 100 * PAGE, 12, {"advice_rate": 0})
    sched = schedule_for(phased, source, LOCK_PAGES * PAGE, 12, None,
                         {"advice_rate": 0, "min_gain": 0.99}, evaluate=tight,
                         static_plan=doc)
    assert sched.mode == "plan" and "plan" in sched.evaluated
    p, r = addr.index(P), addr.index(R)
    by_phase = {}
    for step in sched.steps:
        by_phase.setdefault(step.phase, []).append(sorted(step.actions))
    assert by_phase["x"][0] == [(D.LOCK, p, 0, 80)]
    assert by_phase["y"][0] == sorted([(D.UNLOCK, p, 0, 80), (D.LOCK, r, 0, LOCK_PAGES)])
    assert by_phase["x"][1] == sorted([(D.UNLOCK, r, 0, LOCK_PAGES), (D.LOCK, p, 0, 80)])
    again = plan_candidate(phased, source, doc, [(s.time_ns, s.switch, s.phase, s.offset_ns)
                                                 for s in sched.steps], LOCK_PAGES, 12)
    assert [s.actions for s in again.steps] == [s.actions for s in sched.steps]
    # the plan keeps y's fixed set and locks P in x: fewer swap-ins than the spill plan
    assert sched.evaluated["plan"] < sched.evaluated["static"]


def test_min_gain_is_checked_on_the_command_line(phased, tmp_path):
    import subprocess
    import sys

    def plan(*args):
        return subprocess.run([sys.executable, "-m", "objtier", "plan", str(phased.path),
                               "--fast", "50%", "-o", str(tmp_path / "p.json"), *args],
                              capture_output=True, text=True)

    for args, message in ((("--min-gain", "0.5"), "apply to --dynamic only"),
                          (("--dynamic", "--min-gain", "1.5"), "--min-gain"),
                          (("--dynamic", "--min-gain", "x"), "--min-gain")):
        run = plan(*args)
        assert run.returncode == 2 and message in run.stderr, run.stderr
        assert "Traceback" not in run.stderr


def test_the_plan_section_records_the_margin_and_the_stitched_phases(phased):
    from objtier.plan.dynamic_file import validate_section
    from objtier.sim.dynamic import section_from_trace

    section = section_from_trace(phased, LOCK_PAGES * PAGE, PAGE, 0.0, 2.0,
                                 fast_bytes=100 * PAGE, advice_rate=1_000_000)
    validate_section(section)
    assert section["mode"] == "per-phase" and section["min_gain"] == 0.05
    assert len(section["phase_modes"]) == len({s["switch"] for s in section["steps"]})
    strict = section_from_trace(phased, LOCK_PAGES * PAGE, PAGE, 0.0, 2.0,
                                fast_bytes=100 * PAGE, advice_rate=1_000_000, min_gain=0.9)
    assert strict["mode"] == "static" and strict["min_gain"] == 0.9
    assert "phase_modes" not in strict
    assert strict["simulated_swap_ins"] == section["simulated_swap_ins"]


def test_compare_arm_runs_the_static_plan_unless_a_schedule_clears_the_margin(phased,
                                                                                tmp_path):
    """compare --dynamic's arm (objtier.experiments.compare_dynamic.prepare) on this trace as
    its profile: with room for every page the plan simulates no swap-in (under 400, no gain
    can show against it) and the arm runs the static arm's plan itself (OBJTIER_PLAN, no schedule); on the tight tier the
    per-phase schedule clears the margin and the arm runs it (OBJTIER_DYNAMIC), locking no
    more than the plan keeps fast at once."""
    import json

    from objtier.experiments.compare_dynamic import planned_peak, prepare
    from objtier.sim.placement import context_keys

    source = from_trace(phased)
    keys = context_keys(phased, source)
    addr = source.addr.tolist()

    def entry(base, phase, pages):
        return {"phase": phase, "context_key": str(keys[addr.index(base)]), "occurrence": 0,
                "size_min": SIZES[base] * PAGE, "size_max": SIZES[base] * PAGE,
                "fast_bytes": pages * PAGE}

    doc = {"entries": [entry(P, "x", 80), entry(R, "y", 130)],
           "phases": [{"name": "*", "target": "*"}, {"name": "x", "target": "x"},
                      {"name": "y", "target": "y"}]}
    assert planned_peak(doc) == 130 * PAGE
    for limit, runs_plan in ((400 * PAGE, True), (100 * PAGE, False)):
        out = tmp_path / str(limit)
        out.mkdir()
        (out / "plan.json").write_text(json.dumps(doc))
        (out / "plan.txt").write_text("objtier-plan 1\n")
        arm = prepare(phased.path, limit, PAGE, out, 2000, lambda text: None)
        section = arm.plan["dynamic"]
        assert section["lock_bytes"] <= min(planned_peak(doc), limit)
        if runs_plan:
            assert section["mode"] == "plan" and section["simulated_swap_ins"]["plan"] == 0
            assert arm.env["OBJTIER_PLAN"] == str((out / "plan.txt").resolve())
            assert "OBJTIER_DYNAMIC" not in arm.env
        else:
            assert section["mode"] == "per-phase"
            assert section["simulated_swap_ins"]["plan"] >= 400
            assert "OBJTIER_DYNAMIC" in arm.env and "OBJTIER_PLAN" not in arm.env
        arm.close()                                   # its counts' spool, if any, goes away
        assert arm.spool is None or not arm.spool.path.exists()
