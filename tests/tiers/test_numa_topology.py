"""Tier detection on sysfs fixture trees of several machine shapes, and on this host's /sys."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from objtier.errors import UsageError
from objtier.tiers.numa_topology import (classify, detect_tiers, parse_cpulist, parse_tier_map,
                                         read_topology, tier_map_from_sets)

FIXTURES = Path(__file__).parent / "fixtures"


def sysfs(shape: str) -> Path:
    return FIXTURES / shape / "sys"


def test_one_node_has_no_slow_tier():
    d = detect_tiers(sysfs("one_node"))
    assert d.fast == {0} and d.slow == frozenset()
    assert not d.has_slow_tier
    assert "one memory node" in d.message and "swap tier" in d.message
    assert d.reasons[0] == "the only memory node"


def test_two_sockets_of_equal_dram_have_no_slow_tier():
    d = detect_tiers(sysfs("two_sockets"))
    assert d.fast == {0, 1} and not d.slow
    assert d.source == "none"
    assert "--slow-nodes" in d.message


def test_two_sockets_remote_socket_as_slow_tier_by_explicit_map():
    d = detect_tiers(sysfs("two_sockets"), tier_map_from_sets("0", "1"))
    assert d.fast == {0} and d.slow == {1}
    assert d.source == "override"
    assert d.reasons[1] == "explicit node->tier map"


def test_dram_cxl_with_hmat_uses_kernel_memory_tiers():
    nodes = read_topology(sysfs("dram_cxl_hmat"))
    assert nodes[0].cpus == (0, 1) and nodes[1].cpus == ()
    assert nodes[1].read_latency_ns == 300 and nodes[1].read_bandwidth_mbps == 25000
    assert (nodes[0].memory_tier, nodes[1].memory_tier) == (4, 54)
    assert nodes[0].distances == {0: 10, 1: 20}
    d = classify(nodes)
    assert d.fast == {0} and d.slow == {1}
    assert d.source == "memory_tiers"
    assert "memory_tier54" in d.reasons[1] and "no CPUs" in d.reasons[1]


def test_dram_cxl_on_older_kernel_falls_back_to_hmat():
    d = detect_tiers(sysfs("dram_cxl_one_tier"))
    assert d.fast == {0} and d.slow == {1}
    assert d.source == "hmat"
    # cost = (500/220) * (120000/50000) = 5.45
    assert "5.45x" in d.reasons[1]


def test_cpuless_node_without_perf_data_is_slow_by_cpu_presence():
    d = detect_tiers(sysfs("cpuless_plain"))
    assert d.fast == {0} and d.slow == {1}
    assert d.source == "cpus"
    assert "SLIT distance 20" in d.reasons[1]


def test_dram_plus_kmem_dax_optane():
    d = detect_tiers(sysfs("dram_kmem_dax"))
    assert d.fast == {0, 1} and d.slow == {2, 3}
    assert d.source == "memory_tiers"
    assert all("memory_tier22" in d.reasons[n] for n in (2, 3))


def test_hbm_flat_mode_cpuless_node_is_the_fast_one():
    d = detect_tiers(sysfs("hbm_flat"))
    assert d.fast == {1} and d.slow == {0}
    assert d.source == "memory_tiers"


def test_hbm_flat_mode_by_hmat_alone():
    nodes = {n: dataclasses.replace(i, memory_tier=None)
             for n, i in read_topology(sysfs("hbm_flat")).items()}
    d = classify(nodes)
    assert d.fast == {1} and d.slow == {0}
    assert d.source == "hmat" and "faster than DRAM" in d.reasons[1]


def test_explicit_map_overrides_detection_per_node():
    d = detect_tiers(sysfs("dram_kmem_dax"), parse_tier_map("1=slow"))
    assert d.fast == {0} and d.slow == {1, 2, 3}
    assert d.source == "override+memory_tiers"


def test_bad_maps_are_usage_errors():
    with pytest.raises(UsageError, match="does not exist"):
        detect_tiers(sysfs("one_node"), {5: "slow"})
    with pytest.raises(UsageError, match="0=fast"):
        parse_tier_map("0:fast")
    with pytest.raises(UsageError, match="both"):
        tier_map_from_sets("0-1", "1")
    with pytest.raises(UsageError, match="no fast node"):
        detect_tiers(sysfs("cpuless_plain"), {0: "slow"})


def test_parse_cpulist():
    assert parse_cpulist("0-3,8,10-11\n") == (0, 1, 2, 3, 8, 10, 11)
    assert parse_cpulist("\n") == ()


def test_missing_sysfs_root_is_a_clear_error(tmp_path):
    with pytest.raises(UsageError, match="no NUMA node"):
        detect_tiers(tmp_path)


def test_this_host():
    """This project's CI machines have one NUMA node: no slow NUMA tier, with a clear message."""
    nodes = read_topology("/sys")
    if len([i for i in nodes.values() if i.mem_total_kib > 0]) != 1:
        pytest.skip(f"this host has {len(nodes)} NUMA nodes; the check is for one-node hosts")
    d = detect_tiers("/sys")
    assert not d.has_slow_tier
    assert d.message.startswith("one memory node")
