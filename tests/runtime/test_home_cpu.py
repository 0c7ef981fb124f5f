"""Under a memory limit the runtime's background threads keep to one CPU, the one the program
started on (core/rt.h, rt_home_cpu): a thread of ours that ran on another CPU would put that
CPU in the program's TLB-flush mask for reclaim's IPIs. The program's own threads keep their
affinity, and without a limit nothing is pinned."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from objtier.record.launch import runtime_env
from objtier.tiers.swap import SwapTier

from ..tiers.test_swap_tier import TOUCH

pytestmark = [pytest.mark.root,
              pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")]


def _allowed(pid: int) -> dict[int, set[int]]:
    """CPUs each thread of pid may run on (task id -> set)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        out[int(task.name)] = os.sched_getaffinity(int(task.name))
    return out


def _threads_while_sleeping(exe: Path, env: dict[str, str], preexec=None) -> dict[int, set]:
    """Start the program (it sleeps after its work), read its threads' affinity, stop it."""
    process = subprocess.Popen([str(exe), "4", "1", "sleep"], env=env, preexec_fn=preexec,
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().startswith("FOM")     # its work is done
        deadline = time.monotonic() + 10
        threads = _allowed(process.pid)
        while len(threads) < 2 and time.monotonic() < deadline:  # the runtime's thread
            time.sleep(0.05)
            threads = _allowed(process.pid)
        return {tid: cpus for tid, cpus in threads.items()} | {-1: {process.pid}}
    finally:
        process.kill()
        process.wait()


def test_background_threads_keep_to_one_cpu_only_under_a_limit(compile_c, tmp_path):
    exe = compile_c(TOUCH.replace("if (argc > 3) sleep(60);",
                                  "fflush(stdout); if (argc > 3) sleep(60);"), "touch")
    everything = os.sched_getaffinity(0)
    trace = tmp_path / "t.otr"
    trace.mkdir(mode=0o700)
    env = runtime_env({"OBJTIER_OUTPUT": str(trace), "OBJTIER_SAMPLER": "none"})
    with SwapTier(64 << 20) as tier:
        limited = _threads_while_sleeping(exe, env, tier.preexec)
    (main_pid,) = limited.pop(-1)
    assert limited[main_pid] == everything                  # the program's thread: untouched
    ours = [cpus for tid, cpus in limited.items() if tid != main_pid]
    assert ours and all(len(cpus) == 1 for cpus in ours), limited
    assert len({frozenset(c) for c in ours}) == 1           # all on the same CPU
    free_trace = tmp_path / "free.otr"
    free_trace.mkdir(mode=0o700)
    free = _threads_while_sleeping(
        exe, runtime_env({"OBJTIER_OUTPUT": str(free_trace), "OBJTIER_SAMPLER": "none"}))
    free.pop(-1)
    assert len(free) >= 2 and all(cpus == everything for cpus in free.values()), free
