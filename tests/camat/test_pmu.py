"""--source pmu: the event tables per CPU family, the counting-group set-up (against a fake
perf_event_open that checks every attribute and returns a recorded-layout reading), the
arithmetic, and the one-line refusal on this machine (which has no PMU)."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from objtier.camat import pmu
from objtier.errors import EnvironmentProblem, UsageError
from tests.camat.conftest import camat

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "pmu_haswell_reading.json").read_text())

CPUINFO = {
    "intel-haswell": "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 63\n",
    "intel-skylake": "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n",
    "amd-zen": "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n",
}


@pytest.mark.parametrize("family", sorted(CPUINFO))
def test_family_detection(family):
    assert pmu.cpu_family(CPUINFO[family], machine="x86_64") == family


def test_arm_and_unknown_cpus():
    assert pmu.cpu_family("CPU implementer\t: 0x41\nCPU part\t: 0xd0c\n", "aarch64") == "arm-pmuv3"
    with pytest.raises(UsageError, match="no C-AMAT event table"):
        pmu.cpu_family("vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 1\n", "x86_64")


def test_intel_tables_have_every_term_and_the_seed_names():
    hsw = pmu.events_for("intel-haswell")
    assert hsw["l1_active"].name == "CYCLE_ACTIVITY.CYCLES_LDM_PENDING"
    assert hsw["l1_pure_miss_cycles"].name == "CYCLE_ACTIVITY.STALLS_L1D_PENDING"
    assert hsw["l1_active"].config == 0x02A3 | 2 << 24
    skl = pmu.events_for("intel-skylake")
    assert skl["l1_active"].name == "CYCLE_ACTIVITY.CYCLES_MEM_ANY"
    assert set(hsw) == set(skl) == set(pmu.MISSING_REASON) | {"loads", "stores", "l2_accesses"}


@pytest.mark.parametrize("family,event", [("amd-zen", "L1 active cycles"),
                                          ("arm-pmuv3", "L1 active cycles")])
def test_families_without_pending_cycles_are_refused_by_name(family, event):
    with pytest.raises(EnvironmentProblem, match=event):
        pmu.events_for(family)


class FakeKernel:
    """perf_event_open that records the attributes and hands out pipes holding the fixture's
    reading for each member (value, time_enabled, time_running)."""

    def __init__(self, reading):
        self.reading = reading
        self.calls = []
        self.terms = list(reading)

    def __call__(self, attr, pid, cpu, group_fd, flags):
        term = self.terms[len(self.calls)]
        self.calls.append((attr, pid, cpu, group_fd, flags))
        r, w = os.pipe()
        os.write(w, struct.pack("<QQQ", *self.reading[term]))
        os.close(w)
        return r


def test_group_setup_and_scaled_reading():
    events = pmu.events_for(FIXTURE["family"])
    fake = FakeKernel(FIXTURE["reading"])
    group = pmu.CounterGroup(events, 0, fake)
    leader_fd = group.fds[0]
    try:
        counts = group.read()
    finally:
        group.close()
    for i, (attr, pid, cpu, group_fd, flags) in enumerate(fake.calls):
        ev_type, size, config, _, _, read_format, bits = struct.unpack("<IIQQQQQ", attr[:48])
        term = fake.terms[i]
        assert (ev_type, size, config) == (pmu.PERF_TYPE_RAW, 128, events[term].config)
        assert read_format == pmu.FORMAT_TOTAL_TIME_ENABLED | pmu.FORMAT_TOTAL_TIME_RUNNING
        assert bits & pmu.FLAG_INHERIT and bits & pmu.FLAG_EXCLUDE_KERNEL
        assert bool(bits & pmu.FLAG_ENABLE_ON_EXEC) == (i == 0)
        assert bool(bits & pmu.FLAG_DISABLED) == (i == 0)
        assert (pid, cpu, flags) == (0, -1, pmu.CounterGroup.PERF_FLAG_FD_CLOEXEC)
        assert group_fd == (-1 if i == 0 else leader_fd)
    assert counts["loads"] == 600_000_000  # multiplexed half the time: scaled by 2


def test_group_leader_fd_is_passed_to_members():
    events = pmu.events_for("intel-skylake")
    fake = FakeKernel(FIXTURE["reading"])
    group = pmu.CounterGroup(events, 1234, fake)
    fds = list(group.fds)
    group.close()
    assert all(call[3] == fds[0] for call in fake.calls[1:])
    assert all(call[1] == 1234 for call in fake.calls)


def test_missing_counter_at_open_is_one_line_naming_it():
    events = pmu.events_for("intel-skylake")

    def refuse(attr, pid, cpu, group_fd, flags):
        raise OSError(2, "No such file or directory")

    with pytest.raises(EnvironmentProblem) as err:
        pmu.CounterGroup(events, 0, refuse)
    assert "MEM_INST_RETIRED.ALL_LOADS" in str(err.value) and "\n" not in str(err.value)


def test_arithmetic_of_the_seed_terms():
    events = pmu.events_for(FIXTURE["family"])
    fake = FakeKernel(FIXTURE["reading"])
    group = pmu.CounterGroup(events, 0, fake)
    counts = group.read()
    group.close()
    terms = pmu.camat_from_counts(counts)
    l1, l2 = terms["levels"]
    want = FIXTURE["expected"]
    assert terms["derived"]["accesses"] == want["accesses"]
    assert l1["camat"] == pytest.approx(want["camat_l1"])
    assert l1["kappa"] == pytest.approx(want["kappa_l1"])
    assert l1["C_M"] == pytest.approx(want["C_M_l1"])
    assert l1["MR"] == pytest.approx(want["MR_l1"])
    assert l2["camat"] == pytest.approx(want["camat_l2"])
    assert terms["derived"]["pure_miss_part"] == pytest.approx(want["pure_miss_part"])
    assert terms["derived"]["hit_part"] == pytest.approx(want["hit_part"])
    assert terms["derived"]["apc"] * l1["camat"] == pytest.approx(1.0)


def test_pmu_source_on_this_machine_refuses_in_one_line():
    run = camat("--source", "pmu", "--", "true")
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("objtier camat: "), run.stderr
    assert "Traceback" not in run.stderr
