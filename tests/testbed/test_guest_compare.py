"""`objtier compare --tier numa` (objtier.experiments.compare_numa): the pure parts on the host,
and one whole comparison in the guest on a program with a hot and a cold array.

In the guest: node 0 is shrunk to about 100 MiB free (hugetlb pages held by the experiment), the
budget is 48 MiB, so the plan puts the 32 MiB hot array in fast memory and the 96 MiB cold one in
slow memory. The objtier arm must show exactly that page by page (the program's own move_pages
report and the runtime's RESIDENCY records); the kernel arm (tiering mode) must have its vmstat
counters and residency collected. The guest proves mechanics only: no timing is asserted."""

from __future__ import annotations

import csv
import json

import pytest

from objtier.experiments.compare_numa import (NumaCompareSettings, NumaRunRow, last_residency,
                                              node_free_bytes, object_shares, parse_vmstat,
                                              run_numa_compare, summarize_rows, vmstat_deltas)
from objtier.experiments.numa_hotcold import build_hotcold, parse_where

from .guest_helpers import guest_read

MIB = 1 << 20


# ---- host: pure parts -------------------------------------------------------------------------

def test_vmstat_deltas_sum_demotions():
    before = parse_vmstat("pgdemote_kswapd 10\npgdemote_direct 1\npgpromote_success 5\n")
    after = parse_vmstat("pgdemote_kswapd 30\npgdemote_direct 2\npgpromote_success 9\n")
    d = vmstat_deltas(before, after)
    assert d["pgdemote"] == 21 and d["pgpromote_success"] == 4
    assert d["numa_hint_faults"] is None          # missing counters stay unknown, not 0


def test_last_residency_pass_and_shares():
    rows = [{"time_ns": 1, "alloc_seq": 7, "node": 0, "pages": 10},
            {"time_ns": 2, "alloc_seq": 7, "node": 0, "pages": 4},
            {"time_ns": 2, "alloc_seq": 7, "node": 1, "pages": 12},
            {"time_ns": 2, "alloc_seq": 7, "node": 0xFFFFFFFF, "pages": 4},
            {"time_ns": 2, "alloc_seq": 8, "node": 0xFFFFFFFF, "pages": 3}]
    by = last_residency(rows)
    assert by == {7: {0: 4, 1: 12, 0xFFFFFFFF: 4}, 8: {0xFFFFFFFF: 3}}
    shares = object_shares(by, frozenset({1}))
    assert shares[7] == {"pages_fast": 4, "pages_slow": 12, "pages_absent": 4,
                         "slow_share": 0.75}
    assert shares[8]["slow_share"] is None        # nothing present


def test_summary_medians_skip_failed_runs():
    rows = [NumaRunRow("kernel", 1, 1, 0, 2.0, pgdemote=10),
            NumaRunRow("objtier", 1, 2, 0, 1.0, pgdemote=0),
            NumaRunRow("kernel", 2, 3, 1, 9.0, pgdemote=99)]
    objects = [{"config": "kernel", "context_key": "k", "label": "f", "size": 1,
                "planned": "fast", "slow_share": 0.5},
               {"config": "objtier", "context_key": "k", "label": "f", "size": 1,
                "planned": "fast", "slow_share": 0.0}]
    s = summarize_rows(rows, objects)
    assert s["medians"]["kernel"]["wall_s"] == 2.0 and s["medians"]["kernel"]["failed"] == 1
    assert s["ratios"]["speedup"] == 2.0
    assert s["objects"]["k"]["kernel_slow_share"] == 0.5
    assert s["objects"]["k"]["objtier_slow_share"] == 0.0


# ---- guest: the whole comparison ----------------------------------------------------------------

@pytest.mark.guest
def test_numa_compare_in_guest(testbed):
    run = testbed.paths.run / "numa-compare"
    exe = build_hotcold(run / "hotcold")
    knobs = {p: guest_read(testbed, p) for p in ("/proc/sys/kernel/numa_balancing",
                                                  "/sys/kernel/mm/numa/demotion_enabled")}
    pool = "/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages"
    pool_before = guest_read(testbed, pool)
    free = node_free_bytes(testbed, [0])
    settings = NumaCompareSettings(local="48M", repeat=1, rate=20000, output=run / "out",
                                   force=True, fast_reserve=max(free - 100 * MIB, 0),
                                   timeout_s=300)
    result = run_numa_compare([str(exe), "32", "96", "5"], settings, testbed=testbed)

    out = settings.output
    for name in ("compare.csv", "objects.csv", "summary.json", "plan.json", "plan.txt"):
        assert (out / name).is_file(), name
    assert [r.config for r in result.rows] == ["kernel", "objtier"]
    assert all(r.ok for r in result.rows), result.rows
    kernel, objtier = result.rows

    # the plan: hot fast, cold slow
    plan_tiers = {o["label"].split()[0]: o["planned"] for o in result.objects}
    assert plan_tiers == {"alloc_hot": "fast", "alloc_cold": "slow"}, result.objects

    # objtier arm: page by page, from the program itself and from the runtime's RESIDENCY
    where = parse_where((out / "runs" / "02-objtier-1.out").read_text())
    assert where["hot"]["node0"] == where["hot"]["pages"], where
    assert where["cold"]["node1"] == where["cold"]["pages"], where
    resid = {o["label"].split()[0]: o for o in result.objects if o["config"] == "objtier"}
    # RESIDENCY samples 4096 evenly spaced pages of a larger object, the first being the page
    # the malloc header shares (never bound): one sample of it scales to size/4096 pages.
    assert resid["alloc_hot"]["pages_slow"] == 0 and resid["alloc_hot"]["pages_fast"] > 0
    assert resid["alloc_cold"]["slow_share"] > 0.99, resid["alloc_cold"]
    assert objtier.placement_actions and not objtier.failed_actions

    # kernel arm: counters and residency collected
    for name in ("numa_hint_faults", "pgpromote_success", "pgdemote", "numa_pages_migrated"):
        assert getattr(kernel, name) is not None, name
    assert {o["label"].split()[0] for o in result.objects if o["config"] == "kernel"} == \
        {"alloc_hot", "alloc_cold"}
    assert kernel.placement_actions == 0

    with open(out / "compare.csv") as f:
        assert len(list(csv.DictReader(f))) == 2
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tiers"]["fast"] == [0] and summary["tiers"]["slow"] == [1]
    assert summary["medians"]["kernel"]["runs"] == 1

    # the guest is as before
    for path, value in knobs.items():
        assert guest_read(testbed, path) == value, path
    assert guest_read(testbed, pool) == pool_before
