"""The dynamic policy on a real exact trace: the program whose hot set alternates between two
arrays (tests/alternating_program.py), built with `objtier cc`, recorded with the trace
sampler, replayed with half of its footprint fast. A whole-program plan keeps one array and
faults on every page of every sweep of the other; the dynamic schedule moves the locked set at
each phase switch and comes within a small factor of Belady's MIN."""

import numpy as np
import pytest

from objtier import native
from objtier.plan import dynamic as D
from objtier.sim import load_preset, simulate
from tests.alternating_program import SOURCE

from tests.exact.conftest import needs_clang

MIB_ARG, ROUNDS, SWEEPS, STRIDE = 1, 4, 60, 4096


@pytest.fixture
def alternating_trace(objtier_cc, run_exact):
    exe = objtier_cc(SOURCE, "alternating",
                     flags=("-O1", "-fno-vectorize", "-fno-unroll-loops",
                            f"-I{native.include_dir()}"))
    proc, trace = run_exact(exe, MIB_ARG, ROUNDS, SWEEPS, STRIDE, trace_limit=50_000_000)
    assert "alternating: sum" in proc.stdout
    return trace


@needs_clang
def test_dynamic_comes_close_to_belady_where_a_static_plan_cannot(alternating_trace):
    sim = simulate(alternating_trace, ["first-touch", "spill", "belady", "dynamic"], "50%",
                   load_preset("zram"))
    c = {r.policy: r.counters for r in sim.results}
    rows = {r["policy"]: r for r in sim.rows()}
    belady = c["belady"]["pswpin"]
    pages = (MIB_ARG << 20) // 4096
    # Belady brings each array in once per phase (at least the 2 * ROUNDS - 1 later phases)
    assert belady >= (2 * ROUNDS - 2) * pages // 2
    # spill locks most of one array: the other faults on most of its pages on every sweep
    assert c["spill"]["pswpin"] > 10 * belady
    # the schedule: one step per phase switch, each locks the array of its phase
    assert c["dynamic"]["phase_switches"] >= 2 * ROUNDS
    assert c["dynamic"]["pglock_step"] >= (2 * ROUNDS - 1) * pages // 2
    # within 1.5x of the optimum, and the program waits for few of them (prefetched)
    assert belady <= c["dynamic"]["pswpin"] <= 1.5 * belady
    # (most of them brought in by lock steps ahead of use: the schedule kept is stitched
    # per phase, 5 % fewer swap-ins than the hot one and more of them waited for)
    assert c["dynamic"]["pgmajfault"] < c["dynamic"]["pswpin"] / 4
    assert c["dynamic"]["pgprefetch"] + c["dynamic"]["pgmajfault"] == c["dynamic"]["pswpin"]
    assert c["dynamic"]["swap_fault_pinned"] == 0
    assert rows["dynamic"]["swap_ins"] == c["dynamic"]["pswpin"]  # simulate.csv's column


@needs_clang
def test_schedule_steps_follow_the_phase_switches(alternating_trace):
    from objtier.sim.events import from_trace
    from objtier.sim.dynamic import schedule_for

    source = from_trace(alternating_trace)
    sched = schedule_for(alternating_trace, source, 200 * 4096, 12, None, {"mode": 1})
    names = [s.phase for s in sched.steps]
    assert names[0] == "*" and names[1:1 + 2 * ROUNDS] == ["x", "y"] * ROUNDS
    assert [s.switch for s in sched.steps] == list(range(len(sched.steps)))
    # a step in phase y locks pages of y only, at most the budget, and unlocks or pages out x
    y_step = sched.steps[2]
    locked = [a for a in y_step.actions if a[0] == D.LOCK]
    assert locked and len({a[1] for a in locked}) == 1
    assert sum(a[3] for a in locked) <= 200
    x_obj = {a[1] for a in sched.steps[1].actions if a[0] == D.LOCK}
    assert {a[1] for a in y_step.actions if a[0] in (D.UNLOCK, D.PAGEOUT)} == x_obj
    offsets, objs, first, pages, action = sched.csr()
    assert len(offsets) == len(sched.steps) + 1 and int(offsets[-1]) == len(objs)
    assert np.all(np.isin(action, [D.UNLOCK, D.PAGEOUT, D.LOCK, D.WILLNEED, D.SWEEP]))


@needs_clang
def test_a_planned_schedule_replays_as_the_learned_one(alternating_trace, tmp_path):
    import json
    import subprocess
    import sys

    from objtier.plan import load_plan

    plan_path = tmp_path / "plan.json"
    made = subprocess.run([sys.executable, "-m", "objtier", "plan", str(alternating_trace.path),
                           "--fast", "50%", "--dynamic", "-o", str(plan_path)],
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    assert "dynamic schedule:" in made.stdout
    assert (plan_path.stat().st_mode & 0o777) == 0o600
    plan = load_plan(plan_path)
    assert plan["version"] == 2 and plan["entries"] == []
    assert {o["size"] for o in plan["dynamic"]["objects"]} == {MIB_ARG << 20}
    learned = simulate(alternating_trace, ["dynamic"], plan["budget"]["bytes"],
                       load_preset("zram"))
    replayed = simulate(alternating_trace, ["dynamic"], plan["budget"]["bytes"],
                        load_preset("zram"), plan_doc=plan)
    a, b = learned.results[0].counters, replayed.results[0].counters
    assert a["pswpin"] == b["pswpin"] and a["pglock_step"] == b["pglock_step"] > 0
    # a plan whose schedule is damaged is refused with one line
    plan["dynamic"]["steps"][1]["actions"][0][1] = 99
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(plan))
    run = subprocess.run([sys.executable, "-m", "objtier", "simulate", str(alternating_trace.path),
                          "--fast", "50%", "--preset", "zram", "--policy", "dynamic", "--plan",
                          str(bad)], capture_output=True, text=True)
    assert run.returncode != 0 and "dynamic section" in run.stderr
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1


@needs_clang
def test_run_applies_the_schedule_within_its_call_budget(alternating_trace, tmp_path):
    import os
    import re
    import subprocess
    import sys

    plan_path = tmp_path / "plan.json"
    subprocess.run([sys.executable, "-m", "objtier", "plan", str(alternating_trace.path),
                    "--fast", "50%", "--dynamic", "-o", str(plan_path)], check=True,
                   capture_output=True)
    exe = str(tmp_path / "alternating")
    args = [str(MIB_ARG), str(ROUNDS), str(SWEEPS), str(STRIDE)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBJTIER_")}
    plain = subprocess.run([exe, *args], env=env, capture_output=True, text=True)

    def run(*options):
        return subprocess.run([sys.executable, "-m", "objtier", "run", "--plan", str(plan_path),
                               *options, "--", exe, *args], env=env, capture_output=True,
                              text=True)

    full, starved = run(), run("--advice-rate", "3")
    for r in (full, starved):
        assert r.returncode == plain.returncode == 0 and r.stdout == plain.stdout, r.stderr
    counts = {}
    for name, r in (("full", full), ("starved", starved)):
        m = re.search(r"(\d+) advice calls .*?(\d+) failed\), (\d+) actions dropped", r.stderr)
        assert m, r.stderr
        counts[name] = tuple(int(g) for g in m.groups())
        assert "2 of 2 objects matched" in r.stderr
    calls, failed, dropped = counts["full"]
    assert calls >= 2 * (2 * ROUNDS - 1) and failed == 0 and dropped == 0
    s_calls, s_failed, s_dropped = counts["starved"]
    assert s_calls < calls and s_dropped > 0  # 3 calls per second: most steps cut short
    bad = run("--advice-rate", "0")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


@needs_clang
def test_auto_keeps_the_best_candidate_and_never_loses_to_the_static_plan(alternating_trace):
    """dynamic (auto) simulates hot, static and next-use schedules on the trace and keeps the
    one with the fewest swap-ins; the static candidate replays the spill plan's pages."""
    sim = simulate(alternating_trace, ["spill", "dynamic"], "50%", load_preset("zram"))
    c = {r.policy: r.counters for r in sim.results}
    note = next(n for n in sim.notes if n.startswith("dynamic: kept"))
    scores = {}
    for part in note.split("swap-ins ", 1)[1].split(", "):
        name, value = part.rsplit(" ", 1)
        scores[name] = int(value.replace(",", ""))
    assert {"static", "hot w=0", "nextuse w=0"} <= set(scores)
    assert c["dynamic"]["pswpin"] == min(scores.values())
    assert c["dynamic"]["pswpin"] <= scores["static"]
    # the static candidate is the spill plan: same swap-ins within a few pages
    assert abs(scores["static"] - c["spill"]["pswpin"]) <= 0.01 * c["spill"]["pswpin"] + 16
    assert c["dynamic"]["pswpin"] * 5 < c["spill"]["pswpin"]


def test_nextuse_locks_what_comes_next_within_the_budget():
    """Two objects of 8 pages used in turns, window by window; a budget of 10 pages: each
    step locks the window's object first, then the next window's pages that fit."""
    page = 4096
    addr = np.array([1 << 20, 2 << 20], np.uint64)
    size = np.array([8 * page, 8 * page], np.uint64)
    bounds = [(k * 1000, 0, "*", k * 1000) for k in range(4)]
    t, o, a = [], [], []
    for k in range(4):
        for rep in range(3):
            for p in range(8):
                t.append(k * 1000 + rep * 100 + p)
                o.append(k % 2)
                a.append(int(addr[k % 2]) + p * page)
    sched = D.learn_nextuse(np.array(t), np.array(o), np.array(a, np.uint64),
                            np.ones(len(t)), addr, size, bounds, 10, 12, chunk_pages=4,
                            lookahead=1, willneed_pages=0)
    first = sched.steps[0].actions
    locked = {(x[1], x[2], x[3]) for x in first if x[0] == D.LOCK}
    assert sum(n for _, _, n in locked) == 10
    assert (0, 0, 8) in locked  # window 0's object, whole
    assert any(ob == 1 for ob, _, _ in locked)  # and the start of what window 1 uses
    second = sched.steps[1].actions
    # window 1: object 1 whole, object 0 (used again in window 2) kept in part, never paged out
    assert not [x for x in second if x[0] == D.PAGEOUT]
    for step in sched.steps:
        assert all(x[3] <= 8 for x in step.actions)
    # prefetch: a budget of 4 pages leaves most of each window unlocked, WILLNEED takes 2
    sched = D.learn_nextuse(np.array(t), np.array(o), np.array(a, np.uint64),
                            np.ones(len(t)), addr, size, bounds, 4, 12, chunk_pages=4,
                            lookahead=0, willneed_pages=2)
    will = [x for x in sched.steps[1].actions if x[0] == D.WILLNEED]
    assert sum(x[3] for x in will) == 2 and all(x[1] == 1 for x in will)
    lock = {(x[1], x[2], x[3]) for x in sched.steps[1].actions if x[0] == D.LOCK}
    assert all(not (w[2] < f + n and f < w[2] + w[3]) for w in will for _, f, n in lock)


def test_static_schedule_locks_each_object_from_the_step_before_its_allocation():
    page = 4096
    addr = np.array([1 << 20, 2 << 20, 3 << 20], np.uint64)
    size = np.array([8 * page, 8 * page, 8 * page], np.uint64)
    alloc = np.array([0, 1500, 5000], np.int64)
    bounds = [(0, 0, "*", 0), (1000, 1, "a", 0), (3000, 2, "b", 0)]
    fast = np.array([3 * page, 8 * page, 0], np.int64)
    sched = D.static_schedule(addr, size, alloc, fast, bounds, 9, 12)
    assert [s.time_ns for s in sched.steps] == [0, 1000, 3000]   # no steps of its own
    locks = [(s.time_ns, x) for s in sched.steps for x in s.actions]
    # object 0 in the window of its allocation, object 1 in window 1 (allocated inside it),
    # within the budget of 9 pages; object 2 has no fast bytes
    assert locks == [(0, (D.LOCK, 0, 0, 3)), (1000, (D.LOCK, 1, 0, 6))]


@needs_clang
def test_a_lock_before_the_allocation_waits_for_the_object(alternating_trace, tmp_path):
    """A step that locks an array before the program allocated it (here: at the start of the
    process) is deferred and applied once the array is allocated."""
    import json
    import os
    import re
    import subprocess
    import sys

    plan_path = tmp_path / "plan.json"
    subprocess.run([sys.executable, "-m", "objtier", "plan", str(alternating_trace.path),
                    "--fast", "50%", "--dynamic", "--schedule", "hot", "-o", str(plan_path)],
                   check=True, capture_output=True)
    plan = json.loads(plan_path.read_text())
    steps = plan["dynamic"]["steps"]
    lock = next(a for s in steps for a in s["actions"] if a[0] == "lock")
    assert steps[0]["switch"] == 0 and steps[0]["offset_ms"] == 0
    steps[0]["actions"] = [lock]
    for s in steps[1:]:
        s["actions"] = []
    plan_path.write_text(json.dumps(plan))
    exe = str(tmp_path / "alternating")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBJTIER_")}
    run = subprocess.run([sys.executable, "-m", "objtier", "run", "--plan", str(plan_path), "--",
                          exe, str(MIB_ARG), str(ROUNDS), str(SWEEPS), str(STRIDE)], env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    m = re.search(r"(\d+) advice calls .*?(\d+) failed\), (\d+) actions dropped .*?, "
                  r"(\d+) deferred until", run.stderr)
    assert m, run.stderr
    calls, failed, dropped, deferred = (int(g) for g in m.groups())
    assert deferred == 1 and failed == 0 and dropped == 0
    assert calls == 2   # the deferred lock: MADV_WILLNEED + mlock
    locked = float(re.search(r"peak ([0-9.]+) MiB locked", run.stderr).group(1))
    assert locked > 0


@needs_clang
def test_auto_leaves_out_schedules_over_the_call_budget(alternating_trace):
    """dynamic.max_calls: candidates needing more advice calls than that are not simulated;
    the static plan (a lock per object) stays."""
    from objtier.sim.dynamic import schedule_for
    from objtier.sim.events import from_trace

    source = from_trace(alternating_trace)
    free = schedule_for(alternating_trace, source, 200 * 4096, 12, None, {})
    assert len(free.evaluated) >= 4 and free.evaluated[free.mode] == min(
        free.evaluated.values())
    # one call: no moving schedule fits (each locks and unlocks ranges, 2 calls a range)
    tight = schedule_for(alternating_trace, source, 200 * 4096, 12, None, {"max_calls": 1})
    assert tight.mode == "static" and set(tight.evaluated) == {"static"}
    assert tight.evaluated["static"] == free.evaluated["static"]


# Schedule auto under the advice-call budget: a schedule that moves the locked set at every
# phase switch wins in simulation when actions are free and loses to the static plan when the
# runtime's budget allows only a few calls a second, so auto keeps what would really run best.
@needs_clang
def test_a_schedule_that_wins_only_for_free_loses_within_the_budget(alternating_trace):
    from objtier.sim.dynamic import schedule_for
    from objtier.sim.events import from_trace

    source = from_trace(alternating_trace)
    lock = 230 * 4096   # under one array (256 pages): a moving set must move at each switch
    free = schedule_for(alternating_trace, source, lock, 12, None, {"advice_rate": 0})
    # the best single candidate (the schedule kept may be several stitched per phase)
    winner = min((k for k in free.evaluated if k != "per-phase"), key=free.evaluated.get)
    assert winner != "static" and free.calls() > 10
    assert free.evaluated[winner] < free.evaluated["static"]
    # 5 calls/s, the whole recording taken as 1 ms of run (however long the recording took
    # on this machine): the bucket's first 5 calls and nothing more; the static plan locks
    # its set once (2 calls), the moving one cannot keep up
    seconds = (int(source.end_ns) - int(source.start_ns)) / 1e9
    tight = schedule_for(alternating_trace, source, lock, 12, None,
                         {"advice_rate": 5, "time_scale": 1e-3 / seconds})
    assert tight.evaluated[winner] > tight.evaluated["static"]
    assert tight.mode == "static" and tight.calls() <= 5
    # the static plan fits the budget: its score does not depend on it
    assert tight.evaluated["static"] == free.evaluated["static"]


@needs_clang
def test_plan_records_the_budget_it_chose_under(alternating_trace, tmp_path):
    import subprocess
    import sys

    from objtier.plan import load_plan

    def plan(*extra):
        out = tmp_path / f"plan{len(extra)}.json"
        made = subprocess.run([sys.executable, "-m", "objtier", "plan",
                               str(alternating_trace.path), "--fast", "1M", "--dynamic",
                               "-o", str(out), *extra], capture_output=True, text=True)
        return made, out

    made, out = plan()
    assert made.returncode == 0, made.stderr
    assert "within 2,000 advice calls/s" in made.stdout
    doc = load_plan(out)
    assert doc["dynamic"]["advice_rate"] == 2000
    assert doc["algorithm"]["params"]["advice_rate"] == 2000
    scores = {}
    for rate in ("1000000", "5"):
        made, out = plan("--advice-rate", rate)
        assert made.returncode == 0, made.stderr
        doc = load_plan(out)
        # where auto keeps the static candidate, the plan is the static plan itself
        # (version 1, fixed entries) and what auto simulated is in dynamic_choice
        section = doc.get("dynamic") or doc["dynamic_choice"]
        assert section["advice_rate"] == int(rate)
        scores[rate] = section["simulated_swap_ins"]
        if "dynamic_choice" in doc:
            assert section["mode"] == "static" and doc["version"] == 1
            assert any(e["fast_bytes"] > 0 for e in doc["entries"])
            assert "kept the static plan" in made.stdout
    # a margin no candidate clears: the static plan, as `plan` without --dynamic makes it
    made, out = plan("--min-gain", "0.99")
    assert made.returncode == 0 and "kept the static plan" in made.stdout, made.stderr
    doc = load_plan(out)
    assert doc["version"] == 1 and "dynamic" not in doc
    assert doc["dynamic_choice"]["mode"] == "static" and doc["dynamic_choice"]["min_gain"] == 0.99
    assert any(e["fast_bytes"] > 0 for e in doc["entries"])
    # the candidates were simulated within the budget: the static plan (2 calls) is not
    # touched by it, the moving ones are
    assert scores["5"]["static"] == scores["1000000"]["static"]
    assert any(scores["5"][k] != v for k, v in scores["1000000"].items() if k != "static")
    # on a run 1000 times slower than the recording the budget refills 1000 times more per
    # recorded second: the moving candidates score as with no limit; the scale is recorded
    made, out = plan("--advice-rate", "5", "--clock-scale", "1000")
    assert made.returncode == 0, made.stderr
    doc = load_plan(out)
    section = doc.get("dynamic") or doc["dynamic_choice"]
    assert section["clock_scale"] == 1000.0
    assert section["simulated_swap_ins"] != scores["5"]
    for bad in (("--advice-rate", "0"), ("--advice-rate", "2000000"), ("--advice-rate", "x"),
                ("--clock-scale", "0"), ("--clock-scale", "-1"), ("--clock-scale", "nan")):
        made, _ = plan(*bad)
        assert made.returncode != 0 and "Traceback" not in made.stderr
        assert len(made.stderr.strip().splitlines()) == 1, made.stderr
    run = subprocess.run([sys.executable, "-m", "objtier", "plan", str(alternating_trace.path),
                          "--fast", "50%", "--advice-rate", "100", "-o",
                          str(tmp_path / "p.json")], capture_output=True, text=True)
    assert run.returncode != 0 and "--dynamic only" in run.stderr



@needs_clang
def test_simulate_replays_a_plan_under_the_budget_it_records(alternating_trace, tmp_path):
    import subprocess
    import sys

    from objtier.plan import load_plan

    out = tmp_path / "plan.json"
    made = subprocess.run([sys.executable, "-m", "objtier", "plan", str(alternating_trace.path),
                           "--fast", "1M", "--dynamic", "--schedule", "hot", "--advice-rate",
                           "1000000", "-o", str(out)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    plan = load_plan(out)

    def replay(rate: int) -> dict:
        doc = {**plan, "dynamic": {**plan["dynamic"], "advice_rate": rate}}
        sim = simulate(alternating_trace, ["dynamic"], plan["budget"]["bytes"],
                       load_preset("zram"), plan_doc=doc)
        return sim.results[0].counters

    roomy, tight = replay(1_000_000), replay(1)
    assert roomy["actions_dropped_step"] == 0 and roomy["advice_calls_step"] > 10
    assert tight["actions_dropped_step"] > 0
    assert tight["advice_calls_step"] < roomy["advice_calls_step"]
