"""In the guest: `sweep --per-object --tier numa` binds the object under test to the slow node and
keeps the others on the fast node, arm by arm — checked by the program's own move_pages report
and by the residency shares the sweep reads back from each run's trace.

The program (objtier.experiments.numa_hotcold: a hot and a cold array from two call sites) is
built and recorded on the host; the guest runs the same binary and libraries, so the context
keys match. Both guest nodes have the same speed: the ratios are not asserted (mechanics only)."""

from __future__ import annotations

import csv
import json

import pytest

from objtier.experiments.numa_hotcold import build_hotcold, parse_where
from objtier.record.session import RecordSettings, record_program
from objtier.testbed.paths import repo_root

pytestmark = pytest.mark.guest

HOT_MIB, COLD_MIB = 8, 16

SWEEP = """
import json, sys
from pathlib import Path
from objtier.sweep.fom import FomSource
from objtier.sweep.perobject import PerObjectSettings, run_per_object
rec, out, *command = sys.argv[1:]
doc = run_per_object(command, PerObjectSettings(recording=Path(rec), repeat=1, timeout_s=300,
                     output=Path(out), min_share=0.0, tier="numa"), FomSource("line"))
print(json.dumps({"tier": doc["tier"], "numa": doc["numa"]}))
"""


def test_per_object_numa_binds_the_object_under_test_to_the_slow_node(testbed):
    run = testbed.paths.run / "sweep-numa"
    exe = build_hotcold(run / "hotcold")
    command = [str(exe), str(HOT_MIB), str(COLD_MIB), "0.3"]
    recording = run / "rec.otr"
    rc, _ = record_program(command, recording, RecordSettings(sampler="fault"), force=True)
    assert rc == 0
    out = run / "po"
    python = repo_root() / ".venv" / "bin" / "python"
    rc, stdout, err = testbed.run([str(python), "-c", SWEEP, str(recording), str(out),
                                   *command], timeout=600)
    assert rc == 0, err
    said = json.loads(stdout.splitlines()[-1])
    assert said["tier"] == "numa"
    assert (said["numa"]["fast_nodes"], said["numa"]["slow_nodes"]) == ([0], [1])

    doc = json.loads((out / "perobject.json").read_text())
    assert doc["tier"] == "numa" and len(doc["objects"]) == 2
    assert all(row["room_share"] == 0 for row in doc["objects"])
    rows = list(csv.DictReader((out / "sweep.csv").open()))
    assert [r["status"] for r in rows] == ["ok"] * 3, rows
    seen = {}
    for row in rows:
        arm = int(float(row["level"]))
        where = parse_where((out / "runs" / f"{row['order'].zfill(3)}-{arm:02d}.out")
                            .read_text())
        extra = json.loads(row["extra"])
        seen[row["label"]] = (where, extra)
    pages = {"hot": HOT_MIB * 256 - 1, "cold": COLD_MIB * 256 - 1}   # whole pages in a block

    def on(where, name, node):
        return where[name][f"node{node}"] == where[name]["pages"] >= pages[name]

    where, extra = seen["all fast"]
    assert on(where, "hot", 0) and on(where, "cold", 0), where
    assert extra["slow_share_rest"] < 0.01 and extra["slow_share_tested"] is None
    assert extra["mbind"] >= 2 and extra["mbind_failed"] == 0
    for name, other in (("hot", "cold"), ("cold", "hot")):
        label = next(k for k in seen if f"alloc_{name}" in k)
        where, extra = seen[label]
        assert on(where, name, 1) and on(where, other, 0), (label, where)
        # the sweep's own check, from the run's RESIDENCY records, says the same (the block's
        # first page, partly malloc's header, is touched before the runtime binds it)
        assert extra["slow_share_tested"] > 0.99 and extra["slow_share_rest"] < 0.01, extra
        assert extra["matched"] == 2 and extra["mbind_failed"] == 0


def test_calibrate_slow_share_in_the_guest(testbed):
    """--calibrate with the slow-share knob where a second node exists: STREAM and ptrchase with
    all their pages bound to the fast node, interleaved 1 : 1, and bound to the slow node;
    rows in GB/s and ns and the policy applied per level. Same-speed nodes: no ordering is
    asserted."""
    out = testbed.paths.run / "sweep-cal"
    objtier = repo_root() / ".venv" / "bin" / "objtier"
    weight = "/sys/kernel/mm/mempolicy/weighted_interleave/node1"
    rc, saved, err = testbed.run(["cat", weight])
    if rc != 0:
        pytest.skip(f"the guest kernel has no weighted interleave: {err.strip()}")
    rc, _, err = testbed.run([str(objtier), "sweep", "--calibrate", "--knob",
                              "slow-share=0,50,100", "--threads", "1", "--repeat", "1",
                              "--calibrate-stream", "200000", "--calibrate-chase", "4M", "-q",
                              "-f", "-o", str(out)], timeout=900)
    assert rc == 0, err
    doc = json.loads((out / "calibration.json").read_text())
    assert doc["knob"] == "slow-share" and doc["kind"] == "real"
    rows = doc["rows"]
    assert [(r["threads"], r["level"]) for r in rows] == [(1, 0), (1, 50), (1, 100)]
    assert all(r["gbps"] > 0 and r["ns"] > 0 for r in rows), rows
    applied = {lv["level"]: lv["applied"] for lv in
               json.loads((out / "ptrchase" / "sweep.json").read_text())["levels"]}
    assert applied == {0: "bound to fast node(s) [0]", 50: "weights fast 1 : slow 1",
                       100: "bound to slow node(s) [1]"}
    # the interleave weights are global: restored after the calibration
    rc, weights, _ = testbed.run(["cat", weight])
    assert rc == 0 and weights == saved
