"""In the guest: the kernel's NUMA-balancing tiering mode (numa_balancing=2) at work."""

from __future__ import annotations

import pytest

from .guest_helpers import parse_placement, vmstat

pytestmark = pytest.mark.guest


def set_tiering(testbed) -> None:
    rc, _, err = testbed.run("echo 1 > /sys/kernel/mm/numa/demotion_enabled && "
                             "sysctl -qw kernel.numa_balancing=2")
    assert rc == 0, err


def test_filling_node0_moves_pgdemote(testbed, placement_prog, guest_knobs):
    set_tiering(testbed)
    before = vmstat(testbed)
    rc, out, err = testbed.run(["numactl", "--membind=0", placement_prog, "fill", "1100"])
    assert rc == 0, err
    after = vmstat(testbed)
    moved = {k: after[k] - before[k] for k in after if k.startswith("pgdemote_")}
    assert sum(moved.values()) > 0, moved
    assert parse_placement(out)["node1"] > 0


def test_hot_pages_on_node1_are_promoted(testbed, placement_prog, guest_knobs):
    """Pages first touched on node 1, then used under the default policy by a CPU of node 0:
    hint faults on the lower tier promote them (node 0 has room, so every candidate goes)."""
    set_tiering(testbed)
    before = vmstat(testbed)
    rc, out, err = testbed.run([placement_prog, "hot", "64", "1", "6"])
    assert rc == 0, err
    after = vmstat(testbed)
    assert after["numa_hint_faults"] > before["numa_hint_faults"]
    promoted = after["pgpromote_success"] - before["pgpromote_success"]
    where = parse_placement(out)
    assert promoted > 0
    assert where["node0"] > 0, out
