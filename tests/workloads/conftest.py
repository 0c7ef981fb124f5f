"""Fixtures of the workload tests: the installed workload binaries (built by `make build`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from objtier import native
from objtier.errors import EnvironmentProblem
from objtier.workloads import WORKLOADS


@pytest.fixture(scope="session")
def workload_bin() -> Path:
    """Directory of the installed workload binaries; fails clearly when they are not built."""
    try:
        return native.binary("bfs").parent
    except EnvironmentProblem as error:
        pytest.fail(f"{error}", pytrace=False)


@pytest.fixture(scope="session")
def wl(workload_bin):
    """wl(name, *args, timeout=120, cwd=None): run an installed workload, capture its output."""

    def _run(name: str, *args, timeout: float = 120, cwd=None) -> subprocess.CompletedProcess:
        assert name in WORKLOADS
        return subprocess.run([str(workload_bin / name), *map(str, args)], capture_output=True,
                              text=True, timeout=timeout, cwd=cwd)

    return _run
