"""Exact counts: every load and store of a known program lands on the right object in the
right context; the cache model misses as documented; the runtime stays inert otherwise."""

from __future__ import annotations

import os
import subprocess

import numpy as np

from objtier.exact.tree import context_tree, object_counts
from objtier.trace.symbolize import symbolize

import shutil

import pytest

pytestmark = pytest.mark.skipif(not (shutil.which("clang-16") or shutil.which("clang")),
                                reason="clang-16 is not installed")

KNOWN = r"""
#include <stdio.h>
#include <stdlib.h>
#define N (1 << 18) /* ints: 1 MiB per array */
__attribute__((noinline)) long sum(const int *a, int n) { long s = 0; for (int i = 0; i < n; i++) s += a[i]; return s; }
__attribute__((noinline)) void fill(int *a, int n, int v) { for (int i = 0; i < n; i++) a[i] = v; }
__attribute__((noinline)) void copy(int *d, const int *s, int n) { for (int i = 0; i < n; i++) d[i] = s[i]; }
int main(void) {
    int *a = malloc(N * sizeof(int)), *b = malloc(N * sizeof(int));
    printf("a %p\nb %p\n", (void *)a, (void *)b);
    fill(a, N, 1);          /* a: N stores in fill */
    fill(b, N / 2, 2);      /* b: N/2 stores in fill (another call site) */
    copy(b, a, N);          /* a: N loads, b: N stores in copy */
    long s = sum(a, N) + sum(b, N / 4); /* a: N loads, b: N/4 loads in sum (two sites) */
    printf("s %ld\n", s);
    free(a);
    free(b);
    return 0;
}
"""

N = 1 << 18


def _function_of(tree, node):
    frames = tree.frames[node]
    return symbolize([(frames[0]["module"], frames[0]["offset"])])[0].split(" (")[0]


def _per_function(trace):
    """{(function, object row): (loads, stores, misses)} summed over nodes of that function."""
    tree = context_tree(trace)
    out: dict = {}
    for node, obj, ld, st, ms in zip(tree.acc_node, tree.acc_object, tree.loads, tree.stores,
                                     tree.misses):
        key = (_function_of(tree, int(node)), int(obj))
        prev = out.get(key, (0, 0, 0))
        out[key] = (prev[0] + int(ld), prev[1] + int(st), prev[2] + int(ms))
    return tree, out


def test_known_program_gets_exact_counts(objtier_cc, run_exact):
    exe = objtier_cc(KNOWN)
    _, trace = run_exact(exe, llc_bytes="1M", llc_ways=16, llc_line=64)
    tree, counts = _per_function(trace)
    # object rows: 0 = a, 1 = b (allocation order)
    assert counts[("fill", 0)][:2] == (0, N)
    assert counts[("fill", 1)][:2] == (0, N // 2)
    assert counts[("copy", 0)][:2] == (N, 0)
    assert counts[("copy", 1)][:2] == (0, N)
    assert counts[("sum", 0)][:2] == (N, 0)
    assert counts[("sum", 1)][:2] == (N // 4, 0)
    assert set(counts) == {("fill", 0), ("fill", 1), ("copy", 0), ("copy", 1), ("sum", 0),
                           ("sum", 1)}
    # the two calls of fill (and of sum) come from different call sites: different nodes
    fills = [v for v in range(1, tree.nodes) if _function_of(tree, v) == "fill"]
    assert len(fills) == 2 and all(tree.calls[v] == 1 for v in fills)
    assert all(tree.inclusive_ns[v] > 0 for v in range(1, tree.nodes))
    # first touch of each array misses once per line it spans (malloc returns line + 16)
    lines = (4 * N) // 64 + 1
    assert counts[("fill", 0)][2] == lines
    assert object_counts(trace, "all").tolist() == [3 * N, N // 2 + N + N // 4]


STREAM = r"""
#include <stdlib.h>
#include <stdint.h>
__attribute__((noinline)) uint64_t pass(const uint64_t *a, long n) { uint64_t s = 0; for (long i = 0; i < n; i++) s += a[i]; return s; }
int main(int argc, char **argv) {
    long bytes = atol(argv[1]);
    uint64_t *a = aligned_alloc(4096, bytes);
    for (long i = 0; i < bytes / 8; i++) a[i] = i;
    uint64_t s = pass(a, bytes / 8) + pass(a, bytes / 8);
    free(a);
    return s == 1;
}
"""


def _pass_misses(trace):
    tree, counts = _per_function(trace)
    return counts[("pass", 0)]


def test_stream_over_four_times_the_cache_misses_once_per_line(objtier_cc, run_exact):
    exe = objtier_cc(STREAM, name="stream")
    llc = 256 * 1024
    _, trace = run_exact(exe, 4 * llc, llc_bytes=llc, llc_ways=16, llc_line=64)
    loads, stores, misses = _pass_misses(trace)
    assert loads == 2 * (4 * llc // 8)
    assert misses == 2 * (4 * llc // 64)  # both passes: every line, exactly once


def test_second_pass_over_half_the_cache_hits(objtier_cc, run_exact):
    exe = objtier_cc(STREAM, name="stream")
    llc = 1 << 20
    _, trace = run_exact(exe, llc // 2, llc_bytes=llc, llc_ways=16, llc_line=64)
    loads, _, misses = _pass_misses(trace)
    assert loads == 2 * (llc // 2 // 8)
    assert misses == 0  # the initialising loop left every line resident


def test_address_trace_is_bounded(objtier_cc, run_exact):
    exe = objtier_cc(STREAM, name="stream")
    _, trace = run_exact(exe, 1 << 20, trace_limit=1000, llc_bytes="256K", llc_ways=8)
    samples = trace.samples
    assert samples.num_rows == 1000
    assert set(samples.column("source").to_pylist()) == {5}
    assert set(samples.column("weight").to_pylist()) == {1}
    flags = np.array(samples.column("flags").to_pylist())
    assert np.all(flags & 2)  # load/store known
    assert set(samples.column("level").to_pylist()) <= {4, 5}  # L3 hit or DRAM (model miss)
    assert trace.sampler_stats.to_pylist()[0]["samples"] == 1000


def test_inert_without_output_or_with_another_sampler(objtier_cc, tmp_path):
    exe = objtier_cc(STREAM, name="stream")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBJTIER_")}
    assert subprocess.run([str(exe), "65536"], env=env).returncode == 0
    out = tmp_path / "fault.otr"
    env.update(OBJTIER_OUTPUT=str(out), OBJTIER_SAMPLER="fault")
    assert subprocess.run([str(exe), "1048576"], env=env).returncode == 0
    from objtier.trace import open_trace
    trace = open_trace(out)
    assert trace.access_counts.num_rows == 0 and trace.cct_nodes.num_rows == 0
    assert trace.allocations.num_rows == 1


THREADS = r"""
#include <pthread.h>
#include <stdlib.h>
#define N (1 << 16)
static int *shared;
__attribute__((noinline)) void work(int *p, int n) { for (int i = 0; i < n; i++) p[i] += 1; }
static void *body(void *arg) { work(shared + (long)arg * (N / 4), N / 4); return NULL; }
int main(void) {
    shared = calloc(N, sizeof(int));
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, body, (void *)i);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    free(shared);
    return 0;
}
"""


def test_threads_each_count_their_accesses(objtier_cc, run_exact):
    exe = objtier_cc(THREADS, name="threads", flags=("-O1", "-fno-vectorize", "-pthread"))
    _, trace = run_exact(exe)
    tree, counts = _per_function(trace)
    assert counts[("work", 0)][:2] == (N_T := (1 << 16), N_T)  # one load + one store each
    # four threads' trees merge into one canonical context per (function, call site)
    works = [v for v in range(1, tree.nodes) if _function_of(tree, v) == "work"]
    assert len(works) == 1 and tree.calls[works[0]] == 4
