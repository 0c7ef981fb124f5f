"""Global and static arrays (.data/.bss) are objects: recorded with their symbol's name,
sampled, counted exactly by the trace sampler, planned and enforced like allocations; the same
for a shared library's arrays; OBJTIER_STATICS=0 leaves them out."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from objtier.analysis.mapping import sample_objects
from objtier.analysis.objects import object_table, unmapped_count

from .conftest import runtime_env

STATIC_KIND = 12
N = 2 * 1024 * 1024  # doubles per array: 16 MiB each

STREAM_GLOBALS = rf"""
#include <stdio.h>
#include <stdlib.h>
#define N {N}
static double a[N], b[N];          /* .bss, file-local */
double c[N];                       /* .bss, global */
double seeded[40000] = {{1.0}};    /* .data, 320000 B */
static char small[1024];           /* below the 128 KiB threshold: not an object */
extern double lib_table[];
double lib_sum(long n);
int main(int argc, char **argv) {{
    int reps = argc > 1 ? atoi(argv[1]) : 4;
    for (long i = 0; i < N; i++) {{ a[i] = 1; b[i] = 2; c[i] = 0; }}
    for (int r = 0; r < reps; r++)
        for (long i = 0; i < N; i++)
            c[i] = a[i] + 3 * b[i] + seeded[i % 40000];
    small[0] = 1;
    printf("c %.1f lib %.1f\n", c[N - 1], lib_sum(1 << 18));
    return 3;
}}
"""

LIB = r"""
double lib_table[1 << 18];         /* 2 MiB in the library's .bss */
double lib_sum(long n) {
    double s = 0;
    for (long i = 0; i < n; i++) { lib_table[i] = (double)i; s += lib_table[i]; }
    return s;
}
"""


@pytest.fixture
def globals_program(tmp_path):
    lib_src = tmp_path / "libtable.c"
    lib_src.write_text(LIB)
    lib = tmp_path / "libtable.so"
    subprocess.run(["gcc", "-O1", "-g", "-shared", "-fPIC", "-o", str(lib), str(lib_src)],
                   check=True)
    src = tmp_path / "stream_globals.c"
    src.write_text(STREAM_GLOBALS)
    exe = tmp_path / "stream_globals"
    subprocess.run(["gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-o", str(exe), str(src),
                    f"-L{tmp_path}", "-ltable", f"-Wl,-rpath,{tmp_path}"], check=True)
    return exe


def _labels_by_size(table) -> dict[int, str]:
    return dict(zip(table.column("size").to_pylist(), table.column("label").to_pylist()))


def test_globals_are_named_sampled_objects(globals_program, tmp_path):
    plain = subprocess.run([str(globals_program), "600"], capture_output=True, text=True)
    out = tmp_path / "run.otr"
    run = subprocess.run([str(globals_program), "600"], capture_output=True, text=True,
                         env=runtime_env(out, rate=20000))
    assert run.returncode == plain.returncode == 3
    assert run.stdout == plain.stdout
    from objtier.trace import open_trace

    trace = open_trace(out)
    allocs = trace.allocations
    statics = np.flatnonzero(allocs.column("kind").to_numpy() == STATIC_KIND)
    assert len(statics) == 5, allocs.to_pylist()   # a, b, c, seeded, lib_table
    table = object_table(trace)
    labels = [table.column("label")[int(i)].as_py() for i in statics]
    names = sorted(label.split(" ")[0] for label in labels)
    assert names == ["a", "b", "c", "lib_table", "seeded"], labels
    sizes = sorted(allocs.column("size").to_numpy()[statics].tolist())
    assert sizes == sorted([N * 8] * 3 + [320000, (1 << 18) * 8])
    mapped = sample_objects(trace)
    samples = table.column("samples").to_numpy()
    # the three swept arrays are sampled; almost nothing falls outside every object now
    for i in statics:
        if allocs.column("size")[int(i)].as_py() == N * 8:
            assert samples[int(i)] > 0, labels
    assert unmapped_count(mapped) <= 0.05 * max(len(mapped), 1)


def test_statics_off_leaves_them_out(globals_program, tmp_path):
    out = tmp_path / "off.otr"
    run = subprocess.run([str(globals_program), "1"], capture_output=True, text=True,
                         env=runtime_env(out, statics=0))
    assert run.returncode == 3
    from objtier.trace import open_trace

    kinds = open_trace(out).allocations.column("kind").to_numpy()
    assert not (kinds == STATIC_KIND).any()


def test_exact_counts_reach_globals(tmp_path):
    """Built with `objtier cc` and recorded with the trace sampler: every load of a global is
    counted (init + reps passes over a)."""
    src = tmp_path / "g.c"
    src.write_text(r"""
#include <stdio.h>
#define N 65536
static double a[N];
int main(void) {
    double s = 0;
    for (long i = 0; i < N; i++) a[i] = (double)i;
    for (int r = 0; r < 3; r++) for (long i = 0; i < N; i++) s += a[i];
    printf("%.0f\n", s);
    return 0;
}
""")
    exe = tmp_path / "g"
    objtier = [sys.executable, "-m", "objtier"]
    subprocess.run([*objtier, "cc", "-O1", "-o", str(exe), str(src)], check=True)
    out = tmp_path / "exact.otr"
    subprocess.run([*objtier, "record", "-q", "--sampler", "trace", "-o", str(out), "--",
                    str(exe)], check=True, capture_output=True)
    from objtier.exact.tree import exact_object_table
    from objtier.trace import open_trace

    table = exact_object_table(open_trace(out), "all")
    rows = [r for r in table.to_pylist() if r["size"] == 65536 * 8]
    assert len(rows) == 1 and rows[0]["label"].startswith("a ")
    assert rows[0]["accesses"] >= 3 * 65536 and rows[0]["accesses"] <= 4 * 65536 + 16


@pytest.mark.root
def test_plan_for_globals_is_enforced(globals_program, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root (memory cgroup + zram)")
    objtier = [sys.executable, "-m", "objtier"]
    rec = tmp_path / "rec.otr"
    recorded = subprocess.run([*objtier, "record", "-q", "-o", str(rec), "--",
                               str(globals_program), "20"], capture_output=True, text=True)
    assert recorded.returncode == 3, recorded.stderr   # the program's own exit status
    plan = tmp_path / "plan.json"
    made = subprocess.run([*objtier, "plan", str(rec), "--fast", "50%", "-o", str(plan)],
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    entries = json.loads(plan.read_text())
    assert entries
    run = subprocess.run([*objtier, "run", "--plan", str(plan), "--local", "60M", "--",
                          str(globals_program), "4"], capture_output=True, text=True)
    assert run.returncode == 3, run.stderr
    assert "of 5 objects matched the plan" in run.stderr, run.stderr
    assert "0 of 5" not in run.stderr


@pytest.mark.root
def test_default_sampler_covers_adjacent_globals(globals_program, tmp_path):
    """The default (pageout) sampler samples every swept array, also those that share a page
    with their neighbour in .bss (they were skipped when tracked as mappings)."""
    if os.geteuid() != 0:
        pytest.skip("needs root (a temporary swap device when none is active)")
    out = tmp_path / "default.otr"
    run = subprocess.run([sys.executable, "-m", "objtier", "record", "-q", "--rate", "20000",
                          "-o", str(out), "--", str(globals_program), "600"],
                         capture_output=True, text=True)
    assert run.returncode == 3, run.stderr
    from objtier.trace import open_trace

    table = object_table(open_trace(out))
    swept = [r for r in table.to_pylist() if r["size"] == N * 8]
    assert len(swept) == 3
    assert all(r["samples"] > 0 for r in swept), [(r["label"], r["samples"]) for r in swept]
