"""Busy-kdamond detection (objtier.tiers.damon_free): the rule on probe outputs, and the real
host, where a DAMON context of the machine's runs (it is read, never touched)."""
from __future__ import annotations

import subprocess

import pytest

from objtier.errors import EnvironmentProblem
from objtier.tiers.damon_free import (PROBE_SCRIPT, busy_reason_from_text, damon_busy_reason,
                                      probe_text, require_free_damon)


def test_free_when_nothing_runs():
    assert busy_reason_from_text("sysfs 0 off\nmodule damon_reclaim N\n") is None
    assert busy_reason_from_text("") is None
    require_free_damon(None)


@pytest.mark.parametrize("line, names", [
    ("sysfs 1 on", "kdamond 1 of the DAMON sysfs interface is on"),
    ("module damon_lru_sort Y", "damon_lru_sort is enabled"),
    ("thread 76 kdamond.0", "thread kdamond.0 (pid 76) runs"),
])
def test_each_sign_makes_it_busy(line, names):
    reason = busy_reason_from_text("sysfs 0 off\n" + line + "\n")
    assert reason is not None and names in reason
    assert "\n" not in reason and reason.endswith("refusing")
    with pytest.raises(EnvironmentProblem, match="DAMON is busy"):
        require_free_damon(reason)


def test_shell_probe_and_python_probe_agree_on_this_machine():
    """The script the guest runs and the Python reader see the same kdamonds here."""
    shell = subprocess.run(["sh", "-c", PROBE_SCRIPT], capture_output=True, text=True,
                           check=True).stdout
    assert sorted(shell.split("\n")) == sorted(probe_text().split("\n"))


def test_busy_kdamond_on_this_host_is_refused():
    """On a machine whose own DAMON context runs (as on the development host), the DAMON arm
    refuses with one line naming the kdamond; the context is only read."""
    threads = [line for line in probe_text().splitlines() if line.startswith("thread ")]
    if not threads:
        pytest.skip("no kdamond runs on this machine: nothing busy to detect")
    before = probe_text()
    reason = damon_busy_reason()
    assert reason is not None and "kdamond" in reason and "\n" not in reason
    pid = threads[0].split()[1]
    assert f"pid {pid}" in reason
    with pytest.raises(EnvironmentProblem):
        require_free_damon(reason)
    assert probe_text() == before       # nothing was stopped or reconfigured
