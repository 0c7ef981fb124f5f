"""The third-party suite's DuckDB TPC-H and Redis drivers (bench/third_party/programs/) at tiny
sizes: each prints one FOM line that objtier's reader parses, exits 0, and exits 3 when its
result check fails (--perturb changes the data under it). Skipped where DuckDB's tpch
extension (bench/third_party/setup.sh) or Debian's redis-server / redis-benchmark are
missing."""

from __future__ import annotations

import importlib.util
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from objtier.workloads import parse_fom

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "bench" / "third_party" / "programs"
VENV_PYTHON = ROOT / "build" / "third-party" / "venv" / "bin" / "python"


def _venv_has(module: str) -> bool:
    if not VENV_PYTHON.exists():
        return False
    return subprocess.run([str(VENV_PYTHON), "-c", f"import {module}"], capture_output=True,
                          check=False).returncode == 0


needs_tpch = pytest.mark.skipif(not _venv_has("duckdb_extension_tpch"),
                                reason="no DuckDB tpch extension (bench/third_party/setup.sh)")
needs_redis = pytest.mark.skipif(
    not (shutil.which("redis-server") and shutil.which("redis-benchmark")),
    reason="no redis-server / redis-benchmark (apt-get install redis-server redis-tools)")


def run(python: str, script: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, str(PROGRAMS / script), *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd, check=False)


TPCH_TINY = ("--sf", "0.01", "--queries", "1,3,6,17", "--reps", "2")


@needs_tpch
def test_duckdb_tpch_fom_and_cache(tmp_path):
    cache = tmp_path / "tpch.duckdb"
    first = run(str(VENV_PYTHON), "duckdb_tpch.py", *TPCH_TINY, "--cache", str(cache),
                cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    fom = parse_fom(first.stdout)
    assert (fom.name, fom.unit) == ("duckdb", "q/s")
    assert fom.value > 0 and fom.seconds > 0
    # 4 queries x 2 repetitions in the timed region
    # (the printed value and time are rounded: a short run leaves a few per cent)
    assert fom.value * fom.seconds == pytest.approx(8, rel=0.05)
    assert "verification: passed" in first.stdout
    assert "(no official answers" not in first.stdout      # sf 0.01 has them: checked
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    again = run(str(VENV_PYTHON), "duckdb_tpch.py", *TPCH_TINY, "--cache", str(cache),
                cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert f"copied from {cache}" in again.stdout
    assert parse_fom(again.stdout).name == "duckdb"
    assert not list(tmp_path.glob(".tmp*")), "DuckDB spilled to disk"


@needs_tpch
def test_duckdb_tpch_failed_check_exits_3(tmp_path):
    done = run(str(VENV_PYTHON), "duckdb_tpch.py", *TPCH_TINY, "--perturb", cwd=tmp_path)
    assert done.returncode == 3
    assert "verification failed" in done.stderr
    assert "repetition 2 returned other rows" in done.stderr
    assert "FOM" not in done.stdout


def test_duckdb_tpch_bad_input_is_one_line(tmp_path):
    done = run(sys.executable, "duckdb_tpch.py", "--queries", "0,23", cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr


REDIS_TINY = ("--keys", "5000", "--size", "64", "--requests", "20000", "--clients", "2")


@needs_redis
def test_redis_fom_latency_and_cleanup(tmp_path):
    done = run(sys.executable, "redis_bench.py", *REDIS_TINY, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    fom = parse_fom(done.stdout)
    assert (fom.name, fom.unit) == ("redis", "req/s")
    assert fom.value > 0 and fom.seconds > 0
    latency = next(line for line in done.stdout.splitlines() if line.startswith("latency"))
    fields = dict(part.split("=") for part in latency.split(": ", 1)[1].split())
    assert float(fields["p50"]) <= float(fields["p99"]) <= float(fields["max"])
    assert "5000 keys" in done.stdout and "verification: passed" in done.stdout
    # the server was a child and is gone: no redis-server holds a socket of this run
    left = subprocess.run(["pgrep", "-f", "redis-bench-.*/redis.sock"], capture_output=True,
                          text=True, check=False)
    assert left.stdout.strip() == ""


@needs_redis
def test_redis_failed_check_exits_3(tmp_path):
    done = run(sys.executable, "redis_bench.py", *REDIS_TINY, "--perturb", cwd=tmp_path)
    assert done.returncode == 3
    assert "verification failed" in done.stderr and "4999 keys" in done.stderr
    assert "FOM" not in done.stdout


def test_suite_registers_both():
    spec = importlib.util.spec_from_file_location("compare_suite",
                                                  ROOT / "bench" / "compare_suite.py")
    suite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(suite)
    for name in ("duckdb", "redis"):
        script, _args, _module = suite.PROGRAMS[name]
        assert (PROGRAMS / script).is_file()
    assert "--follow-forks" in suite.COMPARE_OPTIONS["redis"]
    have = bool(shutil.which("redis-server") and shutil.which("redis-benchmark"))
    assert (suite.missing_needs("redis") is None) == have
