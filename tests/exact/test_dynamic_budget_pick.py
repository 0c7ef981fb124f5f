"""Schedule auto under the advice-call budget: on the alternating program (tests/
alternating_program.py) a schedule that moves the locked set at every phase switch wins in
simulation when actions are free, and loses to the static plan when the runtime's budget
allows only a few calls a second, so auto keeps what would really run best."""

import pytest

from objtier import native
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
def test_a_schedule_that_wins_only_for_free_loses_within_the_budget(alternating_trace):
    from objtier.sim.dynamic import schedule_for
    from objtier.sim.events import from_trace

    source = from_trace(alternating_trace)
    lock = 230 * 4096   # under one array (256 pages): a moving set must move at each switch
    free = schedule_for(alternating_trace, source, lock, 12, None, {"advice_rate": 0})
    winner = free.mode
    assert winner != "static" and free.calls() > 10
    assert free.evaluated[winner] < free.evaluated["static"]
    # 5 calls/s over a recording of tens of ms: the bucket's first 5 calls and little more;
    # the static plan locks its set once (2 calls), the moving one cannot keep up
    tight = schedule_for(alternating_trace, source, lock, 12, None, {"advice_rate": 5})
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
        assert doc["dynamic"]["advice_rate"] == int(rate)
        scores[rate] = doc["dynamic"]["simulated_swap_ins"]
    # the candidates were simulated within the budget: the static plan (2 calls) is not
    # touched by it, the moving ones are
    assert scores["5"]["static"] == scores["1000000"]["static"]
    assert any(scores["5"][k] != v for k, v in scores["1000000"].items() if k != "static")
    # on a run 1000 times slower than the recording the budget refills 1000 times more per
    # recorded second: the moving candidates score as with no limit; the scale is recorded
    made, out = plan("--advice-rate", "5", "--clock-scale", "1000")
    assert made.returncode == 0, made.stderr
    doc = load_plan(out)
    assert doc["dynamic"]["clock_scale"] == 1000.0
    assert doc["dynamic"]["simulated_swap_ins"] != scores["5"]
    for bad in (("--advice-rate", "0"), ("--advice-rate", "2000000"), ("--advice-rate", "x"),
                ("--clock-scale", "0"), ("--clock-scale", "-1"), ("--clock-scale", "nan")):
        made, _ = plan(*bad)
        assert made.returncode != 0 and "Traceback" not in made.stderr
        assert len(made.stderr.strip().splitlines()) == 1, made.stderr
    run = subprocess.run([sys.executable, "-m", "objtier", "plan", str(alternating_trace.path),
                          "--fast", "50%", "--advice-rate", "100", "-o",
                          str(tmp_path / "p.json")], capture_output=True, text=True)
    assert run.returncode != 0 and "--dynamic only" in run.stderr
