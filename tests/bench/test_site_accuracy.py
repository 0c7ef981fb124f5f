"""bench/site_accuracy.py and its programs: the C++ maps program builds and runs, the CPython
workload runs under the system's python3, bad options are one line; the whole benchmark at
small sizes (heavy, root: the pageout sampler's swap device) records, reads its recordings
back and scores them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
SCRIPT = BENCH / "site_accuracy.py"


@pytest.mark.skipif(not shutil.which("g++"), reason="needs g++")
def test_maps_program_builds_and_runs(tmp_path):
    exe = tmp_path / "site_maps"
    subprocess.run(["g++", "-O2", "-o", str(exe), str(BENCH / "site_maps.cc")], check=True)
    run = subprocess.run([str(exe), "2", "500"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("maps=6 nodes=500 rounds=2 sum=")
    bad = subprocess.run([str(exe), "1", "0"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "usage" in bad.stderr


def test_python_workload_runs_under_the_system_python():
    python = shutil.which("python3.11") or shutil.which("python3")
    run = subprocess.run([python, str(BENCH / "site_dicts.py"), "100", "3"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    # rows read 3 times: items i & 0xff at every position
    assert run.stdout.strip() == f"rows=100 rounds=3 strings=100 sum={3 * sum(range(100))}"


@pytest.mark.parametrize("args, message", [
    (["--only", "maps,nothing"], "--only maps,nothing: expected some of"),
    (["--repeats", "0"], "--repeats must be at least 1"),
    (["--map-rounds", "x"], "x: expected a whole number"),
])
def test_bad_options_are_one_line(args, message):
    run = subprocess.run([sys.executable, str(SCRIPT), *args, "--no-results"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert run.stderr.strip().splitlines() == [run.stderr.strip()] and message in run.stderr


def test_help():
    run = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0 and "--exact-rounds" in run.stdout


@pytest.mark.heavy
@pytest.mark.root
@pytest.mark.skipif(not (shutil.which("g++") and shutil.which("clang++-16")),
                    reason="needs g++ and clang++-16")
def test_small_run_scores_every_part(tmp_path):
    run = subprocess.run([sys.executable, str(SCRIPT), "--repeats", "1", "--map-rounds", "3",
                          "--exact-rounds", "1", "--passes", "50", "--py-rounds", "20",
                          "--results-dir", str(tmp_path)], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-1500:]
    assert "[1] hotcold" in run.stdout and "[1] python" in run.stdout
    assert "loads+stores per byte map 0" in run.stdout and "[1] maps" in run.stdout
    assert sorted(p.name.rsplit("-", 1)[-1] for p in tmp_path.glob("*.json")) == [
        "hotcold.json", "maps.json", "python.json"]
