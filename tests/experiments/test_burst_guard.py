"""The pressure guard keeps reclaim room for a multi-threaded allocation burst: a program with
a hot array the plan locks whole, whose sixteen threads then allocate, touch and free burst
buffers at once, run by `objtier run` under a real memory cgroup (v1 here) with zram behind
it, its lock margin smaller than what the threads charge at once. The runtime gives up the
tail of its locks (MUNLOCK + COLD records while the array is live) instead of leaving the
cgroup too little to reclaim from; the program's output and exit status are its own, and the
cgroup and zram device are gone afterwards."""

from __future__ import annotations

import os
import subprocess

import pytest

from .helpers import PROGS, machine_state, objtier

pytestmark = [pytest.mark.root, pytest.mark.heavy]

MIB = 1 << 20
MLOCK, MUNLOCK, COLD = 1, 2, 3
ARGS = ("48", "16", "2", "24")  # hot MiB, threads, MiB per thread burst, bursts (the guard
#                                   must see the cgroup near its limit while they run)


# One run in about thirty was SIGKILLed by the cgroup's OOM killer with the guard on (once in a
# fresh-clone CI run on 2026-11-28; 0 of 28 runs of this test alone afterwards): memcg v1 can
# still kill a charge burst between two guard passes. Such a kill, and nothing else, is retried
# once; two in a row fail the test.
@pytest.mark.flaky(reruns=1, only_rerun=[r"SIGKILL \(the cgroup's OOM killer\)"])
def test_burst_of_sixteen_threads_gets_reclaim_room(compile_c, tmp_path):
    burst = compile_c((PROGS / "burst.c").read_text(), "burst")
    alone = subprocess.run([str(burst), *ARGS], capture_output=True, text=True, timeout=120)
    assert alone.returncode == 0, alone.stderr
    # the plan: the hot array fast, whole (made from the recorded context key, so that it
    # does not depend on what a short sampled recording happened to see)
    rec = tmp_path / "burst.otr"
    made = objtier("record", "-q", "--sampler", "none", "--counters-interval", "0",
                   "-o", str(rec), "--", str(burst), "48", "1", "1", "1")
    assert made.returncode == 0, made.stderr
    from objtier.analysis.objects import object_table as trace_objects
    from objtier.plan import Budget, build_plan, identity, object_table, rank, write_plan
    from objtier.trace import open_trace

    table = trace_objects(open_trace(rec), labels=False).to_pylist()
    key = next(r["context_key"] for r in table if r["size"] == 48 * MIB)
    objects = object_table({"object": [0], "context_key": [key], "occurrence": [0],
                            "size": [48 * MIB], "accesses": [1.0], "label": ["hot"]})
    plan = tmp_path / "plan.json"
    write_plan(build_plan(objects, rank(objects, 48 * MIB), Budget(48 * MIB, "48M", None, 0),
                          identity(burst)), plan)

    out = tmp_path / "run.otr"
    # 56 MiB of local memory, 52 MiB of it lockable: the 48 MiB array leaves 8 MiB, where 17
    # threads may charge 2 MiB each
    ran = objtier("run", "--plan", str(plan), "--local", "56M", "--mlock-margin", "4M",
                  "-o", str(out), "--", str(burst), *ARGS)
    assert ran.returncode == 0, (
        "SIGKILL (the cgroup's OOM killer)\n" if ran.returncode == 137 else "") + ran.stderr
    assert ran.stdout == alone.stdout
    assert "unlocked to leave reclaim room" in ran.stderr, ran.stderr
    assert not [c for c in machine_state()[1] if c.startswith(f"objtier-{os.getpid()}")]

    trace = open_trace(out)
    sizes = dict(zip(trace.allocations.column("seq").to_pylist(),
                     trace.allocations.column("size").to_pylist()))
    hot = [r for r in trace.placements.to_pylist() if sizes.get(r["alloc_seq"]) == 48 * MIB]
    locks = [r for r in hot if r["action"] == MLOCK and r["result"] == 0]
    assert len(locks) == 1 and locks[0]["length"] >= 48 * MIB - 8192
    # the relief: the tail of the array unlocked and advised cold while it is live (offset >
    # 0), before the free's munlock of what stayed locked (offset 0)
    tails = [r for r in hot if r["action"] == MUNLOCK and r["offset"] > 0 and r["result"] == 0]
    assert tails, hot
    cold = [r for r in hot if r["action"] == COLD and r["offset"] > 0]
    assert {(r["offset"], r["length"]) for r in tails} <= {(r["offset"], r["length"])
                                                           for r in cold}
    released = sum(r["length"] for r in tails)
    assert 0 < released <= 14 * MIB   # at most a quarter of the limit
