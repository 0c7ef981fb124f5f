"""`objtier simulate` on each kind of real recording: a table of real figures, or one line and
exit 2 saying what to record; never a table of zeros.

The recordings are made by the real CLI (`objtier cc`, `objtier record`) of a small C program
that writes an 8 MiB array and reads it back four times (1,048,576 stores, 4,194,304 loads
of it)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest

from objtier.cli import main

OBJTIER = [sys.executable, "-m", "objtier"]
needs_clang = pytest.mark.skipif(not (shutil.which("clang-16") or shutil.which("clang")),
                                 reason="clang-16 is not installed")

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
int main(void) {
    size_t n = 1 << 20;
    long *a = malloc(n * sizeof *a), s = 0;
    if (!a) return 1;
    for (size_t i = 0; i < n; i++) a[i] = (long)i;
    for (int r = 0; r < 4; r++)
        for (size_t i = 0; i < n; i++) s += a[i];
    printf("%ld\n", s);
    free(a);
    return 0;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    d = tmp_path_factory.mktemp("prog")
    (d / "walk.c").write_text(PROGRAM)
    run = subprocess.run([*OBJTIER, "cc", "-O1", "-fno-vectorize", "-fno-unroll-loops", "-o",
                          str(d / "walk"), str(d / "walk.c")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return d / "walk"


def record(tmp_path, name: str, *options: str, command: list[str]):
    out = tmp_path / f"{name}.otr"
    run = subprocess.run([*OBJTIER, "record", "-o", str(out), *options, "--", *command],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return out


def simulate(path, capsys, *extra: str):
    code = main(["simulate", str(path), "--fast", "4M", "--policy",
                 "first-touch,numab2,object,oracle", *extra])
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    return lines[0]


@needs_clang
def test_exact_counts_only_is_one_line_saying_what_to_record(program, tmp_path, capsys):
    """Exact counts without --trace-limit: no address to replay. Before: a table of zeros for
    every policy, exit 0."""
    path = record(tmp_path, "counts", "--sampler", "trace", command=[str(program)])
    code, out, err = simulate(path, capsys)
    assert code == 2 and out == ""
    line = one_line(err)
    assert "--trace-limit" in line and "4,194,304 loads" in line, line


def test_zero_samples_is_one_line(tmp_path, capsys):
    """A sampled recording of a program that ran too briefly to be sampled."""
    path = record(tmp_path, "empty", "--sampler", "fault", command=["/bin/true"])
    code, out, err = simulate(path, capsys)
    assert code == 2 and out == ""
    line = one_line(err)
    assert "0 access samples" in line and "sampler fault" in line, line


@needs_clang
def test_empty_address_trace_is_one_line(program, tmp_path, capsys):
    """--trace-limit given, but the array is below --min-size: the address trace (tracked
    objects only) is empty."""
    path = record(tmp_path, "untracked", "--sampler", "trace", "--trace-limit", "200000",
                  "--min-size", "64M", command=[str(program)])
    code, out, err = simulate(path, capsys)
    assert code == 2 and out == ""
    line = one_line(err)
    assert "address trace (--trace-limit 200,000) is empty" in line and "--min-size" in line


def test_samples_in_no_tracked_object_is_one_line(tmp_path, capsys):
    """Samples (as a PMU sampler writes them) that all miss the one tracked object: no policy
    has anything to place."""
    from .conftest import MIB, write_trace

    n = 1000
    t = 1_000_000_000 + 10_000_000 + np.arange(n, dtype=np.uint64) * 1000
    path = write_trace(tmp_path / "stack.otr", [(1_000_000_000, 0x7f0000000000, 8 * MIB, 1)],
                       {"time_ns": t, "addr": np.full(n, 0x7ffd00000000, dtype=np.uint64)},
                       source=2)   # perf-pebs
    code, out, err = simulate(path, capsys)
    assert code == 2 and out == ""
    assert "none of the recording's 1,000 samples falls in one of its 1 tracked" in \
        one_line(err)


@needs_clang
def test_address_trace_gives_a_table_of_its_accesses(program, tmp_path, capsys, monkeypatch):
    """An exact recording with --trace-limit: every policy's fast + slow accesses are the
    traced accesses of the array, none is zero."""
    import csv

    path = record(tmp_path, "traced", "--sampler", "trace", "--trace-limit", "200000",
                  command=[str(program)])
    out_dir = tmp_path / "sim"
    code, out, err = simulate(path, capsys, "-o", str(out_dir))
    assert code == 0, err
    rows = list(csv.DictReader(open(out_dir / "simulate.csv")))
    assert [r["policy"] for r in rows] == ["first-touch", "numab2", "object", "oracle"]
    from objtier.trace import open_trace

    trace = open_trace(path)
    assert trace.samples.num_rows == 200_000
    for r in rows:
        assert r["basis"] == "exact"
        touched = int(r["fast_accesses"]) + int(r["slow_accesses"])
        assert touched + int(r["other_accesses"]) == 200_000, r
        assert touched > 0, r


def test_fault_sampled_recording_gives_a_table(tmp_path, capsys):
    """A sampled recording (the fault sampler) of a program that works for about a second:
    a table of estimates with accesses in it."""
    import csv

    src = tmp_path / "loop.c"
    src.write_text(r"""
#include <stdlib.h>
#include <time.h>
int main(void) {
    size_t n = 16 << 20; volatile char *a = malloc(n); struct timespec t0, t;
    if (!a) return 1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do { for (size_t i = 0; i < n; i += 4096) a[i]++; clock_gettime(CLOCK_MONOTONIC, &t); }
    while (t.tv_sec - t0.tv_sec < 1);
    return 0;
}
""")
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang-16")
    if cc is None:
        pytest.skip("no C compiler")
    subprocess.run([cc, "-O1", "-o", str(tmp_path / "loop"), str(src)], check=True)
    # a high rate: on a loaded machine the scanner may arm little in one second
    path = record(tmp_path, "fault", "--sampler", "fault", "--rate", "20000",
                  command=[str(tmp_path / "loop")])
    out_dir = tmp_path / "sim"
    code, out, err = simulate(path, capsys, "-o", str(out_dir))
    assert code == 0, err
    rows = list(csv.DictReader(open(out_dir / "simulate.csv")))
    assert all(r["basis"] == "estimate" for r in rows)
    assert all(int(r["fast_accesses"]) + int(r["slow_accesses"]) > 0 for r in rows), rows
