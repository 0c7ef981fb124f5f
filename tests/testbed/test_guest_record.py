"""In the guest: the kernel baseline. With NUMA balancing in tiering mode
(kernel.numa_balancing=2, demotion enabled) and a program whose footprint exceeds node 0's free
memory, `objtier record` (the real recorder, run in the guest) captures the kernel's hint
faults, promotions and demotions in the trace's counters timeline.

Node 0 is shrunk by holding hugetlb pages on it (restored afterwards), so a 128 MiB program
overflows it in a few seconds of emulated time instead of touching a whole GiB."""

from __future__ import annotations

import pytest

from objtier.experiments.compare_numa import GuestState, node_free_bytes
from objtier.experiments.numa_hotcold import build_hotcold, parse_where
from objtier.testbed.paths import repo_root
from objtier.trace import open_trace

pytestmark = pytest.mark.guest

MIB = 1 << 20
HOT_MIB, COLD_MIB, LEFT_FREE_MIB = 32, 96, 100


@pytest.fixture
def small_node0(testbed, guest_knobs):
    """Node 0 with about LEFT_FREE_MIB free (hugetlb pages held); restored after the test."""
    state = GuestState(testbed, [0])
    try:
        free = node_free_bytes(testbed, [0])
        state.reserve([0], free - LEFT_FREE_MIB * MIB)
        yield state
    finally:
        state.restore()


def counter_moves(counters, name: str) -> int:
    values = [v for n, v in zip(counters["name"], counters["value"]) if n == name]
    return values[-1] - values[0] if values else 0


def test_recorder_captures_tiering_counters(testbed, small_node0):
    run = testbed.paths.run / "numa-record"
    exe = build_hotcold(run / "hotcold")
    rec = run / "rec.otr"
    free = node_free_bytes(testbed, [0])
    assert (HOT_MIB + COLD_MIB) * MIB > free, f"node 0 has {free >> 20} MiB free"
    small_node0.knobs("2", "1")
    objtier = repo_root() / ".venv" / "bin" / "objtier"
    rc, out, err = testbed.run([str(objtier), "record", "-o", str(rec), "--force",
                                "--sampler", "none", "--counters-interval", "200", "--",
                                str(exe), str(HOT_MIB), str(COLD_MIB), "6"], timeout=400)
    assert rc == 0, err
    where = parse_where(out)
    assert where["cold"]["node1"] > 0, out          # node 0 overflowed: some pages on node 1

    counters = open_trace(rec).counters.to_pydict()
    names = set(counters["name"])
    for name in ("vmstat.numa_hint_faults", "vmstat.pgpromote_success",
                 "vmstat.pgdemote_kswapd", "vmstat.pgdemote_direct", "node0.memused_bytes",
                 "node1.memused_bytes", "proc.node1_bytes"):
        assert name in names, name
    demoted = sum(counter_moves(counters, n) for n in names if n.startswith("vmstat.pgdemote_"))
    assert demoted > 0
    assert counter_moves(counters, "vmstat.numa_hint_faults") > 0
    assert counter_moves(counters, "vmstat.pgpromote_candidate") + \
        counter_moves(counters, "vmstat.pgpromote_success") > 0
