"""Phases from the marker API: a program with two phases whose hot arrays differ gets a
per-phase plan whose fast set changes with the phase."""

import json
import subprocess
import sys

import pytest

from objtier.analysis.phase_markers import phase_accesses, phase_table
from objtier.native import NATIVE_DIR
from objtier.trace import open_trace
from ..phased_program import phased_source

PROGRAM = phased_source(16)


@pytest.fixture
def recording(compile_c, tmp_path):
    exe = compile_c(PROGRAM, "phased", flags=("-O1", "-g", f"-I{NATIVE_DIR / 'include'}", "-ldl"))
    out = tmp_path / "run.otr"
    run = subprocess.run([sys.executable, "-m", "objtier", "record", "-q", "--sampler", "fault",
                          "--rate", "20000",
                          "-o", str(out), "--", str(exe)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return exe, out


def test_phase_tables_from_markers(recording):
    _, out = recording
    trace = open_trace(out)
    phases = phase_table(trace).to_pydict()
    assert phases["phase"] == ["build", "query"]
    assert phases["parent"] == ["", ""]  # top level, under the root "*"
    assert phases["start_ns"][0] < phases["end_ns"][0] <= phases["start_ns"][1]
    accesses = phase_accesses(trace).to_pylist()
    by_phase = {}
    for row in accesses:
        by_phase.setdefault(row["phase"], {})[row["object"]] = row["accesses"]
    # objects 0 (x) and 1 (y): each phase's samples fall mostly in its own array
    assert by_phase["build"].get(0, 0) > 4 * by_phase["build"].get(1, 0)
    assert by_phase["query"].get(1, 0) > 4 * by_phase["query"].get(0, 0)


def test_plan_with_phases_switches_the_fast_object(recording, tmp_path):
    exe, out = recording
    plan = tmp_path / "plan.json"
    run = subprocess.run([sys.executable, "-m", "objtier", "plan", str(out), "--fast", "17M",
                          "--algo", "rank", "--phases", "--min-phase-ms", "100", "-o", str(plan)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    document = json.loads(plan.read_text())
    fast: dict[str, set[str]] = {}
    for entry in document["entries"]:
        if entry["tier"] != "slow":
            fast.setdefault(entry["phase"], set()).add(entry["context_key"])
    target = {p["name"]: p["target"] for p in document["phases"]}
    # each phase runs under its target's plan (a phase merged into "*" uses the root's)
    build, query = fast.get(target["build"], set()), fast.get(target["query"], set())
    assert len(build) == 1 and len(query) == 1
    assert build != query


def test_no_markers_is_a_clear_error(compile_c, tmp_path):
    exe = compile_c("#include <stdlib.h>\n#include <string.h>\nint main(void){char*p=malloc(1<<22);"
                    "memset(p,1,1<<22);free(p);return 0;}", "flat")
    out = tmp_path / "flat.otr"
    subprocess.run([sys.executable, "-m", "objtier", "record", "-q", "-o", str(out), "--",
                    str(exe)], check=True)
    run = subprocess.run([sys.executable, "-m", "objtier", "plan", str(out), "--fast", "50%",
                          "--phases", "-o", str(tmp_path / "p.json")], capture_output=True,
                         text=True)
    assert run.returncode == 2 and "no phase markers" in run.stderr
    assert run.stderr.count("\n") == 1


# As PROGRAM, but the sweeps run in a thread that marks no phase (a worker of a pool, an
# OpenMP thread): its samples belong to the phase the main thread is in.
WORKER_PROGRAM = PROGRAM.replace("int main(void) {", r"""
#include <pthread.h>
struct job { volatile char *p; size_t n; };
static void *work(void *arg) { struct job *j = arg; sweep(j->p, j->n, 1.0); return 0; }
static void in_worker(char *p, size_t n) {
    pthread_t t; struct job j = {p, n};
    pthread_create(&t, 0, work, &j); pthread_join(t, 0);
}
int main(void) {""").replace("sweep(x, ARRAY, 1.0);", "in_worker(x, ARRAY);") \
    .replace("sweep(y, ARRAY, 1.0);", "in_worker(y, ARRAY);")


def test_samples_of_an_unmarked_thread_go_to_the_phase_in_force(compile_c, tmp_path):
    from objtier.analysis.objects import object_table

    exe = compile_c(WORKER_PROGRAM, "phased_worker",
                    flags=("-O1", "-g", "-pthread", f"-I{NATIVE_DIR / 'include'}", "-ldl"))
    out = tmp_path / "run.otr"
    run = subprocess.run([sys.executable, "-m", "objtier", "record", "-q", "--sampler", "fault",
                          "--rate", "20000",
                          "-o", str(out), "--", str(exe)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    trace = open_trace(out)
    samples = trace.samples.to_pydict()
    main_tid = trace.phases.column("tid").to_pylist()[0]
    assert any(t != main_tid for t in samples["tid"])  # the worker's samples exist
    table = object_table(trace)
    totals = table.column("accesses").to_numpy()
    by_phase: dict[str, dict[int, float]] = {}
    for row in phase_accesses(trace, totals).to_pylist():
        by_phase.setdefault(row["phase"], {})[row["object"]] = row["accesses"]
    assert by_phase["build"].get(0, 0) > 4 * by_phase["build"].get(1, 0)
    assert by_phase["query"].get(1, 0) > 4 * by_phase["query"].get(0, 0)
    # scaled to the table's unit: an object's phases never hold more than its accesses,
    # and the sweeps, all inside phases, hold nearly all of them
    for obj in (0, 1):
        in_phases = sum(v.get(obj, 0.0) for v in by_phase.values())
        assert in_phases <= totals[obj] * (1 + 1e-9)
        assert in_phases >= 0.8 * totals[obj]


def test_pages_plan_per_phase_ranks_the_pages_of_each_phase(recording, tmp_path):
    """--algo pages --phases: the plan in force in each phase gives its bytes to the pages of
    the array that phase sweeps (each array's pages ranked by the samples of the phase that
    touches it most: its own sweep)."""
    exe, out = recording
    plan = tmp_path / "plan.json"
    run = subprocess.run([sys.executable, "-m", "objtier", "plan", str(out), "--fast", "17M",
                          "--algo", "pages", "--phases", "--min-phase-ms", "100",
                          "-o", str(plan)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    document = json.loads(plan.read_text())
    target = {p["name"]: p["target"] for p in document["phases"]}
    assert target["build"] != target["query"]

    def most_fast(phase: str) -> str:
        entries = [e for e in document["entries"] if e["phase"] == phase]
        return max(entries, key=lambda e: e["fast_bytes"])["context_key"]

    assert most_fast(target["build"]) != most_fast(target["query"])
    assert document["algorithm"]["name"] == "pages"
