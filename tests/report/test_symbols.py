"""Allocation sites as a user reads them: C++ names demangled without parameter lists, frames
inlined from std::vector shown from DWARF, and one "rebuild with -g" note for a program
without line information."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from objtier.objects_view import object_stacks, objects_view
from objtier.errors import EnvironmentProblem
from objtier.trace import open_trace

GRID = r"""
#include <vector>
#include <cstdio>
namespace demo {
struct Grid {
    std::vector<double> cells;
    explicit Grid(unsigned long n) : cells(n) {}
};
}
__attribute__((noinline)) demo::Grid *make(unsigned long n) { return new demo::Grid(n); }
int main() {
    demo::Grid *g = make(1ul << 20);
    for (unsigned long i = 0; i < g->cells.size(); i += 512) g->cells[i] = i;
    std::printf("%f\n", g->cells[512]);
    delete g;
    return 0;
}
"""

PLAIN = r"""
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
__attribute__((noinline)) char *grab(size_t n) { char *p = malloc(n); memset(p, 1, n); return p; }
int main(void) { char *p = grab(4u << 20); printf("%d\n", p[7]); free(p); return 0; }
"""


def _record(tmp_path, exe):
    from objtier import native

    try:
        native.runtime_library()
    except EnvironmentProblem as error:
        pytest.skip(f"needs the built runtime: {error}")
    out = tmp_path / f"{exe.name}.otr"
    run = subprocess.run([sys.executable, "-m", "objtier", "record", "-q", "-o", str(out),
                          "--sampler", "fault", "--counters-interval", "0", "--", str(exe)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return out


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_cxx_sites_are_demangled_and_show_inlined_frames(tmp_path):
    src = tmp_path / "grid.cc"
    src.write_text(GRID)
    exe = tmp_path / "grid"
    subprocess.run(["g++", "-O2", "-g", "-o", str(exe), str(src)], check=True)
    out = _record(tmp_path, exe)
    trace = open_trace(out)
    (label,) = objects_view(trace).table.column("label").to_pylist()
    (stack,) = object_stacks(trace)
    # the vector's storage is allocated in library code inlined into make() and Grid::Grid
    assert "[inlined]" in label and "make (grid.cc:10)" in label, label
    assert "demo::Grid::Grid (grid.cc:7) [inlined]" in label, label
    assert "(unsigned long" not in label and "_Z" not in label, label   # demangled, short
    assert stack.startswith(label.split(" <- main")[0]) and "main (grid.cc:12)" in stack, stack
    objects = subprocess.run([sys.executable, "-m", "objtier", "objects", str(out)],
                             capture_output=True, text=True)
    assert "rebuild with -g" not in objects.stdout


def test_a_program_without_line_info_gets_one_rebuild_note(compile_c, tmp_path):
    exe = compile_c(PLAIN, name="plain", flags=("-O1",))   # no -g
    out = _record(tmp_path, exe)
    objects = subprocess.run([sys.executable, "-m", "objtier", "objects", str(out)],
                             capture_output=True, text=True)
    assert objects.returncode == 0, objects.stderr
    assert objects.stdout.count("rebuild with -g") == 1, objects.stdout
    assert "grab (plain)" in " ".join(objects.stdout.split())
