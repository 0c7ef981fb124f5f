"""`objtier record` end to end: a real program under the runtime, read back with the reader."""

import subprocess
import sys

import pyarrow.compute as pc
import pytest

from objtier.trace import open_trace

PROGRAM = r"""
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}
int main(int argc, char **argv) {
    size_t n = 8u << 20;
    char *a = malloc(n), *b = malloc(2 * n);
    memset(a, 1, n); memset(b, 2, 2 * n);
    long sum = 0;
    double start = now();
    while (now() - start < 0.6)  /* long enough for several scan passes */
        for (size_t i = 0; i < 2 * n; i += 4096) sum += b[i]++;
    printf("sum %ld\n", sum);
    free(a); free(b);
    if (argc > 1 && !strcmp(argv[1], "kill")) raise(SIGTERM);
    return argc > 1 ? atoi(argv[1]) : 0;
}
"""


def record(*args, check_rc=None):
    run = subprocess.run([sys.executable, "-m", "objtier", "record", *map(str, args)],
                         capture_output=True, text=True)
    if check_rc is not None:
        assert run.returncode == check_rc, run.stderr
    return run


@pytest.fixture
def program(compile_c):
    return compile_c(PROGRAM, "twoarrays")


def test_objects_samples_and_counters(program, tmp_path):
    out = tmp_path / "run.otr"
    run = record("--sampler", "fault", "--rate", "5000", "-o", out, "--", program, check_rc=0)
    assert "sampler fault" in run.stderr and "trace written to" in run.stderr
    trace = open_trace(out)
    allocs = trace.allocations.to_pydict()
    assert allocs["size"] == [8 << 20, 16 << 20]
    assert len(set(allocs["context"])) == 2           # two call sites, two contexts
    assert trace.frees.num_rows == 2
    assert trace.samples.num_rows > 100
    names = set(trace.counters.column("name").to_pylist())
    assert {"vmstat.pswpout", "vmstat.pgmajfault", "proc.rss_bytes"} <= names
    rss = trace.counters.filter(pc.equal(trace.counters.column("name"), "proc.rss_bytes"))
    assert max(rss.column("value").to_pylist()) >= 24 << 20
    assert trace.processes[0].complete


def test_exit_status_and_signals_pass_through(program, tmp_path):
    record("-q", "-o", tmp_path / "a.otr", "--", program, "7", check_rc=7)
    run = record("-o", tmp_path / "b.otr", "--", program, "kill", check_rc=128 + 15)
    assert "killed by signal 15" in run.stderr
    assert open_trace(tmp_path / "b.otr").allocations.num_rows == 2   # flushed before the kill


@pytest.mark.parametrize("args, message", [
    (["--rate", "0", "--", "true"], "argument --rate: must be from 1 to 10000000"),
    (["--stack-depth", "99", "--", "true"], "argument --stack-depth: must be from 1 to 32"),
    (["--min-size", "12Q", "--", "true"], "argument --min-size: invalid size '12Q'"),
    (["--", "no-such-program-xyz"], "command not found"),
    ([], "no command given"),
    (["--sampler", "bogus", "--", "true"], "invalid choice"),
])
def test_bad_options_are_one_line_errors(tmp_path, args, message):
    run = record("-o", tmp_path / "x.otr", *args)
    assert run.returncode == 2
    assert message in run.stderr and run.stderr.count("\n") == 1
    assert "Traceback" not in run.stderr


def test_existing_output_needs_force(program, tmp_path):
    out = tmp_path / "run.otr"
    record("-q", "-o", out, "--", program, check_rc=0)
    run = record("-q", "-o", out, "--", program)
    assert run.returncode == 2 and "--force" in run.stderr
    record("-q", "--force", "-o", out, "--", program, check_rc=0)
    not_a_recording = tmp_path / "precious"
    not_a_recording.mkdir()
    (not_a_recording / "notes.txt").write_text("keep me")
    run = record("-q", "--force", "-o", not_a_recording, "--", program)
    assert run.returncode == 2 and (not_a_recording / "notes.txt").exists()


def test_perf_sampler_records_page_faults(program, tmp_path):
    out = tmp_path / "perf.otr"
    run = record("--sampler", "perf", "-o", out, "--", program, check_rc=0)
    assert "software page-fault" in run.stderr or "memory sampling" in run.stderr
    samples = open_trace(out).samples
    assert samples.num_rows > 0
    assert set(samples.column("source").to_pylist()) <= {2, 3, 4}
