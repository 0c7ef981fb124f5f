"""Helpers for guest tests: a prepared guest, guest files, /proc/vmstat, placement output."""

from __future__ import annotations

import os
import shutil

import pytest

from objtier.errors import EnvironmentProblem
from objtier.testbed import MachineConfig, Testbed, TestbedPaths
from objtier.testbed.qemu import QEMU


def prepared_testbed(run_prefix: str, config: MachineConfig | None = None) -> Testbed:
    """A Testbed in its own run directory (<prefix>-<pid>) with its kernel and initramfs ready,
    not started; skips the test when QEMU is missing or the kernel cannot be had."""
    if not shutil.which(QEMU):
        pytest.skip(f"{QEMU} not installed (apt-get install qemu-system-x86)")
    base = TestbedPaths.default()
    tb = Testbed(TestbedPaths(base.root, run_name=f"{run_prefix}-{os.getpid()}"), config=config)
    try:
        tb.prepare()
    except EnvironmentProblem as error:
        pytest.skip(f"no guest kernel: {error}")
    return tb


def guest_read(tb: Testbed, path: str) -> str:
    rc, out, err = tb.run(["cat", path])
    assert rc == 0, err
    return out.strip()


def vmstat(tb: Testbed) -> dict[str, int]:
    text = guest_read(tb, "/proc/vmstat")
    return {k: int(v) for k, v in (line.split() for line in text.splitlines())}


def parse_placement(out: str) -> dict[str, int]:
    """`pages=N node0=A node1=B absent=C other=D` -> dict."""
    return {k: int(v) for k, v in (w.split("=") for w in out.split())}
