"""`objtier import-perf perf.data --objects run.otr`: a perf.data recorded by the real perf around
a real `objtier record` run is stored in that recording as its samples; what cannot be
imported is refused with one line and a non-zero exit, leaving the recording as it was."""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys

import numpy as np
import pytest

from objtier.trace import format as F
from objtier.trace import open_trace

from .helpers import assert_one_line_error, objtier

pytestmark = pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
    size_t n = 24u << 20;
    char *a = malloc(n);
    memset(a, 7, n);
    long s = 0;
    for (size_t i = 0; i < n; i += 4096) s += a[i];
    printf("%ld\n", s);
    return 0;
}
"""


def perf_record(data, *command, clock: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["perf", "record", "-q", "-d", *(["-k", "CLOCK_MONOTONIC"] if clock
                                                          else []),
                           "-c", "1", "-e", "page-faults", "-o", str(data), "--",
                           *map(str, command)], capture_output=True, text=True, timeout=300)


@pytest.fixture
def recorded(compile_c, tmp_path):
    """(recording, perf.data) of one run: perf record around objtier record."""
    program = compile_c(PROGRAM, "touch24")
    data, out = tmp_path / "perf.data", tmp_path / "run.otr"
    run = perf_record(data, sys.executable, "-m", "objtier", "record", "-q", "--sampler", "none",
                      "-o", out, "--", program)
    if run.returncode != 0 or not data.exists():
        pytest.skip(f"perf record is not permitted here: {run.stderr.strip()[:200]}")
    return out, data


def test_import_stores_the_programs_samples(recorded):
    out, data = recorded
    run = objtier("import-perf", data, "--objects", out)
    assert run.returncode == 0, run.stderr
    assert "from processes the recording does not hold" in run.stderr   # objtier's own
    trace = open_trace(out)
    pid = trace.processes[0].pid
    path = out / f"perf-{pid}.otr"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in out.glob("perf-*.otr")] == [path.name]
    samples = trace.samples
    assert set(samples.column("pid").to_pylist()) == {pid}
    assert np.all(samples.column("flags").to_numpy() & F.SAMPLE_PERF)
    from objtier.analysis.objects import object_table

    table = object_table(trace, labels=False)
    big = table.column("size").to_pylist().index(24 << 20)
    # the 24 MiB array: one first-touch fault per page
    assert table.column("samples").to_pylist()[big] >= 0.95 * (24 << 8)
    shown = objtier("objects", out, "--no-symbols")
    assert shown.returncode == 0 and "24.0 MiB" in shown.stdout


def test_existing_perf_samples_are_kept_unless_forced(recorded):
    out, data = recorded
    assert objtier("import-perf", data, "--objects", out, "-q").returncode == 0
    before = {p.name: p.read_bytes() for p in out.glob("perf-*.otr")}
    assert_one_line_error(objtier("import-perf", data, "--objects", out), "pass -f")
    assert {p.name: p.read_bytes() for p in out.glob("perf-*.otr")} == before
    forced = objtier("import-perf", data, "--objects", out, "-f", "-q")
    assert forced.returncode == 0 and forced.stderr == ""
    assert sorted(p.name for p in out.glob("perf-*.otr")) == sorted(before)


def test_refusals_are_one_line(recorded, tmp_path, compile_c):
    out, data = recorded
    not_perf = tmp_path / "not.data"
    not_perf.write_text("hello\n")
    assert assert_one_line_error(objtier("import-perf", not_perf, "--objects", out),
                                 "perf cannot read")
    assert_one_line_error(objtier("import-perf", tmp_path / "missing.data", "--objects", out),
                          "no such perf.data")
    assert_one_line_error(objtier("import-perf", data, "--objects", data),
                          "recording directory")
    # a perf.data without data addresses
    plain = tmp_path / "plain.data"
    subprocess.run(["perf", "record", "-q", "-e", "page-faults", "-o", str(plain), "--",
                    "true"], capture_output=True, check=True)
    assert_one_line_error(objtier("import-perf", plain, "--objects", out), "perf record -d")
    # a perf.data of another run: no process of the recording
    other = tmp_path / "other.data"
    perf_record(other, compile_c(PROGRAM, "again"))
    assert_one_line_error(objtier("import-perf", other, "--objects", out),
                          "no sample of")
    assert not list(out.glob("perf-*.otr"))


def test_perf_clock_is_named_when_not_monotonic(compile_c, tmp_path):
    program = compile_c(PROGRAM, "touch24")
    data, out = tmp_path / "perf.data", tmp_path / "run.otr"
    run = perf_record(data, sys.executable, "-m", "objtier", "record", "-q", "--sampler", "none",
                      "-o", out, "--", program, clock=False)
    if run.returncode != 0:
        pytest.skip("perf record is not permitted here")
    imported = objtier("import-perf", data, "--objects", out)
    assert imported.returncode == 0, imported.stderr
    warnings = [line for line in imported.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "CLOCK_MONOTONIC" in warnings[0]
