"""Fixtures for tests in the two-node QEMU guest (objtier.testbed).

`testbed` (session): boots one guest for the whole session in its own run directory
(.testbed/run-pytest-<pid>, so a guest started by `objtier testbed up` is left alone) and stops
it at the end; QEMU also dies with the test process (PR_SET_PDEATHSIG). Skips with the reason when
QEMU is missing or the kernel image cannot be fetched.
`placement_prog` (session): tests/testbed/progs/placement.c built on the host into the run
directory, which the guest sees read-write at the same path.
`guest_knobs`: restores kernel.numa_balancing and demotion_enabled in the guest after a test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from objtier.errors import EnvironmentProblem
from objtier.testbed import Testbed, TestbedPaths
from objtier.testbed.qemu import QEMU

from .guest_helpers import guest_read

PROGS = Path(__file__).parent / "progs"


@pytest.fixture(scope="session")
def testbed():
    if not shutil.which(QEMU):
        pytest.skip(f"{QEMU} not installed (apt-get install qemu-system-x86)")
    base = TestbedPaths.default()
    paths = TestbedPaths(base.root, run_name=f"run-pytest-{os.getpid()}")
    tb = Testbed(paths)
    try:
        tb.prepare()
    except EnvironmentProblem as error:
        pytest.skip(f"no guest kernel: {error}")
    tb.start()
    try:
        yield tb
    finally:
        tb.stop()
        shutil.rmtree(paths.run, ignore_errors=True)


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
