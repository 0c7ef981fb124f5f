"""A real `local` sweep on the swap tier (memory cgroup + zram, stat-flush reader): FoM parsed
from the workload's FOM line, nothing left on the machine, and a lower local fraction never
reported faster beyond noise."""

from __future__ import annotations

import json
import os

import pytest

from objtier.native import binary
from objtier.sweep.fom import FomSource
from objtier.sweep.knobs import KnobOptions, make_knob
from objtier.sweep.runner import SweepSettings, run_sweep

from ..experiments.helpers import leftovers, machine_state

pytestmark = pytest.mark.root


def test_local_sweep_on_stream(tmp_path):
    # stream -s 1000000: 3 arrays of 7.6 MiB (23 MiB); at 60 % a third of them is in swap
    command = [str(binary("stream")), "-s", "1000000", "-n", "3", "-t", "1"]
    knob = make_knob("local", [60, 100], KnobOptions())
    assert knob.levels == [100, 60]
    out = tmp_path / "sweep"
    before = machine_state()
    during = []
    outcome = run_sweep(command, knob, SweepSettings(repeat=2, fom=FomSource("line"),
                                                     output=out),
                        on_record=lambda r, i, n: during.append(machine_state()))
    after = machine_state()
    assert f"objtier-sweep-{os.getpid()}" in during[0][1]     # the cgroup existed
    assert leftovers(before, during[0], after) == []          # and nothing stayed
    assert len(outcome.records) == 4
    assert [r.level for r in outcome.records] == [100, 60, 100, 60]   # interleaved rounds
    assert all(r.status == "ok" and r.unit == "MB/s" and r.fom > 0 for r in outcome.records)
    assert all(r.extra["stat_flush_reads"] > 0 for r in outcome.records)
    at60 = [r for r in outcome.records if r.level == 60]
    assert all(r.extra["limit_bytes"] < 0.6 * knob.footprint + (4 << 20) + 4096 for r in at60)
    metric = outcome.metrics[0]
    full, limited = metric.levels
    # 60 % of the footprint cannot be faster than all of it beyond noise: its median stays
    # under the top of the 100 % level's interval, with a 25 % allowance
    assert limited.median <= 1.25 * full.ci_high
    doc = json.loads((out / "sweep.json").read_text())
    assert doc["config"]["stat_flush_ms"] == 10
    assert doc["config"]["footprint_bytes"] == knob.footprint
    assert {lv["kind"] for lv in doc["levels"]} == {"real"}
    assert oct((out / "sweep.json").stat().st_mode & 0o777) == "0o600"
