"""The knobs' mechanics without special hardware: resctrl MBA against a fixture tree (group
made, schemata written, rounding read back, group removed), weighted interleave weights and a
real set_mempolicy in a child, the bandit co-runner started, measured and stopped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from objtier.errors import EnvironmentProblem, UsageError
from objtier.sweep.knobs import (MPOL_BIND, MPOL_WEIGHTED_INTERLEAVE, BanditKnob, KnobOptions,
                                 MbaKnob, SlowShareKnob, ThreadsKnob, interleave_weights,
                                 make_knob, mb_values, parse_bandit_report, with_threads)

TOPOLOGY = Path(__file__).resolve().parent.parent / "tiers" / "fixtures"


def resctrl_tree(root: Path, domains=("0", "1"), linear=1, min_bw=10) -> Path:
    """A resctrl mount as the kernel lays it out: info/MB/* and the root group's schemata."""
    (root / "info" / "MB").mkdir(parents=True)
    for name, value in (("min_bandwidth", min_bw), ("bandwidth_gran", 10),
                        ("delay_linear", linear), ("num_closids", 8)):
        (root / "info" / "MB" / name).write_text(f"{value}\n")
    (root / "schemata").write_text("    L3:" + ";".join(f"{d}=fff" for d in domains) + "\n"
                                   "    MB:" + ";".join(f"{d}=100" for d in domains) + "\n")
    return root


def test_mba_group_schemata_readback_and_removal(tmp_path):
    root = resctrl_tree(tmp_path / "resctrl")
    knob = MbaKnob([100, 65, 30], KnobOptions(resctrl_root=root))
    assert knob.levels == [100, 65, 30]          # least throttled first
    group = root / f"objtier-sweep-{os.getpid()}"
    with knob:
        knob.prepare(["true"], lambda text: None)
        assert group.is_dir()
        with knob.level(100, ["true"], {}) as setup:
            assert (group / "schemata").read_text() == "MB:0=100;1=100\n"
        assert setup.applied == "MB 100"
        # the kernel rounds 65 to its 10 % step: what the group reports back is 70
        knob.write_level(65)
        assert (group / "schemata").read_text() == "MB:0=65;1=65\n"
        (group / "schemata").write_text("    MB:0=70;1=70\n")
        assert knob.applied() == {"0": 70, "1": 70}
        # level() writes, reads back and reports requested vs applied
        original = knob.write_level
        knob.write_level = lambda v: (original(v), (group / "schemata").write_text(
            f"MB:0={int(v) // 10 * 10 + 10};1={int(v) // 10 * 10 + 10}\n"))
        with knob.level(65, ["true"], {}) as setup:
            pass
        assert setup.applied == "MB 70 (requested 65)"
        assert setup.extra == {"requested": 65, "applied": {"0": 70, "1": 70}}
        # the preexec hook moves the child into the group before exec
        with knob.level(30, ["true"], {}) as setup:
            child = subprocess.run(["sh", "-c", "echo $$"], preexec_fn=setup.preexec,
                                   capture_output=True, text=True)
        assert (group / "tasks").read_text().strip() == child.stdout.strip()
    assert not group.exists()                    # removed on exit
    assert sorted(p.name for p in root.iterdir()) == ["info", "schemata"]


def test_mba_group_is_removed_when_the_sweep_fails(tmp_path):
    root = resctrl_tree(tmp_path / "resctrl")
    knob = MbaKnob([50], KnobOptions(resctrl_root=root))
    with pytest.raises(RuntimeError):
        with knob:
            knob.prepare(["true"], lambda text: None)
            with knob.level(50, ["true"], {}):
                raise RuntimeError("the run failed")
    assert list(root.glob("objtier-sweep-*")) == []


def test_mba_levels_are_checked_against_the_hardware_range(tmp_path):
    root = resctrl_tree(tmp_path / "intel")
    with pytest.raises(UsageError, match="from 10 to 100"):
        MbaKnob([5], KnobOptions(resctrl_root=root))
    with pytest.raises(UsageError, match="from 10 to 100"):
        MbaKnob([150], KnobOptions(resctrl_root=root))
    amd = resctrl_tree(tmp_path / "amd", linear=0, min_bw=1)
    assert MbaKnob([2048, 100, 10], KnobOptions(resctrl_root=amd)).levels == [2048, 100, 10]
    with pytest.raises(EnvironmentProblem, match="no resctrl"):
        MbaKnob([50], KnobOptions(resctrl_root=tmp_path / "absent"))
    (tmp_path / "nomb").mkdir()
    with pytest.raises(EnvironmentProblem, match="no memory bandwidth allocation"):
        MbaKnob([50], KnobOptions(resctrl_root=tmp_path / "nomb"))


def test_mb_line_parsing():
    assert mb_values("L3:0=ff\n    MB:0=70;1=100\n") == {"0": 70, "1": 100}
    assert mb_values("L3:0=ff\n") == {}


def test_interleave_weights_give_the_requested_share():
    for share in (1, 10, 25, 33, 50, 75, 90, 99):
        fast, slow = interleave_weights(share)
        assert 1 <= fast <= 100 and 1 <= slow <= 100
        assert abs(100 * slow / (fast + slow) - share) < 0.5
    assert interleave_weights(50) == (1, 1)
    assert interleave_weights(25) == (3, 1)


def test_slow_share_refuses_one_node_and_plans_policies_on_two_tiers(tmp_path):
    with pytest.raises(EnvironmentProblem, match="needs a slow NUMA node"):
        SlowShareKnob([0, 50], KnobOptions(sysfs_root=TOPOLOGY / "one_node" / "sys"))
    with pytest.raises(UsageError, match="0 to 100"):
        SlowShareKnob([120], KnobOptions(sysfs_root=TOPOLOGY / "dram_cxl_hmat" / "sys"))
    knob = SlowShareKnob([50, 0, 100], KnobOptions(sysfs_root=TOPOLOGY / "dram_cxl_hmat" / "sys"))
    assert knob.levels == [0, 50, 100]
    fast, slow = sorted(knob.tiers.fast), sorted(knob.tiers.slow)
    assert knob.policy(0)[:2] == (MPOL_BIND, fast)
    assert knob.policy(100)[:2] == (MPOL_BIND, slow)
    assert knob.policy(50)[:2] == (MPOL_WEIGHTED_INTERLEAVE, fast + slow)


def test_slow_share_weights_are_written_and_restored(tmp_path):
    sysfs = tmp_path / "sys"
    import shutil

    shutil.copytree(TOPOLOGY / "dram_cxl_hmat" / "sys", sysfs, symlinks=True)
    weights = sysfs / "kernel/mm/mempolicy/weighted_interleave"
    weights.mkdir(parents=True)
    knob = SlowShareKnob([25], KnobOptions(sysfs_root=sysfs))
    nodes = sorted(knob.tiers.fast | knob.tiers.slow)
    for n in nodes:
        (weights / f"node{n}").write_text("1\n")
    (weights / "auto").write_text("true\n")
    with knob:
        knob.prepare(["true"], lambda text: None)
        with knob.level(25, ["true"], {}):
            for n in knob.tiers.fast:
                assert (weights / f"node{n}").read_text().strip() == "3"
            for n in knob.tiers.slow:
                assert (weights / f"node{n}").read_text().strip() == "1"
        for n in knob.tiers.fast:
            assert (weights / f"node{n}").read_text().strip() == "3"
    for n in nodes:
        assert (weights / f"node{n}").read_text().strip() == "1"
    assert (weights / "auto").read_text().strip() == "true"


@pytest.mark.skipif(not Path("/sys/kernel/mm/mempolicy/weighted_interleave").exists(),
                    reason="kernel without weighted interleave (Linux < 6.9)")
def test_weighted_interleave_policy_reaches_the_child():
    """set_mempolicy(MPOL_WEIGHTED_INTERLEAVE) in the preexec hook is the child's policy
    (here over node 0 only: the mechanics, not a slow node)."""
    from objtier.sweep.knobs import set_mempolicy

    child = subprocess.run(
        [sys.executable, "-c", "import mmap;m=mmap.mmap(-1, 1<<22);m[0:1<<22]=b'x'*(1<<22);"
         "print(open('/proc/self/numa_maps').read())"],
        preexec_fn=lambda: set_mempolicy(MPOL_WEIGHTED_INTERLEAVE, [0]),
        capture_output=True, text=True)
    assert child.returncode == 0, child.stderr
    assert "weighted interleave" in child.stdout


def test_threads_placeholder_and_environment():
    cmd, env = with_threads(["prog", "-t", "{threads}", "x{threads}y"], {"A": "1"}, 4)
    assert cmd == ["prog", "-t", "4", "x4y"] and env == {"A": "1", "OMP_NUM_THREADS": "4"}
    assert with_threads(["prog"], {}, None) == (["prog"], {})
    knob = ThreadsKnob([4, 1, 2], KnobOptions())
    assert knob.levels == [4, 1, 2]              # the user's order
    with pytest.raises(UsageError, match="whole number"):
        ThreadsKnob([1.5], KnobOptions())


def test_bandit_runs_reports_bandwidth_and_is_gone_after(tmp_path):
    knob = BanditKnob([0, 100], KnobOptions(bandit_size="8M"))
    with knob:
        knob.prepare(["true"], lambda text: None)
        with knob.level(100, ["true"], {}) as setup:
            process = knob.processes[0]
            subprocess.run(["sleep", "0.3"])
        with knob.level(0, ["true"], {}) as idle:
            assert knob.processes == []
    assert process.returncode == 0
    assert setup.extra["bandit_gbps"] > 0
    assert idle.applied == "no bandit" and idle.extra == {}


def test_bandit_is_killed_when_the_sweep_is_interrupted():
    knob = BanditKnob([100], KnobOptions(bandit_size="8M"))
    with pytest.raises(KeyboardInterrupt):
        with knob:
            knob.prepare(["true"], lambda text: None)
            with knob.level(100, ["true"], {}):
                process = knob.processes[0]
                raise KeyboardInterrupt
    assert process.poll() is not None


def test_bandit_report_parsing():
    assert parse_bandit_report("BANDIT ready\nBANDIT bytes=100 seconds=2.0 gbps=5e-08\n") == \
        {"bytes": 100.0, "seconds": 2.0, "gbps": 5e-08}
    assert parse_bandit_report("nothing") == {}


def test_unknown_knob_and_bad_levels():
    with pytest.raises(UsageError, match="unknown knob 'speed'"):
        make_knob("speed", [1], KnobOptions())
    with pytest.raises(UsageError, match=r"local=150%"):
        make_knob("local", [100, 150], KnobOptions())
    with pytest.raises(UsageError, match="local=0%"):
        make_knob("local", [0], KnobOptions())
    with pytest.raises(UsageError, match="0 to 100"):
        make_knob("bandit", [101], KnobOptions())
