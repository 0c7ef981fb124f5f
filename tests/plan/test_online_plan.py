"""Schedule online from the command line: `plan --dynamic --schedule online` writes a plan
whose dynamic section asks the runtime for its online placement (no steps learned ahead), the
run settings it turns into (the fault sampler, OBJTIER_ONLINE_MS, the lock budget), compare's
objtier-online arm, and one-line refusals of what does not fit together."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from objtier.errors import UsageError
from tests.sim.conftest import write_trace

PAGE = 4096
MIB = 1 << 20
A, B = 0x7F0000000000, 0x7F0001000000


@pytest.fixture
def recording(tmp_path):
    start = 1_000_000_000
    times = start + 1000 * np.arange(1, 401, dtype=np.uint64)
    addrs = np.where(np.arange(400) % 2 == 0, A, B).astype(np.uint64) + \
        (np.arange(400, dtype=np.uint64) % 256) * PAGE
    directory = tmp_path / "rec.otr"
    directory.mkdir(mode=0o700)
    write_trace(directory / "proc-100.otr", [(start, A, 8 * MIB, 1), (start + 10, B, 8 * MIB, 2)],
                {"time_ns": times, "addr": addrs})
    return directory


def _plan(recording, tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "objtier", "plan", str(recording), "--fast",
                           "8M", "-o", str(tmp_path / "p.json"), *args],
                          capture_output=True, text=True)


def test_plan_writes_an_online_section_and_run_settings_follow_it(recording, tmp_path):
    from objtier.plan import load_plan
    from objtier.record.dynamic_run import schedule_env

    made = _plan(recording, tmp_path, "--dynamic", "--schedule", "online", "--online-ms", "40",
                 "--advice-rate", "500")
    assert made.returncode == 0, made.stderr
    assert "online placement: every 40 ms" in made.stdout
    plan = load_plan(tmp_path / "p.json")           # validated as any plan is
    section = plan["dynamic"]
    assert plan["version"] == 2 and plan["entries"] == []
    assert section["mode"] == "online" and section["period_ms"] == 40
    assert section["advice_rate"] == 500 and section["steps"] == []
    assert section["lock_bytes"] == int(8 * MIB * 0.9) // PAGE * PAGE   # --reserve 0.1
    assert (tmp_path / "p.json").stat().st_mode & 0o777 == 0o600
    env, stats = schedule_env(plan, tmp_path, 500, mlock_limit=5 * MIB)
    assert env["OBJTIER_SAMPLER"] == "fault" and env["OBJTIER_ONLINE_MS"] == "40"
    assert env["OBJTIER_ADVICE_RATE"] == "500"
    assert env["OBJTIER_MLOCK_LIMIT"] == str(5 * MIB)   # the smaller of the two
    assert env["OBJTIER_ONLINE_STATS"] == str(stats.resolve())
    assert "OBJTIER_DYNAMIC" not in env
    assert section["phase_memory"] is True and env["OBJTIER_ONLINE_PHASES"] == "1"
    assert "and at each phase switch" in made.stdout
    off = _plan(recording, tmp_path, "--dynamic", "--schedule", "online", "--phase-memory",
                "off")
    assert off.returncode == 0, off.stderr
    plan = load_plan(tmp_path / "p.json")
    assert plan["dynamic"]["phase_memory"] is False
    assert schedule_env(plan, tmp_path, 500)[0]["OBJTIER_ONLINE_PHASES"] == "0"
    with pytest.raises(UsageError, match="swap tier only"):
        schedule_env(plan, tmp_path, 500, tier="numa")


@pytest.mark.parametrize("args, message", [
    (("--dynamic", "--schedule", "online", "--online-ms", "0"), "--online-ms"),
    (("--dynamic", "--schedule", "online", "--online-ms", "60001"), "--online-ms"),
    (("--dynamic", "--schedule", "online", "--online-ms", "x"), "--online-ms"),
    (("--dynamic", "--online-ms", "50"), "apply to --dynamic --schedule online only"),
    (("--online-ms", "50",), "apply to --dynamic --schedule online only"),
    (("--dynamic", "--phase-memory", "off"), "apply to --dynamic --schedule online only"),
    (("--dynamic", "--schedule", "online", "--phase-memory", "maybe"), "--phase-memory"),
    (("--dynamic", "--schedule", "online", "--window-ms", "5"), "not with --schedule online"),
    (("--dynamic", "--schedule", "online", "--min-gain", "0.1"), "not with --schedule online"),
    (("--dynamic", "--schedule", "sometimes"), "--schedule"),
])
def test_bad_online_values_are_one_line_errors(recording, tmp_path, args, message):
    run = _plan(recording, tmp_path, *args)
    assert run.returncode == 2 and message in run.stderr, run.stderr
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_an_online_section_is_checked_like_any_other():
    from objtier.plan.dynamic_file import online_section, validate_section

    good = online_section(4 * MIB, PAGE, 100, 2000)
    validate_section(good)
    for bad, message in (({"period_ms": 0}, "period_ms"), ({"period_ms": 1.5}, "period_ms"),
                         ({"period_ms": 70_000}, "period_ms"),
                         ({"phase_memory": 1}, "phase_memory"),
                         ({"steps": [{"switch": 0, "offset_ms": 0, "actions": []}]},
                          "no objects and no steps")):
        with pytest.raises(UsageError, match=message):
            validate_section({**good, **bad})


def test_compare_online_arm_locks_no_more_than_the_static_plan(tmp_path):
    from objtier.experiments.compare_dynamic import ONLINE_ARM, prepare_online

    static = {"entries": [{"context_key": "a" * 16, "occurrence": 0, "size_min": 1,
                           "size_max": 1, "fast_bytes": 3 * MIB, "phase": "*"}]}
    (tmp_path / "plan.json").write_text(json.dumps(static))
    said = []
    arm = prepare_online(20 * MIB, PAGE, tmp_path, 1000, 50, said.append)
    assert arm.arm == ONLINE_ARM and arm.plan["dynamic"]["lock_bytes"] == 3 * MIB
    assert arm.env["OBJTIER_MLOCK_LIMIT"] == str(3 * MIB)
    assert arm.env["OBJTIER_ONLINE_MS"] == "50" and arm.env["OBJTIER_SAMPLER"] == "fault"
    assert "LD_PRELOAD" in arm.env
    assert (tmp_path / "plan-online.json").stat().st_mode & 0o777 == 0o600
    runs = tmp_path / "runs"
    runs.mkdir()
    arm.stats_path.write_text("ticks 4\ncalls_mlock 2\ncalls_munlock 1\nbytes_locked 100\n"
                              "switch_ticks 3\nrecalls 2\nguard_passes 4\nguard_calls 5\n"
                              "guard_bytes 1048576\nlead 7 10 1\n")
    arm.collect(3, 1, runs)
    assert (runs / f"03-{ONLINE_ARM}-1.dynamic.txt").exists()
    summary = arm.summary()
    assert summary["schedule"] == "online" and summary["median_advice_calls"] == 3
    assert summary["median"]["ticks"] == 4
    from objtier.experiments.compare_dynamic import summary_line
    line = summary_line(summary)
    assert "(3 ticks at phase switches, 2 into a phase seen before)" in line, line
    assert "pressure guard 1.0 MiB advised cold in 4 passes" in line, line
    # the counts wait on tmpfs while the program runs (tiers.spool); closing removes the spool
    assert arm.spool is not None and arm.stats_path.parent == arm.spool.path
    arm.close()
    assert not arm.spool.path.exists()
    assert arm.env["OBJTIER_ONLINE_PHASES"] == "1" and "phase memory" in said[0]
    off = prepare_online(20 * MIB, PAGE, tmp_path, 1000, 50, said.append, phase_memory=False)
    off.close()
    assert off.env["OBJTIER_ONLINE_PHASES"] == "0"
    assert json.loads((tmp_path / "plan-online.json").read_text())["dynamic"][
        "phase_memory"] is False


def test_compare_phase_memory_needs_the_online_arm(tmp_path):
    run = subprocess.run([sys.executable, "-m", "objtier", "compare", "--phase-memory", "off",
                          "-o", str(tmp_path / "c"), "--", "true"], capture_output=True,
                         text=True)
    assert run.returncode == 2, run.stderr
    assert "--phase-memory applies to the arm objtier-online" in run.stderr
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1
