"""Fixtures for tests in the two-node QEMU guest (objtier.testbed).

`testbed` (session): boots one guest for the whole session in its own run directory
(.testbed/run-pytest-<pid>, so a guest started by `objtier testbed up` is left alone) and stops
it at the end, keeping the last guest console as test-artifacts/testbed/session.console.log;
QEMU also dies with the test process (PR_SET_PDEATHSIG). Skips with the reason when
QEMU is missing or the kernel image cannot be fetched.
`placement_prog` (session): tests/testbed/progs/placement.c built on the host into the run
directory, which the guest sees read-write at the same path.
`guest_knobs`: restores kernel.numa_balancing and demotion_enabled in the guest after a test.
`guest_survives` (autouse): after a test that used the guest, fails it (at teardown) when the guest
is gone, keeps the guest console as test-artifacts/testbed/<test>.console.log and boots a new
guest, so one guest death is one reported failure with its cause, not a cascade.
A test that failed because the guest died (and only then) is run once more on the new guest
(pytest-rerunfailures); the death and the rerun show in the report ("R", "RERUN").
"""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from .guest_helpers import guest_read, prepared_testbed

PROGS = Path(__file__).parent / "progs"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "testbed"


class GuestDied(UserWarning):
    """The test machine's QEMU exited under a test (kernel panic, QEMU crash, host OOM kill)."""


# what a failure says when the guest died under it (objtier.testbed.machine, guest_survives)
GUEST_DEATH = [r"the guest stopped during", r"the guest is gone", r"the guest died during"]


def pytest_collection_modifyitems(items):
    for item in items:
        if "testbed" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.flaky(reruns=1, only_rerun=GUEST_DEATH))


@pytest.fixture(scope="session")
def testbed():
    tb = prepared_testbed("run-pytest")
    tb.start()
    try:
        yield tb
    finally:
        tb.stop()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / "session.console.log").write_text(tb.console_tail(2000) + "\n")
        shutil.rmtree(tb.paths.run, ignore_errors=True)


@pytest.fixture(autouse=True)
def guest_survives(request):
    yield
    if "testbed" not in request.fixturenames:
        return
    try:
        tb = request.getfixturevalue("testbed")
    except pytest.skip.Exception:    # no QEMU or no kernel: the test was skipped, nothing ran
        return
    if tb.is_running():
        return
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    kept = ARTIFACTS / f"{request.node.name}.console.log"
    kept.write_text(tb.console_tail(400) + "\n")
    why = tb.why_not_running()
    # a warning, so the cause is in the run's summary even when the rerun passes
    warnings.warn(f"the guest died during {request.node.nodeid}: {why}", GuestDied)
    tb.stop()
    tb.start()
    pytest.fail(f"the guest died during this test ({why}); console kept in {kept}",
                pytrace=False)


@pytest.fixture(scope="session")
def placement_prog(testbed) -> str:
    out = testbed.paths.run / "bin" / "placement"
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["gcc", "-O1", "-std=gnu11", "-o", str(out), str(PROGS / "placement.c")],
                   check=True)
    return str(out)


@pytest.fixture
def guest_knobs(testbed):
    saved = {
        "/proc/sys/kernel/numa_balancing": guest_read(testbed, "/proc/sys/kernel/numa_balancing"),
        "/sys/kernel/mm/numa/demotion_enabled": guest_read(testbed, "/sys/kernel/mm/numa/demotion_enabled"),
    }
    yield
    for path, value in saved.items():
        testbed.run(f"echo {value} > {path}")
