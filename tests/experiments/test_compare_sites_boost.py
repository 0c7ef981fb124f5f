"""Small blocks of a library nobody here wrote, placed: Boost.Graph's PageRank (Debian
libboost-graph-dev) over its own adjacency lists, whose per-vertex edge vectors and edge-list
nodes are small blocks mixed on the heap's pages. compare watches the sites in its profiles,
the kernel model keeps a site apart in an arena of its own (or locks its first chunks), and
the objtier arm swaps in less than kernel reclaim with the program's output unchanged."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from objtier.experiments.compare_swap import CompareSettings, run_compare

pytestmark = pytest.mark.root

DRIVER = Path(__file__).parents[2] / "bench" / "third_party" / "programs" / "boost_pagerank.cc"
HEADER = Path("/usr/include/boost/graph/page_rank.hpp")


@pytest.mark.heavy   # a minute or two: a kernel arm under pressure, four profiles
@pytest.mark.skipif(not HEADER.exists(), reason="libboost-graph-dev is not installed")
def test_boost_pagerank_sites_kept_apart_swap_in_less(tmp_path):
    exe = tmp_path / "boost_pagerank"
    subprocess.run(["g++", "-O2", "-o", str(exe), str(DRIVER)], check=True)
    said: list[str] = []
    settings = CompareSettings(local="50%", repeat=1, output=tmp_path / "out")
    result = run_compare([str(exe), "--scale", "16", "--degree", "8", "--iters", "60"],
                         settings, say=said.append)
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert plan.get("sites"), said
    assert {s["tier"] for s in plan["sites"]} <= {"apart", "fast"}
    assert any(line.startswith("sites:") and "kept apart" in line for line in said), said
    med = result.summary["medians"]
    assert med["baseline"]["finished"] == med["objtier"]["finished"] == 1
    assert med["objtier"]["memcg_refault_anon"] < 0.5 * med["baseline"]["memcg_refault_anon"]
    # the same ranks under both arms (the FOM line holds the time, which differs)
    outs = {"".join(line for line in p.read_text().splitlines(True)
                    if not line.startswith("FOM"))
            for p in (tmp_path / "out" / "runs").glob("*.out")}
    assert len(outs) == 1 and "checksum" in next(iter(outs))
