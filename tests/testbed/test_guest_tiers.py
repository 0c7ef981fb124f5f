"""In the guest: two memory tiers, node 0 demotes to node 1, objtier's detection agrees."""

from __future__ import annotations

import json

import pytest

from .guest_helpers import guest_read, parse_placement, vmstat

pytestmark = pytest.mark.guest


def test_two_memory_tiers_node1_below_node0(testbed):
    rc, out, err = testbed.run(
        "for t in /sys/devices/virtual/memory_tiering/memory_tier*; do "
        "echo ${t##*memory_tier} $(cat $t/nodelist); done")
    assert rc == 0, err
    tiers = {int(tid): nodes for tid, nodes in (line.split() for line in out.splitlines())}
    assert len(tiers) == 2, out
    (top, top_nodes), (low, low_nodes) = sorted(tiers.items())
    assert top_nodes == "0" and low_nodes == "1"
    assert top == 4          # MEMTIER_ADISTANCE_DRAM >> MEMTIER_CHUNK_BITS
    assert guest_read(testbed, "/sys/devices/system/node/node1/cpulist") == ""


def test_objtier_detects_node1_as_slow_in_the_guest(testbed):
    code = ("import json; from objtier.tiers.numa_topology import detect_tiers; d = detect_tiers(); "
            "print(json.dumps({'fast': sorted(d.fast), 'slow': sorted(d.slow), 'source': d.source}))")
    rc, out, err = testbed.run([f"{testbed.repo}/.venv/bin/python", "-c", code])
    assert rc == 0, err
    assert json.loads(out) == {"fast": [0], "slow": [1], "source": "memory_tiers"}


def test_node0_demotes_to_node1(testbed, placement_prog, guest_knobs):
    """A process bound to node 0 that outgrows node 0 has pages on node 1 afterwards: kswapd /
    direct reclaim migrated them to node 0's demotion target instead of swapping (no swap)."""
    assert testbed.run("echo 1 > /sys/kernel/mm/numa/demotion_enabled").returncode == 0
    assert guest_read(testbed, "/sys/kernel/mm/numa/demotion_enabled") == "true"
    before = vmstat(testbed)
    rc, out, err = testbed.run(["numactl", "--membind=0", placement_prog, "fill", "1100"])
    assert rc == 0, err
    after = vmstat(testbed)
    where = parse_placement(out)
    assert where["node1"] > 0, out        # bound to node 0, yet on node 1: demoted
    assert where["node0"] > 0
    demoted = sum(after[k] - before[k] for k in after if k.startswith("pgdemote_"))
    assert demoted >= where["node1"]
    assert after.get("pswpout", 0) == before.get("pswpout", 0)
