"""Dependences through indices (issue 40, case 3): a load whose index is the value the previous
load returned (p = next[p]) waits for it, so the walk's misses are served one at a time at every
level, while independent streaming loads over the same array keep the miss registers busy.
A real program built with `objtier cc`, recorded by the runtime, read with the real reader and
modelled through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from objtier.camat.model import PRESETS
from objtier.trace import open_trace
from tests.camat.conftest import build, camat, needs_clang

HERE = Path(__file__).resolve().parent
STEPS = 30_000  # walk(next, 30000) in index_walk.c


@pytest.fixture(scope="module")
def walked(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("index")
    exe = build(tmp, [HERE / "index_walk.c"], "index_walk")
    out = tmp / "out"
    run = camat("--preset", "small", "--regions", "--window", "0", "--stream", "3000000", "-o", str(out), "--",
                str(exe))
    assert run.returncode == 0, run.stderr
    return out, json.loads((out / "camat.json").read_text())


def _levels(doc, region):
    entry = next(r for r in doc["regions"] if r["region"] == region)
    return {lv["level"]: lv for lv in entry["levels"]}


@needs_clang
def test_each_walk_load_depends_on_the_previous_one(walked):
    out, doc = walked
    acc = open_trace(out / "run.otr").accesses
    dep = acc.column("dep").to_numpy()
    store = acc.column("flags").to_numpy() & 1
    walk = next(r for r in doc["regions"] if r["region"] == "walk")
    assert walk["accesses"] == STEPS
    # every step but the first (next[0]: index 0 is no dependence) names the load before it
    assert STEPS - 10 <= int(((dep == 1) & (store == 0)).sum()) <= STEPS + 2_000
    # the shuffle's stores write next[i] = next[j]: an index equal to a loaded value, but no
    # store takes an index dependence
    assert int(((dep > 0) & (store == 1)).sum()) == 0


@needs_clang
def test_index_walk_is_serial_and_stream_is_concurrent_at_every_level(walked):
    _, doc = walked
    walk, stream = _levels(doc, "walk"), _levels(doc, "stream")
    registers = PRESETS["small"].l1.mshrs
    missing = [name for name in ("L1", "L2", "LLC") if walk[name]["C_M"] is None]
    assert not missing, missing  # the walk misses at every cache level
    for name in ("L1", "L2", "LLC"):
        assert 0.9 <= walk[name]["C_M"] <= 1.15, (name, walk[name])
        assert 0.75 * registers <= stream[name]["C_M"] <= registers + 1e-9, (name, stream[name])
    assert walk["L1"]["camat"] > 0.6 * registers * stream["L1"]["camat"]
