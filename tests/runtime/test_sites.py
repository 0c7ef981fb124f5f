"""Allocation sites: small blocks sampled by address (OBJTIER_SITE_PERIOD), written as
SITE_ALLOC / SITE_FREE records with the same calling contexts as objects, read back and
grouped by analysis.sites; `objtier objects` shows them."""

from __future__ import annotations

import subprocess
import sys

from objtier.analysis.sites import has_sites, site_table
from objtier.trace import format as F

from .conftest import frames_of

NOBUILTIN = ("-O1", "-g", "-fno-builtin")

# Two call sites of small blocks: ROWS rows of 256 B kept to the end, NODES nodes of 48 B of
# which every other one is freed; one block grown with realloc; one calloc.
TWO_SITES = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) char *row(void) { char *p = malloc(256); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) void *node(void) { void *p = malloc(48); __asm__ volatile("" ::: "memory"); return p; }
int main(int argc, char **argv) {
    int rows_n = atoi(argv[1]), nodes_n = atoi(argv[2]);
    char **rows = malloc(rows_n * sizeof *rows);
    void **nodes = malloc(nodes_n * sizeof *nodes);
    for (int i = 0; i < rows_n; i++) { rows[i] = row(); memset(rows[i], i, 256); }
    for (int i = 0; i < nodes_n; i++) { nodes[i] = node(); memset(nodes[i], 1, 48); }
    for (int i = 0; i < nodes_n; i += 2) free(nodes[i]);
    char *grown = malloc(100);
    printf("grown %p\n", (void *)grown);
    grown = realloc(grown, 5000);
    printf("regrown %p\n", (void *)grown);
    char *zero = calloc(10, 30);
    long sum = rows[rows_n - 1][0] + grown[0] + zero[3];
    printf("sum %ld\n", sum);
    return 0;
}
"""


def _build(compile_c):
    return compile_c(TWO_SITES, name="two_sites", flags=NOBUILTIN)


def _sites_by_function(trace) -> dict[str, dict]:
    table = site_table(trace, labels=True)
    out = {}
    for row in table.to_pylist():
        out[row["label"].split(" ")[0]] = row
    return out


def test_every_small_block_with_period_one(compile_c, run_traced):
    exe = _build(compile_c)
    run = run_traced(exe, 3000, 4000, sampler="none", site_period=1)
    assert run.returncode == 0, run.stderr
    trace = run.trace()
    allocs, frees = trace.site_allocations, trace.site_frees
    assert has_sites(trace)
    assert set(allocs.column("period").to_pylist()) == {1}
    sites = _sites_by_function(trace)
    assert sites["row"]["sampled_blocks"] == 3000
    assert sites["row"]["est_peak_bytes"] == 3000 * 256
    assert sites["row"]["est_live_end_bytes"] == 3000 * 256
    assert sites["node"]["sampled_blocks"] == 4000
    assert sites["node"]["est_peak_bytes"] == 4000 * 48
    assert sites["node"]["est_live_end_bytes"] == 2000 * 48
    assert sites["row"]["context_key"] != sites["node"]["context_key"]
    # the innermost frame is the caller of malloc in the program, as for tracked objects
    pid = allocs.column("pid")[0].as_py()
    row_ctx = sites["row"]["context"]
    assert frames_of(trace, row_ctx, pid)[0][0].endswith("/two_sites")
    # realloc: the old block's SITE_FREE (kind REALLOC) and the new one's SITE_ALLOC
    kinds = dict(zip(allocs.column("size").to_pylist(), allocs.column("kind").to_pylist()))
    assert kinds[5000] == 3 and kinds[300] == 2 and kinds[100] == 1
    grown = int(run.stdout.split("grown ")[1].split()[0], 16)
    free_kinds = [k for a, k in zip(frees.column("addr").to_pylist(),
                                    frees.column("kind").to_pylist()) if a == grown]
    assert 2 in free_kinds
    # the pointer arrays (24 KiB, 32 KiB) are below 128 KiB too: no objects at all
    assert trace.allocations.num_rows == 0


def test_sampled_estimates_and_selection(compile_c, run_traced):
    exe = _build(compile_c)
    run = run_traced(exe, 20000, 20000, sampler="none", site_period=16)
    assert run.returncode == 0, run.stderr
    trace = run.trace()
    addr = trace.site_allocations.column("addr").to_numpy()
    # exactly the addresses the format's selection picks
    assert (F.site_hash(addr) < F.site_threshold(16)).all()
    sites = _sites_by_function(trace)
    assert 0 < sites["row"]["sampled_blocks"] < 20000 / 4
    assert abs(sites["row"]["est_blocks"] - 20000) < 0.3 * 20000
    assert abs(sites["node"]["est_live_end_bytes"] - 10000 * 48) < 0.3 * 10000 * 48


def test_period_zero_writes_no_sites(compile_c, run_traced):
    exe = _build(compile_c)
    run = run_traced(exe, 1000, 1000, sampler="none", site_period=0)
    assert run.returncode == 0, run.stderr
    trace = run.trace()
    assert trace.site_allocations.num_rows == 0 and trace.site_frees.num_rows == 0
    assert not has_sites(trace)


def test_objects_command_shows_sites(compile_c, run_traced):
    exe = _build(compile_c)
    run = run_traced(exe, 2000, 2000, sampler="none", site_period=4)
    assert run.returncode == 0, run.stderr
    out = subprocess.run([sys.executable, "-m", "objtier", "objects", str(run.out)],
                         capture_output=True, text=True,
                         env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert "allocation sites" in out.stdout and "1 in 4 blocks sampled" in out.stdout
    assert "row (" in out.stdout and "node (" in out.stdout
    assert "coverage:" in out.stdout


# Rows written and read many times, nodes written once: with every block sampled (period 1)
# the exact ordered access stream (--sampler trace, OBJTIER_TRACE_STREAM) lands in the rows'
# site far more often than in the nodes'.
ACCESSED = r"""
#include <stdlib.h>
__attribute__((noinline)) long *row(void) { return malloc(256); }
__attribute__((noinline)) long *node(void) { return malloc(48); }
int main(void) {
    enum { N = 500 };
    static long *rows[N], *nodes[N];
    for (int i = 0; i < N; i++) { rows[i] = row(); nodes[i] = node(); }
    for (int i = 0; i < N; i++) for (int j = 0; j < 6; j++) nodes[i][j] = j;
    long sum = 0;
    for (int r = 0; r < 20; r++)
        for (int i = 0; i < N; i++) for (int j = 0; j < 32; j++) sum += rows[i][j] += j;
    return (int)(sum & 1) * 0;
}
"""


def test_accesses_attributed_to_sites(tmp_path):
    import shutil

    import pytest

    if not (shutil.which("clang-16") or shutil.which("clang")):
        pytest.skip("clang-16 is not installed (objtier cc)")
    src = tmp_path / "accessed.c"
    src.write_text(ACCESSED)
    exe = tmp_path / "accessed"
    build = subprocess.run([sys.executable, "-m", "objtier", "cc", "-O1", "-g", "-o", str(exe),
                            str(src)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    from .conftest import runtime_env

    out = tmp_path / "accessed.otr"
    run = subprocess.run([str(exe)], env=runtime_env(out, sampler="trace", site_period=1,
                                                     trace_stream=400000),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    from objtier.trace import open_trace

    sites = _sites_by_function(open_trace(out))
    assert sites["row"]["sampled_blocks"] == 500 and sites["node"]["sampled_blocks"] == 500
    assert sites["node"]["stream_accesses"] >= 500 * 6           # the stores of main
    assert sites["row"]["stream_accesses"] > 10 * sites["node"]["stream_accesses"]


# A malloc/free loop (one block reused at one address by glibc's tcache), then ROWS rows of 64 B
# kept live: with every block sampled at first (period 1), the loop's records cost far more
# than its malloc, so pacing (native/runtime/sample/site_pace.h) raises the period.
CHURN = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) void *churn(void) { void *p = malloc(40); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) char *row(void) { char *p = malloc(64); __asm__ volatile("" ::: "memory"); return p; }
int main(int argc, char **argv) {
    long loops = atol(argv[1]), rows_n = atol(argv[2]), sum = 0;
    /* a ring of 256 live blocks: malloc hands back the block just freed, so the loop cycles
     * through 256 addresses; one address alone is sampled all or nothing (its hash against
     * the threshold), and whether it stayed sampled through a few doublings was luck */
    void *ring[256] = {0};
    for (long i = 0; i < loops; i++) {
        long k = i & 255; free(ring[k]); char *p = churn(); p[0] = (char)i; sum += p[0]; ring[k] = p;
    }
    for (int k = 0; k < 256; k++) free(ring[k]);
    char **rows = malloc(rows_n * sizeof *rows);
    for (long i = 0; i < rows_n; i++) { rows[i] = row(); rows[i][0] = (char)i; }
    for (long i = 0; i < rows_n; i++) sum += rows[i][0];
    printf("sum %ld\n", sum);
    return 0;
}
"""


def _site_counters(trace) -> dict[str, int]:
    table = trace.counters
    return {n: v for n, v in zip(table.column("name").to_pylist(),
                                 table.column("value").to_pylist()) if n.startswith("recorder.site")}


def test_a_budget_raises_the_period_and_the_estimates_stay_unbiased(compile_c, run_traced):
    exe = compile_c(CHURN, name="churn", flags=NOBUILTIN)
    loops, rows = 3_000_000, 200_000
    plain = subprocess.run([str(exe), str(loops), str(rows)], capture_output=True, text=True)
    run = run_traced(exe, loops, rows, sampler="none", site_period=1, overhead_bp=300)
    assert run.returncode == 0 and run.stdout == plain.stdout, run.stderr
    trace = run.trace()
    counters = _site_counters(trace)
    assert counters["recorder.site_period_first"] == 1
    assert counters["recorder.site_period"] > 1
    assert counters["recorder.site_captures"] == trace.site_allocations.num_rows
    assert counters["recorder.site_cost_ns"] > 0
    periods = set(trace.site_allocations.column("period").to_pylist())
    assert 1 in periods and max(periods) == counters["recorder.site_period"]
    sites = _sites_by_function(trace)
    # the loop was sampled every time at first, then no more: far fewer records than loops
    assert 0 < sites["churn"]["sampled_blocks"] < loops / 2
    # each block weighted by its own period: the rows are counted as if all were sampled
    assert abs(sites["row"]["est_blocks"] - rows) < 0.35 * rows
    assert abs(sites["row"]["est_live_end_bytes"] - rows * 64) < 0.35 * rows * 64
    out = subprocess.run([sys.executable, "-m", "objtier", "objects", str(run.out)],
                         capture_output=True, text=True,
                         env={"COLUMNS": "400", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert (f"1 in 1 to 1 in {counters['recorder.site_period']} blocks sampled (the period "
            f"raised while recording" in " ".join(out.stdout.split()))


def test_no_budget_keeps_every_block_sampled(compile_c, run_traced):
    exe = compile_c(CHURN, name="churn", flags=NOBUILTIN)
    run = run_traced(exe, 200_000, 1000, sampler="none", site_period=1, overhead_bp=0)
    assert run.returncode == 0, run.stderr
    trace = run.trace()
    counters = _site_counters(trace)
    assert counters["recorder.site_period"] == 1
    sites = _sites_by_function(trace)
    assert sites["churn"]["sampled_blocks"] == 200_000 and sites["row"]["sampled_blocks"] == 1000
