"""The online placement (native/runtime/place/online.c) on the real swap tier: the alternating
program (two 16 MiB arrays, hot in turn, phase markers through <objtier/phase.h>) runs under a
memory cgroup of 20 MiB with zram behind it, with the runtime following the fault sampler's
recent windows and moving at most 14.4 MiB of locks. The program's output and exit status are
those of a run without the runtime; the runtime's counts show it locked the array in use and
moved its locks each time the hot array changed. Off (OBJTIER_ONLINE_MS unset or not usable),
the runtime writes no counts and the program runs as without it."""

from __future__ import annotations

import subprocess

import pytest

from objtier import native
from objtier.experiments.compare_swap import one_run
from objtier.plan.dynamic_file import online_section
from objtier.record.dynamic_run import (online_leads, online_stats_line, read_stats,
                                        schedule_env)
from objtier.record.launch import runtime_env
from tests.alternating_program import SOURCE

MIB = 1 << 20
ROUNDS = 3
# 300 sweeps a phase, one byte in 8: about half a second a phase on this machine, time for the
# sampler to see the new array and for the placement to move its locks (period 25 ms)
ARGS = ["16", str(ROUNDS), "300", "8"]
LOCK = int(14.4 * MIB)


@pytest.fixture
def alternating(compile_c):
    return compile_c(SOURCE, "alternating", flags=("-O1", f"-I{native.include_dir()}"))


def _plain_env() -> dict[str, str]:
    env = {k: v for k, v in runtime_env({}).items() if not k.startswith("OBJTIER_")}
    env.pop("LD_PRELOAD", None)
    return env


def _online_env(tmp_path, period_ms: int = 25, memory: bool = True,
                **extra: str) -> tuple[dict[str, str], object]:
    plan = {"version": 2, "entries": [],
            "dynamic": online_section(LOCK, 4096, period_ms, 2000, phase_memory=memory)}
    settings, stats_path = schedule_env(plan, tmp_path, advice_rate=2000)
    return runtime_env({"OBJTIER_MIN_SIZE": str(MIB), **settings, **extra}), stats_path


@pytest.mark.root
def test_online_placement_locks_the_array_in_use_and_follows_it(alternating, tmp_path):
    from objtier.tiers.swap import SwapTier

    command = [str(alternating), *ARGS]
    alone = subprocess.run(command, env=_plain_env(), capture_output=True, text=True,
                           timeout=300)
    assert alone.returncode == 0 and "alternating: sum" in alone.stdout, alone.stderr
    env, stats_path = _online_env(tmp_path)
    runs = tmp_path / "runs"
    runs.mkdir()
    plan = {"version": 2, "entries": []}
    stats = []
    with SwapTier(20 * MIB) as tier:
        for order in (1, 2):
            row = one_run(tier, "online", order, order, command, env, 300.0, runs, plan, None,
                          10.0)
            assert row.returncode == 0, (runs / f"{order:02d}-online-{order}.err").read_text()
            assert row.memcg_oom_kills in (0, None)
            assert (runs / f"{order:02d}-online-{order}.out").read_text() == alone.stdout
            assert stats_path.exists()
            stats.append((read_stats(stats_path), online_leads(stats_path.read_text())))
            stats_path.unlink()
    for s, leads in stats:
        assert s["ticks"] > 0 and s["windows"] > 0, s
        assert s["calls_failed"] == 0, s
        assert s["switches"] == 2 * ROUNDS + 1          # x, y, ... and the phase end
        # it locked about one array and never more than its budget
        assert 8 * MIB <= s["locked_peak_bytes"] <= LOCK, s
        assert s["lock_budget_bytes"] == LOCK
        # the locks moved with the hot array: one array's worth unlocked per change at least
        assert s["lead_changes"] >= 2 * ROUNDS - 2, (s, leads)
        assert s["bytes_unlocked"] >= (2 * ROUNDS - 3) * 8 * MIB, s
        assert s["calls_mlock"] >= 2 * ROUNDS - 2 and s["calls_munlock"] >= 2 * ROUNDS - 3
        # the object it locked most is the array the phase in force sweeps: x (allocated
        # first: the lower seq) after an odd number of phase switches, y after an even one
        seqs = sorted({seq for seq, _, _ in leads})
        assert len(seqs) == 2, leads
        in_phase = [(seq, sw) for seq, _, sw in leads if 1 <= sw <= 2 * ROUNDS]
        right = [seq == (seqs[0] if sw % 2 else seqs[1]) for seq, sw in in_phase]
        assert sum(right) >= 2 * ROUNDS - 2 and sum(right) >= 0.75 * len(right), leads
        assert s["advice_ns"] > 0 and s["thread_cpu_ns"] > 0
        # the pressure guard's counts are written (whether it had to act depends on the LRU)
        assert {"guard_passes", "guard_calls", "guard_bytes"} <= s.keys(), s


@pytest.mark.root
def test_phase_memory_locks_a_phase_seen_before_at_its_switch(alternating, tmp_path):
    """A period longer than the run: only phase switches make the placement act (no memory
    limit here: what is checked is when and what it locks; under a limit, the first phase of
    y, not seen before, would sweep y beside x's locks for the whole phase). With the phase
    memory every phase from the third on has its own array locked by its switch's tick (the
    lead log names it with that switch's count), the switch found the phase kept, and the
    program's output is the plain run's; without it (OBJTIER_ONLINE_PHASES=0) nothing ticks
    and nothing is locked."""
    command = [str(alternating), *ARGS]
    alone = subprocess.run(command, env=_plain_env(), capture_output=True, text=True,
                           timeout=300)
    assert alone.returncode == 0, alone.stderr
    got = {}
    for memory in (True, False):
        env, stats_path = _online_env(tmp_path, period_ms=60_000, memory=memory)
        run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0 and run.stdout == alone.stdout, run.stderr
        got[memory] = (read_stats(stats_path), online_leads(stats_path.read_text()))
        stats_path.unlink()
    s, leads = got[True]
    assert s["phase_memory"] == 1 and s["switches"] == 2 * ROUNDS + 1, str(s)
    # one tick per switch (they are far more than 10 ms apart), none from the period
    assert s["switch_ticks"] == s["ticks"] == 2 * ROUNDS + 1, str(s)
    # x, y and "no phase" (before the first switch) kept; every switch into x or y after the
    # first two, and the last one (back to no phase), found its phase kept; the locks of a
    # switch tick take pages as they are touched
    assert s["phases_kept"] == 3 and s["recalls"] == 2 * ROUNDS - 1, str(s)
    assert s["calls_failed"] == 0 and 8 * MIB <= s["locked_peak_bytes"] <= LOCK, str(s)
    assert s["calls_mlock_onfault"] == s["calls_mlock"] > 0, str(s)
    seqs = sorted({seq for seq, _, _ in leads})
    assert len(seqs) == 2, leads
    # from the third switch on, the switch's own tick (the only one in the phase) makes the
    # phase's array the lead: x (the lower seq) after an odd number of switches, y after an
    # even one; a lead line is written when the lead changes, tagged with the switches so far
    for sw in range(3, 2 * ROUNDS + 1):
        in_force = [seq for seq, _, at in leads if at <= sw][-1:]
        assert in_force == [seqs[0] if sw % 2 else seqs[1]], (sw, leads)
    assert (f"ticks of 60000 ms ({2 * ROUNDS + 1} at phase switches, {2 * ROUNDS - 1} into a "
            f"phase seen before)") in online_stats_line(s)
    off, off_leads = got[False]
    assert off["phase_memory"] == 0 and off["switches"] == 2 * ROUNDS + 1, str(off)
    assert off["ticks"] == off["switch_ticks"] == off["bytes_locked"] == 0, str(off)
    assert off_leads == []
    # no memory limit: no pressure guard
    assert s["guard_passes"] == off["guard_passes"] == 0


def test_online_placement_off_writes_nothing_and_changes_nothing(alternating, tmp_path):
    """Without OBJTIER_ONLINE_MS, and where it cannot run (OBJTIER_SAMPLER=none: it follows the
    fault sampler), no placement thread runs and no counts are written; the output is the
    plain run's."""
    command = [str(alternating), "4", "2", "3", "64"]
    alone = subprocess.run(command, env=_plain_env(), capture_output=True, text=True,
                           timeout=120)
    assert alone.returncode == 0
    env, stats_path = _online_env(tmp_path, OBJTIER_LOG="1")
    off = dict(env)
    off.pop("OBJTIER_ONLINE_MS")
    run = subprocess.run(command, env=off, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout == alone.stdout, run.stderr
    assert not stats_path.exists()
    refused = dict(env, OBJTIER_SAMPLER="none")
    run = subprocess.run(command, env=refused, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout == alone.stdout
    assert "online placement follows the fault sampler" in run.stderr
    assert not stats_path.exists()
    on = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert on.returncode == 0 and on.stdout == alone.stdout, on.stderr
    assert read_stats(stats_path)["period_ms"] == 25
