"""In the guest: memory bound to a node is there, page by page (move_pages query)."""

from __future__ import annotations

import pytest

from .guest_helpers import parse_placement

pytestmark = pytest.mark.guest


@pytest.mark.parametrize("node", [0, 1])
def test_mbind_places_every_page(testbed, placement_prog, node):
    rc, out, err = testbed.run([placement_prog, "bind", "64", str(node)])
    assert rc == 0, err
    where = parse_placement(out)
    assert where["pages"] == 64 * 256
    assert where[f"node{node}"] == where["pages"], out
    assert where["absent"] == 0 and where["other"] == 0


def test_numactl_membind_node1(testbed, placement_prog):
    rc, out, err = testbed.run(["numactl", "--membind=1", placement_prog, "fill", "32"])
    assert rc == 0, err
    where = parse_placement(out)
    assert where["node1"] == where["pages"] == 32 * 256, out
