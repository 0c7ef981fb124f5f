"""The swap-tier arms in the guest (objtier.experiments.guest_compare): one short comparison of a
small STREAM (18 MiB, 70 % local) under a cgroup v2 limit with zram swap, every arm once:
kernel (MGLRU), pressure-driven memory.reclaim, objtier with and without its pressure guard;
and the guest left as it was found. The DAMON arms (DAMON_RECLAIM's scheme on physical memory, a
DAMOS pageout scheme on the program) page out a program's idle memory; a busy kdamond in the
guest makes them refuse. No timing is asserted (the guest is emulated)."""
from __future__ import annotations

import csv
import json

import pytest

from objtier.errors import EnvironmentProblem
from objtier.experiments.guest_compare import GuestCompareSettings, run_guest_compare
from objtier.experiments.guest_swap import GuestSwapSettings, GuestSwapTier
from objtier.native import binary

from .guest_helpers import guest_read, parse_placement

pytestmark = pytest.mark.guest

ARMS = ("kernel", "psi-reclaim", "objtier", "objtier-noguard")
LRU_SORT = "/sys/module/damon_lru_sort/parameters/enabled"


def guest_state(tb) -> dict[str, str]:
    return {"swaps": guest_read(tb, "/proc/swaps"),
            "subtree": guest_read(tb, "/sys/fs/cgroup/cgroup.subtree_control"),
            "cgroups": tb.run("ls -d /sys/fs/cgroup/objtier-guest-* 2>/dev/null; true").stdout,
            "reclaim": guest_read(tb, "/sys/module/damon_reclaim/parameters/enabled"),
            "kdamonds": guest_read(tb, "/sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds"),
            "min_age": guest_read(tb, "/sys/module/damon_reclaim/parameters/min_age"),
            "demotion": guest_read(tb, "/sys/kernel/mm/numa/demotion_enabled")}


@pytest.mark.timeout(1500)   # four emulated runs with swap: minutes on a loaded host
def test_every_arm_runs_under_the_cgroup_v2_limit_and_the_guest_is_restored(testbed):
    before = guest_state(testbed)
    out = testbed.paths.run / "swap-arms"
    # 18 MiB; 10 rounds, so that the one short profile gets samples under any load
    command = [str(binary("stream")), "-s", "800000", "-n", "10", "-t", "1"]
    # spill, named: the arms' mechanics are tested here, and a named algorithm locks what it
    # chose (the kernel model may find locking nothing best for this STREAM)
    settings = GuestCompareSettings(locals=("70%",), repeat=1, arms=ARMS, profiles=1,
                                    swap=GuestSwapSettings(zram_mib=256, timeout_s=600),
                                    algo="spill")
    summary = run_guest_compare(testbed, command, out, settings)
    per = summary["arms"][str(summary["locals"]["70%"])]
    assert set(per) == set(ARMS)
    assert all(s["survived"] == 1 and s["oom_kills"] == 0 for s in per.values()), per
    assert summary["guest_kernel"].startswith("6.") and summary["lru_gen"] not in ("", "0x0000")
    assert per["kernel"]["swapins"] > 0            # the limit pushed pages to zram and back
    rows = {r["arm"]: r for r in csv.DictReader(open(out / "runs.csv"))}
    for arm in ARMS:                               # every arm had the same stat-flush reader
        assert int(rows[arm]["side_flush_reads"]) > 0 and rows[arm]["side_flush_ms"] == "10"
    psi = rows["psi-reclaim"]
    assert int(psi["side_intervals"]) >= 1
    assert int(psi["side_backoffs"]) + int(psi["side_reclaim_writes"]) == int(psi["side_intervals"])
    for arm in ("objtier", "objtier-noguard"):     # the runtime enforced the plan in cgroup v2
        assert int(rows[arm]["side_objects_matched"]) >= 1
        assert int(rows[arm]["side_locked_bytes"]) > 0
        err = next((out / "runs").glob(f"*-70-{arm}-1.err")).read_text()
        assert "tier swap" in err
    # the guard read the cgroup v2 limit and usage and advised when at the limit; without the
    # guard nothing of the kind happens
    assert "memory cgroup at its limit" in rows["objtier"]["side_guard"]
    assert rows["objtier-noguard"]["side_guard"] == ""
    assert json.loads((out / "summary.json").read_text())["arms"] == summary["arms"]
    assert guest_state(testbed) == before


@pytest.mark.timeout(900)
def test_damon_arms_page_out_idle_memory_and_remove_their_kdamond(testbed, placement_prog):
    """A program that touches 48 MiB once and then leaves it idle for 8 s, no memory limit (so
    the kernel itself has no reason to reclaim): the DAMON arms' schemes page its idle memory
    out to zram — both in their own counters and in the program's absent pages — while the
    kernel arm swaps nothing; their kdamond is removed after each run and the guest left as
    found (the damon_reclaim module is never touched)."""
    before = guest_state(testbed)
    stem = testbed.paths.run / "swap-damon"
    idle = [placement_prog, "idle", "48", "0", "8"]
    with GuestSwapTier(testbed, stem, GuestSwapSettings(zram_mib=128),
                       ["kernel", "damon-reclaim", "damos-pageout"]) as tier:
        assert tier.ram_range and tier.ram_range[1] - tier.ram_range[0] > 512 << 20
        runs = {arm: tier.run(arm, idle, None, 0, stem / arm, order=i)
                for i, arm in enumerate(("kernel", "damon-reclaim", "damos-pageout"), 1)}
    assert all(r.survived for r in runs.values()), runs
    absent = {arm: parse_placement((stem / arm).with_suffix(".out").read_text())["absent"]
              for arm in runs}
    assert runs["kernel"].vmstat["pswpout"] == 0 and absent["kernel"] == 0
    reclaim, damos = runs["damon-reclaim"], runs["damos-pageout"]
    assert reclaim.damon["kdamond_pid"] > 0 and damos.damon["attached"] == 1
    for arm, run in (("damon-reclaim", reclaim), ("damos-pageout", damos)):
        assert run.damon["nr_applied"] > 0 and run.damon["sz_applied"] > 0, (arm, run.damon)
        assert run.vmstat["pswpout"] > 0, (arm, run.vmstat)
        assert absent[arm] > 0, (arm, absent)      # the program's own pages were swapped out
        assert run.sidecar["flush_reads"] > 0
    assert guest_state(testbed) == before


def test_damon_arm_refuses_while_a_kdamond_is_busy(testbed):
    before = guest_state(testbed)
    assert guest_read(testbed, LRU_SORT) == "N"
    testbed.run(f"echo Y > {LRU_SORT}")
    try:
        tier = GuestSwapTier(testbed, testbed.paths.run / "swap-busy", GuestSwapSettings(),
                             ["kernel", "damon-reclaim"])
        with pytest.raises(EnvironmentProblem, match="damon_lru_sort is enabled"):
            with tier:
                pass
    finally:
        testbed.run(f"echo N > {LRU_SORT}")
    assert guest_state(testbed) == before
