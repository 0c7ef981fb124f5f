"""The host-side parts of the guest swap-tier comparison: swaprun (native/guest/swaprun.c)
built and run on this machine's own memory cgroup, the guest arms' settings, and the summary's
rule that an arm with a dead run gets no ratio. The arms themselves run in the guest
(tests/testbed/test_guest_swap_arms.py)."""
from __future__ import annotations

import os
import subprocess

import pytest

from objtier.errors import EnvironmentProblem, UsageError
from objtier.experiments.guest_compare import summarize
from objtier.experiments.guest_swap import (GuestRun, GuestSwapSettings, GuestSwapTier, _ints,
                                        biggest_system_ram, build_swaprun, parse_kv)
from objtier.restore import Restorer
from objtier.tiers.swap import MemoryCgroup


@pytest.fixture(scope="module")
def swaprun(tmp_path_factory):
    return build_swaprun(tmp_path_factory.mktemp("swaprun"))


def run(swaprun, cgroup, tmp_path, *args, program=("true",)):
    result = tmp_path / "result"
    done = subprocess.run([str(swaprun), "--cgroup", str(cgroup), "--result", str(result),
                           *args, "--", *program], capture_output=True, text=True)
    values = _ints(parse_kv(result.read_text(), "=")) if result.exists() else {}
    return done, values


def test_bad_usage_exits_2(swaprun, tmp_path):
    for args in ([], ["--cgroup", str(tmp_path)], ["--cgroup", str(tmp_path), "--result", "x"],
                 ["--cgroup", str(tmp_path), "--result", "x", "--max-probe", "2", "--", "true"],
                 ["--bogus", "1", "--", "true"]):
        done = subprocess.run([str(swaprun), *args], capture_output=True, text=True)
        assert done.returncode == 2 and "usage: swaprun" in done.stderr


@pytest.mark.root
def test_runs_the_program_in_the_cgroup_and_reports_it(swaprun, tmp_path):
    with Restorer() as restorer:
        cg = MemoryCgroup.create(f"objtier-{os.getpid()}-swaprun", 1 << 30, restorer)
        done, res = run(swaprun, cg.path, tmp_path, "--flush-ms", "5", program=(
            "sh", "-c", "cat /proc/self/cgroup; sleep 0.3; exit 3"))
        assert done.returncode == 0, done.stderr
        assert res["status"] == 3 and res["signal"] == 0 and res["timed_out"] == 0
        assert cg.path.name in done.stdout            # the program ran inside the cgroup
        assert res["wall_ns"] > 0 and res["flush_reads"] >= 2 and res["flush_ms"] == 5
        assert res["reclaim"] == 0 and res["reclaim_writes"] == 0
        assert os.getpid() not in [int(p) for p in cg.read("cgroup.procs").split()]
        done, res = run(swaprun, cg.path, tmp_path, "--flush-ms", "0", "--timeout-s", "0.2",
                        program=("sleep", "30"))
        assert res["timed_out"] == 1 and res["status"] == 128 + 9 and res["signal"] == 9
        assert res["flush_reads"] == 0
        done, res = run(swaprun, cg.path, tmp_path, program=("/nonexistent/prog",))
        assert res["status"] == 127 and "nonexistent" in done.stderr


def test_settings_out_of_range_are_refused():
    for bad in (GuestSwapSettings(flush_ms=-1), GuestSwapSettings(zram_mib=1),
                GuestSwapSettings(psi_max_probe=0), GuestSwapSettings(psi_target_pct=0)):
        with pytest.raises(UsageError):
            bad.validate()
    with pytest.raises(UsageError, match="unknown arm"):
        GuestSwapTier(None, None, GuestSwapSettings(), ["kernel", "tmo"])


def row(arm, wall, status=0, oom=0, repeat=1):
    return GuestRun(arm=arm, repeat=repeat, order=0, local_bytes=100, status=status,
                    timed_out=False, wall_s=wall, user_s=0, sys_s=0, oom_kills=oom,
                    refault_anon=10, memcg_pswpin=None, memcg_pswpout=None, peak_bytes=100,
                    file_bytes=0)


def test_summary_gives_no_ratio_to_an_arm_that_died():
    rows = [row("kernel", 10.0), row("kernel", 12.0, repeat=2),
            row("objtier", 5.0), row("objtier", 6.0, repeat=2),
            row("psi-reclaim", 8.0), row("psi-reclaim", 1.0, status=137, oom=1, repeat=2)]
    per = summarize(rows)["100"]
    assert per["kernel"]["speedup_vs_kernel"] == 1.0 and per["kernel"]["wall_s"] == 11.0
    assert per["objtier"]["speedup_vs_kernel"] == pytest.approx(11.0 / 5.5, abs=1e-3)
    assert per["psi-reclaim"]["survived"] == 1 and per["psi-reclaim"]["oom_kills"] == 1
    assert per["psi-reclaim"]["speedup_vs_kernel"] is None
    rows[0] = row("kernel", 10.0, status=137, oom=1)
    assert all(s["speedup_vs_kernel"] is None for s in summarize(rows)["100"].values())


def test_runs_csv_reads_back_to_the_same_summary(tmp_path):
    from objtier.experiments.guest_compare import rows_from_csv, write_rows

    rows = [row("kernel", 10.0), row("objtier", 5.0), row("objtier", 7.5, status=137, oom=1)]
    rows[0].vmstat = {"pswpin": 12}
    rows[1].sidecar = {"flush_reads": 40}
    write_rows(rows, tmp_path / "runs.csv")
    back = rows_from_csv(tmp_path / "runs.csv")
    assert summarize(back) == summarize(rows)
    assert back[0].vmstat == {"pswpin": 12} and back[1].sidecar["flush_reads"] == "40"
    assert [r.survived for r in back] == [True, True, False]


# /proc/iomem of the guest (2 GiB, two NUMA nodes in one range), trimmed
IOMEM = """00000000-00000fff : Reserved
00001000-0009fbff : System RAM
000a0000-000bffff : PCI Bus 0000:00
00100000-7ffdffff : System RAM
  01000000-01ffffff : Kernel code
7ffe0000-7fffffff : Reserved
100000000-10fffffff : System RAM
"""


def test_damon_reclaim_region_is_the_biggest_system_ram_range():
    assert biggest_system_ram(IOMEM) == (0x100000, 0x7ffe0000)
    # nested entries ("Kernel code") are not ranges of their own
    assert biggest_system_ram("00100000-001fffff : System RAM\n  00000000-7fffffff : System RAM\n"
                              ) == (0x100000, 0x200000)
    with pytest.raises(EnvironmentProblem, match="no System RAM"):
        biggest_system_ram("00000000-00000fff : Reserved\n")


@pytest.mark.parametrize("bad", [dict(damon_wmarks=(500, 600, 200)),
                                 dict(damon_wmarks=(1001, 999, 0)),
                                 dict(damon_min_age_us=50_000),
                                 dict(damon_quota_ms=-1), dict(damos_quota_bytes=-1)])
def test_damon_settings_out_of_range_are_refused(bad):
    with pytest.raises(UsageError):
        GuestSwapSettings(**bad).validate()
    GuestSwapSettings().validate()
