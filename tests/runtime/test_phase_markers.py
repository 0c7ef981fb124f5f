"""Phase markers (objtier/phase.h): PHASE and NAME records under the runtime, per thread; the
same program built with no library runs unchanged without the runtime."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from objtier import native

ENTER, EXIT = 1, 2

PHASES = r"""
#include <objtier/phase.h>
#include <pthread.h>
#include <stdio.h>
static void *worker(void *arg) {
    (void)arg;
    objtier_phase("worker phase");
    objtier_phase_end();
    return NULL;
}
int main(void) {
    objtier_phase("load graph");
    objtier_phase("bfs");
    objtier_phase("bfs");          /* the same phase again: no new records */
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    objtier_phase("load graph");   /* a known name keeps its id */
    objtier_phase_end();
    objtier_phase_end();           /* no phase: nothing */
    puts("done");
    return 4;
}
"""


@pytest.mark.parametrize("pie", [True, False])
def test_markers_write_phase_and_name_records(compile_c, run_traced, pie):
    exe = compile_c(PHASES, name="phases", pie=pie,
                    flags=("-O1", "-g", f"-I{native.include_dir()}"))
    run = run_traced(exe, sampler="none")
    assert run.returncode == 4 and run.stdout == "done\n", run.stderr
    trace = run.trace()
    names = {k[1]: v for k, v in trace.names.items()}
    assert names == {1: "load graph", 2: "bfs", 3: "worker phase"}
    rows = trace.phases.to_pylist()
    main_tid = rows[0]["tid"]
    main = [(r["event"], names[r["name"]]) for r in rows if r["tid"] == main_tid]
    assert main == [(ENTER, "load graph"), (EXIT, "load graph"), (ENTER, "bfs"),
                    (EXIT, "bfs"), (ENTER, "load graph"), (EXIT, "load graph")]
    worker = [(r["event"], names[r["name"]]) for r in rows if r["tid"] != main_tid]
    assert worker == [(ENTER, "worker phase"), (EXIT, "worker phase")]
    times = [r["time_ns"] for r in rows if r["tid"] == main_tid]
    assert times == sorted(times)


def test_markers_without_the_runtime_do_nothing(compile_c):
    """Nothing to link: without libobjtier.so the markers are no-ops."""
    exe = compile_c(PHASES, name="phases_plain", flags=("-O1", f"-I{native.include_dir()}"))
    proc = subprocess.run([str(exe)], capture_output=True, text=True)
    assert proc.returncode == 4 and proc.stdout == "done\n" and proc.stderr == ""


def test_markers_with_a_passive_runtime(compile_c, run_traced):
    """Preloaded but not recording (no OBJTIER_OUTPUT, no plan): no output, same exit."""
    from .conftest import runtime_env
    exe = compile_c(PHASES, name="phases_passive", flags=("-O1", f"-I{native.include_dir()}"))
    proc = subprocess.run([str(exe)], env=runtime_env(None), capture_output=True, text=True)
    assert proc.returncode == 4 and proc.stdout == "done\n" and proc.stderr == ""


@pytest.mark.skipif(not shutil.which("g++"), reason="g++ not installed")
def test_header_compiles_as_cxx(tmp_path):
    src = tmp_path / "p.cc"
    src.write_text('#include <objtier/phase.h>\nint main() { objtier_phase("x"); '
                   'objtier_phase_end(); return 0; }\n')
    exe = tmp_path / "p"
    subprocess.run(["g++", "-O1", "-Wall", "-Werror", f"-I{native.include_dir()}", "-o", str(exe),
                    str(src)], check=True)
    assert subprocess.run([str(exe)]).returncode == 0
