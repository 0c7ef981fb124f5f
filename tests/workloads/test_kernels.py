"""Every workload verifies its own result on small inputs and prints exactly one FOM line."""

from __future__ import annotations

import pytest

from objtier.workloads import parse_fom

# name, small arguments, expected FOM unit
SMALL_RUNS = [
    ("bfs", ["-g", "10", "-k", "8", "-n", "4", "-v"], "MTEPS"),
    ("bfs", ["-u", "11", "-k", "4", "-n", "3", "-t", "1", "-v"], "MTEPS"),
    ("bc", ["-g", "9", "-k", "8", "-i", "6", "-n", "2"], "MTEPS"),         # brute force (n <= 1024)
    ("bc", ["-u", "10", "-k", "3", "-i", "4", "-t", "2"], "MTEPS"),         # disconnected parts
    ("bc", ["-g", "11", "-k", "4", "-i", "3", "-v"], "MTEPS"),             # forced brute force
    ("cc", ["-g", "11", "-k", "4", "-n", "3", "-v"], "MEdges/s"),
    ("cc", ["-u", "12", "-k", "1", "-n", "2", "-v", "-t", "2"], "MEdges/s"),  # many components
    ("stream", ["-s", "100000", "-n", "3"], "MB/s"),
    ("ptrchase", ["-s", "2M", "-n", "100000", "-t", "2"], "deref/s"),
    ("ptrchase", ["-s", "1M", "-e", "256", "-n", "50000", "-t", "2", "-r"], "deref/s"),
    # 2^18 entries: two threads' racing updates stay well under HPCC's 1 % (2^16 failed once)
    ("gups", ["-l", "18", "-t", "2"], "GUP/s"),
    ("kmeans", ["-n", "20000", "-d", "8", "-k", "4", "-i", "4", "-t", "2"], "Mpoints/s"),
    ("kmeans", ["-n", "20000", "-d", "8", "-k", "4", "-i", "4", "-t", "2", "--padded"],
     "Mpoints/s"),
]


@pytest.mark.parametrize("name, args, unit", SMALL_RUNS,
                         ids=[f"{n}-{'_'.join(a)}" for n, a, _ in SMALL_RUNS])
def test_small_run_verifies(wl, name, args, unit):
    run = wl(name, *args)
    assert run.returncode == 0, run.stderr
    assert "verification: passed" in run.stdout
    assert run.stdout.count("FOM ") == 1
    fom = parse_fom(run.stdout)
    assert fom.name == name and fom.unit == unit
    assert fom.value > 0 and fom.seconds > 0


def test_bc_small_graph_uses_brute_force(wl):
    run = wl("bc", "-g", "8", "-i", "2")
    assert run.returncode == 0, run.stderr
    assert "brute force" in run.stdout


def test_kmeans_padded_rows_are_cache_lines(wl):
    plain = wl("kmeans", "-n", "5000", "-k", "5", "-i", "2")
    padded = wl("kmeans", "-n", "5000", "-k", "5", "-i", "2", "--padded")
    assert "unpadded counters (row 5 ints)" in plain.stdout
    assert "padded counters (row 16 ints)" in padded.stdout


def test_ptrchase_regions_per_thread(wl):
    run = wl("ptrchase", "-s", "1M", "-n", "1000", "-t", "2", "-r")
    assert run.returncode == 0, run.stderr
    assert "2 threads, one cycle per thread region" in run.stdout
    assert "8192 elements of 128 bytes" in run.stdout


def test_gups_reports_hpcc_error_count(wl):
    run = wl("gups", "-l", "12", "-t", "1")
    assert run.returncode == 0, run.stderr
    # One thread cannot race with itself: the replay restores the table exactly.
    assert "verification: passed (0 of 4096 entries wrong" in run.stdout


def test_gups_takes_a_smaller_number_of_updates(wl):
    run = wl("gups", "-l", "14", "-u", "1000", "-t", "1")
    assert run.returncode == 0, run.stderr
    assert "(0.1 MiB), 1000 updates" in run.stdout
    assert "verification: passed (0 of 16384 entries wrong" in run.stdout
    bad = wl("gups", "-l", "14", "-u", "0")
    assert bad.returncode == 2 and "-u must be in [1," in bad.stderr and bad.stdout == ""


@pytest.mark.parametrize("name", ["graphgen", "bfs", "bc", "cc", "stream", "ptrchase", "gups",
                                  "kmeans"])
def test_help_exits_zero(wl, name):
    run = wl(name, "-h")
    assert run.returncode == 0
    assert run.stdout.startswith(f"usage: {name}")
    assert "FOM" not in run.stdout


BAD_COMMAND_LINES = [
    ("bfs", ["-Z"]), ("bfs", ["-g"]), ("bfs", ["-g", "abc"]), ("bfs", ["-g", "40"]),
    ("bfs", ["-g", "8", "-f", "x.csr"]), ("bfs", ["-n", "0", "-g", "8"]), ("bfs", ["extra"]),
    ("bc", ["-i", "-3"]), ("bc", ["--bogus"]), ("cc", ["-k", "0"]), ("cc", ["-t", "x"]),
    ("graphgen", ["-g", "8"]), ("graphgen", ["-o", "x.csr"]), ("stream", ["-s", "10"]),
    ("stream", ["-n", "1"]), ("ptrchase", ["-e", "100"]), ("ptrchase", ["-e", "160"]),
    ("ptrchase", ["-s", "12Q"]), ("ptrchase", ["-s", "8K", "-t", "64"]), ("gups", ["-l", "99"]),
    ("kmeans", ["--pad=3"]), ("kmeans", ["-k", "10", "-n", "5"]), ("kmeans", ["-d"]),
]


@pytest.mark.parametrize("name, args", BAD_COMMAND_LINES,
                         ids=[f"{n}-{'_'.join(a)}" for n, a in BAD_COMMAND_LINES])
def test_bad_options_fail_with_one_line(wl, tmp_path, name, args):
    run = wl(name, *args, cwd=tmp_path)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{name}: "), run.stderr
    assert "FOM" not in run.stdout
