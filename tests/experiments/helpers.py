"""Helpers of the experiment tests (imported by conftest.py and the tests)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

PROGS = Path(__file__).parent / "progs"
CGROUP_V1 = Path("/sys/fs/cgroup/memory")


def machine_state() -> tuple[list[str], list[str], list[str]]:
    """(active swaps, objtier-* memory cgroups, zram devices): what an experiment may create."""
    swaps = sorted(line.split()[0] for line in Path("/proc/swaps").read_text().splitlines()[1:])
    roots = [CGROUP_V1] if CGROUP_V1.exists() else [Path("/sys/fs/cgroup")]
    cgroups = sorted(p.name for root in roots for p in root.glob("objtier-*"))
    zram = sorted(p.name for p in Path("/sys/block").glob("zram*"))
    return swaps, cgroups, zram


def objtier(*args: str, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    """Run the objtier CLI in a child Python; returns the completed process (text)."""
    return subprocess.run([sys.executable, "-m", "objtier", *args], capture_output=True,
                          text=True, timeout=timeout, **kwargs)


def default_sigint() -> None:
    """preexec_fn: SIGINT back to its default in the child, as at a terminal. A test suite
    started in the background inherits SIGINT ignored, and Python then never turns Ctrl-C
    into KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def one_line_error(stderr: str) -> bool:
    lines = [line for line in stderr.splitlines() if line.strip()]
    return len(lines) == 1 and "Traceback" not in stderr


def leftovers(before, during, after) -> list[str]:
    """What appeared between `before` and `during` (machine_state snapshots) and is still there
    `after`. Other tests on the machine may add and remove their own devices meanwhile; only
    what came and stayed while ours ran is a leak."""
    out = []
    for b, d, a in zip(before, during, after):
        out += sorted((set(d) - set(b)) & set(a))
    return out


def runtime_enforces_plans() -> bool:
    from objtier.enforcement import runtime_supports_plans

    return runtime_supports_plans()


needs_enforcement = pytest.mark.skipif(
    not runtime_enforces_plans(),
    reason="the built runtime does not enforce plans yet (libobjtier.so does not read "
           "OBJTIER_PLAN)")
