"""`objtier bench`: list, run with passed-through arguments, exit statuses."""

from __future__ import annotations

import subprocess
import sys

from objtier.workloads import WORKLOADS, parse_fom


def objtier(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "objtier", *args], capture_output=True, text=True,
                          timeout=120)


def test_list_names_every_workload():
    run = objtier("bench", "--list")
    assert run.returncode == 0
    listed = [line.split()[0] for line in run.stdout.splitlines()]
    assert listed == list(WORKLOADS)


def test_runs_workload_with_its_arguments(workload_bin):
    run = objtier("bench", "gups", "-l", "12", "-t", "1")
    assert run.returncode == 0, run.stderr
    assert "table 2^12 words" in run.stdout
    assert parse_fom(run.stdout).name == "gups"


def test_workload_help_passes_through(workload_bin):
    run = objtier("bench", "kmeans", "--help")
    assert run.returncode == 0 and run.stdout.startswith("usage: kmeans")


def test_workload_exit_status_is_returned(workload_bin):
    run = objtier("bench", "stream", "-s", "5")
    assert run.returncode == 2
    assert run.stderr.strip().startswith("stream: -s must be in")


def test_unknown_workload_is_one_line_error():
    run = objtier("bench", "nosuch")
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "objtier bench: unknown workload 'nosuch' (known: " + ", ".join(WORKLOADS) + ")"]
    assert "Traceback" not in run.stderr


def test_missing_name_is_one_line_error():
    run = objtier("bench")
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1
