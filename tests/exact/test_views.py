"""Exact counts reach every view: a --sampler trace recording of a known program shows its
exact loads, stores and LLC-model misses per object and per context in `objtier objects`,
the report and `plan --explain`, labelled exact, never as samples."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from objtier.objects_view import objects_view
from objtier.exact.tree import exact_context_table
from objtier.trace import open_trace

pytestmark = pytest.mark.skipif(not (shutil.which("clang-16") or shutil.which("clang")),
                                reason="clang-16 is not installed")

OBJTIER = [sys.executable, "-m", "objtier"]
N = 1 << 18   # ints: 1 MiB per array
SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
#define N (1 << 18)
__attribute__((noinline)) long sum(const int *a, int n) { long s = 0; for (int i = 0; i < n; i++) s += a[i]; return s; }
__attribute__((noinline)) void fill(int *a, int n, int v) { for (int i = 0; i < n; i++) a[i] = v; }
int main(void) {
    int *a = malloc(N * sizeof(int)), *b = malloc(N * sizeof(int));
    fill(a, N, 1);
    fill(b, N / 2, 2);
    long s = sum(a, N) + sum(b, N / 4);
    printf("s %ld\n", s);
    free(a);
    free(b);
    return 0;
}
"""


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """(recording dir, expected (loads, stores) of a and b) of the program under the trace
    sampler, recorded through `objtier record`."""
    tmp = tmp_path_factory.mktemp("views")
    src = tmp / "twoarrays.c"
    src.write_text(SOURCE)
    exe = tmp / "twoarrays"
    build = subprocess.run([*OBJTIER, "cc", "-O1", "-g", "-fno-vectorize", "-fno-unroll-loops",
                            "-o", str(exe), str(src)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    out = tmp / "run.otr"
    rec = subprocess.run([*OBJTIER, "record", "-q", "-o", str(out), "--sampler", "trace",
                          "--llc", "256K,16,64", "--", str(exe)], capture_output=True, text=True)
    assert rec.returncode == 0, rec.stderr
    return out, {0: (N + 0, N), 1: (N // 4, N // 2)}


def test_view_of_an_exact_recording_holds_exact_counts(recording):
    out, expected = recording
    view = objects_view(open_trace(out), labels=False)
    assert view.exact and view.unit == "exact accesses" and view.count_column == "llc_misses"
    rows = view.table.to_pylist()
    assert {r["object"]: (r["loads"], r["stores"]) for r in rows} == expected
    # every line of a is missed at least once by its first touch; b's untouched half never is
    assert rows[0]["llc_misses"] >= 4 * N // 64 and rows[0]["accesses"] == rows[0]["llc_misses"]
    assert view.total == sum(ld + st for ld, st in expected.values()) + view.outside
    contexts = exact_context_table(open_trace(out))
    by_stack = {}
    for r in contexts.to_pylist():
        key = (r["function"], r["top_object"])
        by_stack[key] = (r["loads"], r["stores"])
        assert re.match(rf"{r['function']} <- main \(twoarrays\.c:\d+\)", r["stack"]), r["stack"]
    assert by_stack == {("fill", 0): (0, N), ("fill", 1): (0, N // 2), ("sum", 0): (N, 0),
                        ("sum", 1): (N // 4, 0)}


def test_objects_command_shows_exact_counts(recording):
    out, expected = recording
    run = subprocess.run([*OBJTIER, "objects", str(out)], capture_output=True, text=True,
                         env={**os.environ, "COLUMNS": "200"})
    assert run.returncode == 0, run.stderr
    text = run.stdout
    assert "exact counts" in text and "objects by exact LLC-model misses" in text
    assert "contexts by exact LLC-model misses" in text
    assert re.search(rf"│\s+0 │.*│\s+{N} │\s+{N} │", text), text
    assert "fill <- main (twoarrays.c:" in text
    assert re.search(rf"^{2 * N + N // 4 + N // 2} exact accesses; 0 outside every tracked",
                     text, re.M), text[-500:]
    assert "samples" not in text


def test_report_and_plan_explain_say_exact(recording, tmp_path):
    out, expected = recording
    rep = subprocess.run([*OBJTIER, "report", str(out), "-o", str(tmp_path / "rep")],
                         capture_output=True, text=True)
    assert rep.returncode == 0, rep.stderr
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "exact accesses" in page and "Exact counts" in page
    assert "0 samples" not in page
    objects = pq.read_table(tmp_path / "rep" / "objects.parquet").to_pylist()
    assert {r["object"]: (r["loads"], r["stores"]) for r in objects} == expected
    contexts = pq.read_table(tmp_path / "rep" / "contexts.parquet")
    assert sum(contexts.column("loads").to_pylist()) == N + N // 4

    plan = subprocess.run([*OBJTIER, "plan", str(out), "--fast", "50%", "--explain",
                           "-o", str(tmp_path / "plan.json")], capture_output=True, text=True)
    assert plan.returncode == 0, plan.stderr
    assert "of exact LLC-model misses" in plan.stdout
    assert "sampled accesses" not in plan.stdout
    assert "exact loads" in plan.stdout and str(N // 4) in plan.stdout
