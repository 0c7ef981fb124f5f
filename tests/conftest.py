"""Shared fixtures and markers.

Markers (declared in pyproject.toml): root, guest, pmu, slow, heavy. Tests marked `root` skip with a
reason when not run as root; `pmu` tests skip when perf reports no hardware events; `guest` tests
are skipped by the testbed fixtures when QEMU or the guest kernel cannot be had. `heavy` tests
(every `guest` test is one: each boots or drives the QEMU guest) are left out of `make test`
(`-m "not heavy"`) and run by `make test-heavy`; CI runs both.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "test-artifacts"


def has_hardware_pmu() -> bool:
    perf = shutil.which("perf")
    if not perf:
        return False
    run = subprocess.run([perf, "stat", "-e", "instructions", "-x,", "true"],
                         capture_output=True, text=True)
    return run.returncode == 0 and "not supported" not in run.stderr and "<not" not in run.stderr


@pytest.hookimpl(tryfirst=True)   # before -m selects: the heavy mark must be there by then
def pytest_collection_modifyitems(config, items):
    is_root = os.geteuid() == 0
    pmu = None
    for item in items:
        if "guest" in item.keywords and "heavy" not in item.keywords:
            item.add_marker(pytest.mark.heavy)
        if "root" in item.keywords and not is_root:
            item.add_marker(pytest.mark.skip(reason="needs root (cgroups, zram, sysctls)"))
        if "pmu" in item.keywords:
            if pmu is None:
                pmu = has_hardware_pmu()
            if not pmu:
                item.add_marker(pytest.mark.skip(
                    reason="no hardware PMU: `perf stat -e instructions` is not supported here"))


@pytest.fixture
def compile_c(tmp_path):
    """Compile a C source string into an executable; returns its path.

    compile_c(source, name="prog", flags=("-O1",), pie=True)
    """

    def _compile(source: str, name: str = "prog", flags: tuple[str, ...] = ("-O1", "-g"),
                 pie: bool = True, compiler: str = "gcc") -> Path:
        src = tmp_path / f"{name}.c"
        src.write_text(source)
        exe = tmp_path / name
        cmd = [compiler, "-std=gnu11", *flags, "-fno-omit-frame-pointer", "-pthread",
               "-pie" if pie else "-no-pie", "-fPIE" if pie else "-fno-pie",
               "-o", str(exe), str(src)]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            raise AssertionError(f"compile failed: {' '.join(cmd)}\n{run.stderr}")
        return exe

    return _compile


@pytest.fixture
def artifacts_dir(request) -> Path:
    """A per-test folder under test-artifacts/ that survives the run (screenshots, reports)."""
    path = ARTIFACTS / request.node.name
    path.mkdir(parents=True, exist_ok=True)
    return path
