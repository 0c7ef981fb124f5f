"""The third-party suite's DuckDB TPC-H, Redis, networkx and SQLite drivers
(bench/third_party/programs/) at tiny sizes: each prints one FOM line that objtier's reader
parses, exits 0, and exits 3 when its result check fails (--perturb changes the data under
it). The SQLite program is recorded once to show that its database is small blocks of one
site, not objects. Skipped where DuckDB's tpch extension or networkx
(bench/third_party/setup.sh) or Debian's redis-server / redis-benchmark are missing."""

from __future__ import annotations

import importlib.util
import re
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


def assert_count(fom, count: int) -> None:
    """rate x time is the count done, within 5 % and the rounding of time to 1 ms (a run of
    a few ms here would otherwise miss by more than 5 % on the rounding alone)."""
    assert abs(fom.value * fom.seconds - count) <= 0.05 * count + fom.value * 0.0005, (fom, count)


def _venv_has(module: str) -> bool:
    if not VENV_PYTHON.exists():
        return False
    return subprocess.run([str(VENV_PYTHON), "-c", f"import {module}"], capture_output=True,
                          check=False).returncode == 0


needs_tpch = pytest.mark.skipif(not _venv_has("duckdb_extension_tpch"),
                                reason="no DuckDB tpch extension (bench/third_party/setup.sh)")
needs_networkx = pytest.mark.skipif(not _venv_has("networkx"),
                                    reason="no networkx in the venv (bench/third_party/setup.sh)")
needs_sqlite = pytest.mark.skipif(not _venv_has("sqlite3"),
                                  reason="the venv's Python has no sqlite3 module")
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
    assert_count(fom, 8)
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


SMALLGRAPH_TINY = ("--vertices", "2000", "--edges", "8000", "--searches", "4")


@needs_networkx
def test_smallgraph_fom_and_check(tmp_path):
    done = run(str(VENV_PYTHON), "graph_networkx.py", *SMALLGRAPH_TINY, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    fom = parse_fom(done.stdout)
    assert (fom.name, fom.unit) == ("smallgraph", "bfs/s")
    assert fom.value > 0 and fom.seconds > 0
    assert_count(fom, 4)
    assert "2000 vertices, 8000 edges" in done.stdout
    assert "verification: passed" in done.stdout


@needs_networkx
def test_smallgraph_failed_check_exits_3(tmp_path):
    done = run(str(VENV_PYTHON), "graph_networkx.py", *SMALLGRAPH_TINY, "--perturb",
               cwd=tmp_path)
    assert done.returncode == 3
    assert "verification failed" in done.stderr and "reached 1 vertices" in done.stderr
    assert "FOM" not in done.stdout


@needs_networkx
def test_smallgraph_bad_input_is_one_line(tmp_path):
    done = run(str(VENV_PYTHON), "graph_networkx.py", "--vertices", "10", "--edges", "46",
               cwd=tmp_path)
    assert done.returncode == 2
    assert "do not fit" in done.stderr and "Traceback" not in done.stderr


SQLITE_TINY = ("--rows", "5000", "--lookups", "2000", "--scans", "20", "--width", "100")


@needs_sqlite
def test_sqlite_fom_and_check(tmp_path):
    done = run(str(VENV_PYTHON), "sqlite_btree.py", *SQLITE_TINY, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    fom = parse_fom(done.stdout)
    assert (fom.name, fom.unit) == ("sqlite", "q/s")
    assert fom.value > 0 and fom.seconds > 0
    assert_count(fom, 2020)
    assert "5000 rows" in done.stdout and "verification: passed" in done.stdout


@needs_sqlite
def test_sqlite_failed_check_exits_3(tmp_path):
    done = run(str(VENV_PYTHON), "sqlite_btree.py", *SQLITE_TINY, "--perturb", cwd=tmp_path)
    assert done.returncode == 3
    assert "verification failed" in done.stderr and "returned None" in done.stderr
    assert "FOM" not in done.stdout


def test_sqlite_bad_input_is_one_line(tmp_path):
    done = run(sys.executable, "sqlite_btree.py", "--rows", "10", "--width", "11", cwd=tmp_path)
    assert done.returncode == 2
    assert "--width 11 is more than --rows 10" in done.stderr
    assert "Traceback" not in done.stderr


@needs_sqlite
def test_sqlite_database_is_one_small_block_site(tmp_path):
    """Recorded (no access sampler: nothing on the machine changes), the in-memory database is
    SQLite's page cache: its pages are blocks below --min-size, so they are no object, and the
    largest site is sqlite3Malloc's, its estimated peak near the database's size."""
    from objtier.analysis.coverage import coverage
    from objtier.analysis.sites import site_table
    from objtier.trace.reader import open_trace

    out = tmp_path / "run.otr"
    done = subprocess.run(
        [sys.executable, "-m", "objtier", "record", "-q", "--sampler", "none", "-o", str(out),
         "--", str(VENV_PYTHON), str(PROGRAMS / "sqlite_btree.py"), "--rows", "80000",
         "--lookups", "2000", "--scans", "10"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    match = re.search(r"(\d+) pages of (\d+) B", done.stdout)
    assert match, done.stdout
    database = int(match[1]) * int(match[2])
    trace = open_trace(out)
    top = site_table(trace).to_pylist()[0]
    assert "sqlite3" in top["label"], top["label"]
    assert 4096 < top["mean_size"] < 128 * 1024          # a page and its header per block
    # an estimate: about 1 in 64 blocks sampled, some 80 of them here
    assert 0.5 * database < top["est_peak_bytes"] < 1.6 * database
    assert coverage(trace).objects_bytes < top["est_peak_bytes"]
