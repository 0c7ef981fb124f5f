"""The dynamic schedule on the real swap tier: the alternating program (two 16 MiB arrays, hot
in turn), built with `objtier cc`, recorded exactly, planned with `objtier plan --dynamic`, then
run under a memory cgroup of 20 MiB with zram behind it, once as is and once with the
runtime applying the schedule (mlock/munlock, MADV_PAGEOUT, MADV_WILLNEED at phase switches).
Same output and exit status; the runtime's advice calls and both runs' swap-ins are counted."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from objtier import native
from objtier.experiments.compare_swap import one_run
from objtier.record.dynamic_run import read_stats, schedule_env
from objtier.record.launch import runtime_env
from tests.alternating_program import SOURCE
from tests.exact.conftest import needs_clang

pytestmark = pytest.mark.root

MIB = 1 << 20
ROUNDS = 3
ARGS = ["16", str(ROUNDS), "8", "4096"]


def _alternating_traced(objtier_cc, run_exact):
    """The alternating program built with `objtier cc` and its exact trace of ARGS."""
    exe = objtier_cc(SOURCE, "alternating",
                     flags=("-O1", "-fno-vectorize", "-fno-unroll-loops",
                            f"-I{native.include_dir()}"))
    _, trace = run_exact(exe, *ARGS, trace_limit=50_000_000)
    return exe, trace


def _planned(objtier_cc, run_exact, tmp_path):
    """The alternating program and its plan from `objtier plan --fast 16M --dynamic`."""
    exe, trace = _alternating_traced(objtier_cc, run_exact)
    plan_path = tmp_path / "plan.json"
    made = subprocess.run([sys.executable, "-m", "objtier", "plan", str(trace.path),
                           "--fast", "16M", "--dynamic", "-o", str(plan_path)],
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    return exe, json.loads(plan_path.read_text())


@needs_clang
def test_schedule_on_the_swap_tier_keeps_output_and_counts_swap_ins(objtier_cc, run_exact,
                                                                      tmp_path):
    from objtier.tiers.swap import SwapTier

    exe, plan = _planned(objtier_cc, run_exact, tmp_path)
    assert plan["version"] == 2 and plan["entries"] == []
    assert len(plan["dynamic"]["objects"]) == 2

    schedule, stats_path = schedule_env(plan, tmp_path, advice_rate=2000)
    env = runtime_env({"OBJTIER_SAMPLER": "none", "OBJTIER_MIN_SIZE": str(1 * MIB), **schedule})
    plain_env = {k: v for k, v in env.items() if not k.startswith("OBJTIER_")}
    plain_env.pop("LD_PRELOAD", None)
    runs = tmp_path / "runs"
    runs.mkdir()
    command = [str(exe), *ARGS]
    rows = {}
    with SwapTier(20 * MIB) as tier:
        for order, (config, e) in enumerate((("kernel", plain_env), ("dynamic", env),
                                             ("kernel", plain_env), ("dynamic", env)), 1):
            rows.setdefault(config, []).append(
                one_run(tier, config, order, order, command, e, 300.0, runs, plan, None, 10.0))
    stats = read_stats(stats_path)
    alone = subprocess.run(command, env=plain_env, capture_output=True, text=True, timeout=300)
    assert alone.returncode == 0 and "alternating: sum" in alone.stdout, alone.stderr
    for r in rows["dynamic"]:
        assert r.returncode == 0, (runs / f"{r.order:02d}-dynamic-{r.order}.err").read_text()
        assert r.memcg_oom_kills in (0, None)
    # the kernel arm is the comparison, not what is tested: on memcg v1 plain reclaim can be
    # OOM-killed at a limit this small even with the stat-flush reader (docs/compare.md, "The
    # fair baseline"); a kernel run that did not finish must be the cgroup's OOM kill
    kernel_alive = []
    for r in rows["kernel"]:
        if r.returncode == 0:
            kernel_alive.append(r)
        else:
            assert r.returncode == -9 and r.memcg_oom_kills, (
                r, (runs / f"{r.order:02d}-kernel-{r.order}.err").read_text())
    finished = rows["dynamic"] + kernel_alive
    outputs = {(runs / f"{r.order:02d}-{r.config}-{r.order}.out").read_text() for r in finished}
    assert outputs == {alone.stdout}
    # the schedule ran: both arrays found, a lock at every phase switch, no call failed
    assert stats is not None
    assert stats["objects_matched"] == 2
    assert stats["switches"] == 2 * ROUNDS + 1
    assert stats["steps_applied"] >= 2 * ROUNDS
    assert stats["calls_mlock"] >= 2 * ROUNDS - 1 and stats["calls_failed"] == 0
    assert stats["locked_peak_bytes"] <= 16 * MIB
    assert {"guard_passes", "guard_calls", "guard_bytes"} <= stats.keys(), stats
    # swap-ins are counted in both arms: 32 MiB of arrays in 20 MiB make the kernel swap at
    # every phase; the schedule brings each array in ahead (MADV_WILLNEED, not a major fault)
    kernel = [r.memcg_pgmajfault for r in kernel_alive]
    dynamic = [r.memcg_pgmajfault for r in rows["dynamic"]]
    assert all(k is not None and k > 0 for k in kernel), kernel
    assert all(d is not None for d in dynamic)
    if kernel:   # both kernel runs OOM-killed: no count to compare with
        assert max(dynamic) < min(kernel), (dynamic, kernel)


@needs_clang
def test_pressure_guard_acts_when_locks_leave_too_little_room(objtier_cc, run_exact, tmp_path):
    """A schedule that locks one array (16 MiB) for the whole run in a 20 MiB cgroup while
    the program sweeps the other in turn: what is left evictable (under 4 MiB, runtime and
    stack included) is under a quarter of the limit, so whenever the sweep brings the cgroup
    near its limit the pressure guard must advise unlocked pages cold (with 14.4 MiB locked,
    the inactive list read above a quarter of the limit at times and some runs saw no pass). With the guard the run
    finishes with the plain run's output and the guard's counts say it acted; with
    OBJTIER_PRESSURE_MS=0 it makes no pass."""
    from objtier.tiers.swap import SwapTier

    exe, plan = _planned(objtier_cc, run_exact, tmp_path)
    page = plan["dynamic"]["page_bytes"]
    lock_pages = 16 * MIB // page   # all of the first array (its last bytes' page excepted)
    plan["dynamic"]["lock_bytes"] = 16 * MIB
    plan["dynamic"]["steps"] = [{"switch": 0, "phase": "*", "offset_ms": 0.0,
                                 "actions": [["lock", 0, 0, lock_pages]]}]
    schedule, stats_path = schedule_env(plan, tmp_path, advice_rate=2000)
    env = runtime_env({"OBJTIER_SAMPLER": "none", "OBJTIER_MIN_SIZE": str(1 * MIB), **schedule})
    plain_env = {k: v for k, v in env.items() if not k.startswith("OBJTIER_")}
    plain_env.pop("LD_PRELOAD", None)
    command = [str(exe), *ARGS]
    alone = subprocess.run(command, env=plain_env, capture_output=True, text=True, timeout=300)
    assert alone.returncode == 0, alone.stderr
    runs = tmp_path / "runs"
    runs.mkdir()
    with SwapTier(20 * MIB) as tier:
        guarded = one_run(tier, "guarded", 1, 1, command, env, 300.0, runs, plan, None, 10.0)
        stats = read_stats(stats_path)
        stats_path.unlink()
        unguarded = one_run(tier, "unguarded", 2, 2, command,
                            {**env, "OBJTIER_PRESSURE_MS": "0"}, 300.0, runs, plan, None, 10.0)
        off = read_stats(stats_path) if unguarded.returncode == 0 else None
    assert guarded.returncode == 0, (runs / "01-guarded-1.err").read_text()
    assert (runs / "01-guarded-1.out").read_text() == alone.stdout
    assert stats["locked_peak_bytes"] == lock_pages * page and stats["calls_failed"] == 0
    assert stats["guard_passes"] > 0 and stats["guard_bytes"] > 0, stats
    # a call into the locked pages is refused and adds nothing; one that succeeds adds at
    # most 2 MiB
    assert stats["guard_bytes"] <= stats["guard_calls"] * 2 * MIB, stats
    if off is not None:   # without the guard the run may be OOM-killed
        assert off["guard_passes"] == off["guard_calls"] == 0, off


@needs_clang
def test_willneed_steps_bring_the_next_phase_in_before_it_runs(objtier_cc, run_exact,
                                                               tmp_path):
    """Prefetch alone (no mlock): the schedule's locks turned into `willneed` actions. At each
    phase switch the old array goes cold (MADV_COLD or PAGEOUT, as the schedule says) and the
    new one is prefetched with MADV_WILLNEED, so
    the sweeps that follow find it resident: fewer major faults than the same schedule without
    the prefetch, the same output, and no page locked."""
    from objtier.tiers.swap import SwapTier

    exe, trace = _alternating_traced(objtier_cc, run_exact)
    plan_path = tmp_path / "plan.json"
    made = subprocess.run([sys.executable, "-m", "objtier", "plan", str(trace.path),
                           "--fast", "16M", "--dynamic", "--schedule", "hot", "-o",
                           str(plan_path)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    base = json.loads(plan_path.read_text())
    assert base["dynamic"]["mode"] == "hot"
    plans = {}
    for name, turn in (("prefetch", "willneed"), ("no-prefetch", None)):
        plan = json.loads(json.dumps(base))
        for step in plan["dynamic"]["steps"]:
            step["actions"] = [[turn, *a[1:]] if a[0] == "lock" else a
                               for a in step["actions"] if a[0] != "lock" or turn]
        plans[name] = plan
    assert any(a[0] == "willneed" for s in plans["prefetch"]["dynamic"]["steps"]
               for a in s["actions"])
    plain_env = {k: v for k, v in runtime_env({}).items() if not k.startswith("OBJTIER_")}
    plain_env.pop("LD_PRELOAD", None)
    alone = subprocess.run([str(exe), *ARGS], env=plain_env, capture_output=True, text=True,
                           timeout=300)
    assert alone.returncode == 0
    runs = tmp_path / "runs"
    runs.mkdir()
    rows: dict[str, list] = {}
    stats: dict[str, list] = {}
    with SwapTier(20 * MIB) as tier:
        for order, name in enumerate(("no-prefetch", "prefetch") * 2, 1):
            d = tmp_path / f"{name}-{order}"
            d.mkdir()
            schedule, stats_path = schedule_env(plans[name], d, advice_rate=2000)
            env = runtime_env({"OBJTIER_SAMPLER": "none", "OBJTIER_MIN_SIZE": str(MIB),
                               **schedule})
            rows.setdefault(name, []).append(
                one_run(tier, name, order, order, [str(exe), *ARGS], env, 300.0, runs,
                        plans[name], None, 10.0))
            stats.setdefault(name, []).append(read_stats(stats_path))
    for name, rs in rows.items():
        for r in rs:
            assert r.returncode == 0, (name, (runs / f"{r.order:02d}-{name}-{r.order}.err")
                                       .read_text())
            assert (runs / f"{r.order:02d}-{name}-{r.order}.out").read_text() == alone.stdout
    for s in stats["prefetch"]:
        assert s["calls_willneed"] >= 2 * ROUNDS - 1 and s["calls_failed"] == 0
        assert s["calls_mlock"] == 0 and s["locked_peak_bytes"] == 0
        assert s["willneed_bytes"] >= (2 * ROUNDS - 1) * 8 * MIB
    for s in stats["no-prefetch"]:
        assert s["calls_willneed"] == 0 and s["calls_munlock"] > 0  # unlock/pageout only
    # prefetched pages are resident before the sweeps touch them: the program faults less
    prefetch = [r.memcg_pgmajfault for r in rows["prefetch"]]
    without = [r.memcg_pgmajfault for r in rows["no-prefetch"]]
    assert all(v is not None for v in prefetch + without)
    assert max(prefetch) < min(without), (prefetch, without)
