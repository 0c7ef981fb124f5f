"""bench/record_overhead.py --third-party: one real pair (plain, the whole `objtier record`) of
the third-party CG program at its driver's own size, read back from the results file it
writes. Skipped where bench/third_party/setup.sh has not installed scipy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from objtier import bench_results

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "record_overhead.py"
VENV_PYTHON = ROOT / "build" / "third-party" / "venv" / "bin" / "python"


def _venv_has(module: str) -> bool:
    return VENV_PYTHON.exists() and subprocess.run(
        [str(VENV_PYTHON), "-c", f"import {module}"], capture_output=True,
        check=False).returncode == 0


@pytest.mark.root   # record's default sampler adds a temporary zram device where no swap is on
@pytest.mark.skipif(not _venv_has("scipy"), reason="no scipy in bench/third_party's venv")
def test_third_party_pair_reads_the_program_not_the_recorder(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), "--third-party", "--short", "--only",
                           "cg", "--repeat", "1", "--results-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    [path] = tmp_path.glob("record_overhead-*-third-party-short.json")
    data = bench_results.read(path)
    assert data["command"] == "bench/record_overhead.py --third-party --short --only cg " \
                              "--repeat 1"
    assert data["question"] == "recording-cost" and data["load"].startswith("load ")
    runs = data["raw"]["cg"]
    assert len(runs["plain"]) == len(runs["recorded"]) == 1
    for arm in ("plain", "recorded"):
        run = runs[arm][0]
        assert run["timed_s"] > 0 and run["wall_s"] > run["timed_s"]
        # the readings are CG's own process (its 98 MiB matrix), not record's front end (the
        # mid-run one can fall before the matrix is built: 1.2 s short runs here)
        assert run["rss_peak_mib"] > 90 and run["huge_mib"] is not None, (arm, run)
        assert run["rss_mib"] <= run["rss_peak_mib"]
    recorded = runs["recorded"][0]
    assert recorded["samples"] > 0 and recorded["sampler"]
    cg = data["medians"]["cg"]
    assert cg["wall_ratio_pairs"] == pytest.approx(
        recorded["wall_s"] / runs["plain"][0]["wall_s"])
    assert data["figure"].startswith("recorded / plain wall, median of 1 pairs: cg ")


def test_third_party_mode_refuses_unknown_programs():
    done = subprocess.run([sys.executable, str(SCRIPT), "--third-party", "--only", "nope",
                           "--no-results"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 2
    assert "unknown program(s) nope" in done.stderr and "Traceback" not in done.stderr
