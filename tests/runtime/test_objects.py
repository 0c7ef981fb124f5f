"""Objects: sizes, order, kinds, contexts (also across runs of a PIE binary), frees,
partial munmaps, realloc, C++ new, exit codes, passive modes."""

from __future__ import annotations

import subprocess

from .conftest import frames_of, printed, runtime_env

KIND = dict(MALLOC=1, CALLOC=2, REALLOC=3, POSIX_MEMALIGN=4, ALIGNED_ALLOC=5, MEMALIGN=6,
            VALLOC=7, PVALLOC=8, MMAP=9, MREMAP=10, NEW=11)
# the compiler must not elide allocations that are only freed
NOBUILTIN = ("-O1", "-g", "-fno-builtin")
FREE = dict(FREE=1, REALLOC=2, MUNMAP=3, MREMAP=4)

SITES = r"""
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
__attribute__((noinline)) void *site_one(size_t n) { void *p = malloc(n); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) void *site_two(size_t n) { void *p = malloc(n); __asm__ volatile("" ::: "memory"); return p; }
int main(void) {
    void *p[2];
    volatile int two = 2;
    for (int i = 0; i < two; i++)               /* the same call stack twice */
        p[i] = site_one(200000 + 200000 * (size_t)i);
    void *a = p[0], *c = p[1], *b = site_two(300000);
    void *small = malloc(1000);                 /* below the 128 KiB threshold */
    void *z = calloc(1000, 1000);
    void *pm; posix_memalign(&pm, 4096, 1 << 20);
    void *al = aligned_alloc(4096, 1 << 19);
    void *ma = memalign(64, 1 << 18);
    void *va = valloc(1 << 18);
    void *pv = pvalloc(1 << 18);
    printf("a %p\nb %p\nc %p\n", a, b, c);
    char *r = realloc(a, 600000);
    printf("r %p\n", (void *)r);
    r = realloc(r, 1000);                       /* shrinks below the threshold */
    char *m = mmap(NULL, 64 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("m %p\n", (void *)m);
    munmap(m + 8 * 4096, 8 * 4096);             /* a hole in the middle */
    munmap(m, 4 * 4096);                        /* the head */
    char *m2 = mremap(m + 16 * 4096, 48 * 4096, 96 * 4096, MREMAP_MAYMOVE);
    printf("m2 %p\n", (void *)m2);
    munmap(m2, 96 * 4096);
    munmap(m + 4 * 4096, 4 * 4096);
    free(b); free(c); free(small); free(z); free(pm); free(al); free(ma); free(va); free(pv);
    free(r);
    return 7;
}
"""


def test_objects_sizes_order_kinds_and_frees(compile_c, run_traced):
    exe = compile_c(SITES, name="sites", flags=NOBUILTIN)
    run = run_traced(exe)
    assert run.returncode == 7, run.stderr
    where = printed(run.stdout)
    t = run.trace()
    allocs = t.allocations.to_pylist()
    assert [a["size"] for a in allocs] == [200000, 400000, 300000, 1000000, 1 << 20, 1 << 19,
                                           1 << 18, 1 << 18, 1 << 18, 600000, 64 * 4096,
                                           96 * 4096]
    assert [a["kind"] for a in allocs] == [KIND[k] for k in (
        "MALLOC", "MALLOC", "MALLOC", "CALLOC", "POSIX_MEMALIGN", "ALIGNED_ALLOC", "MEMALIGN",
        "VALLOC", "PVALLOC", "REALLOC", "MMAP", "MREMAP")]
    assert allocs[0]["addr"] == where["a"] and allocs[9]["addr"] == where["r"]
    seqs = [a["seq"] for a in allocs]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    # two call sites -> two contexts; the same site twice -> one context
    assert allocs[0]["context"] == allocs[1]["context"]
    assert allocs[0]["context"] != allocs[2]["context"]
    assert all(a["context"] >= 1 for a in allocs)
    f0 = frames_of(t, allocs[0]["context"])
    assert f0[0][0] == str(exe) and len(f0) <= 8

    frees = t.frees.to_pylist()
    by_addr = {}
    for f in frees:
        by_addr.setdefault(f["addr"], []).append(f)
    # realloc: FREE(REALLOC) of the old object, then ALLOC(REALLOC); the shrink frees r
    assert by_addr[where["a"]][0]["kind"] == FREE["REALLOC"]
    assert by_addr[where["a"]][0]["seq"] < allocs[9]["seq"]
    assert by_addr[where["r"]][0]["kind"] == FREE["REALLOC"]
    assert by_addr[where["b"]][0]["kind"] == FREE["FREE"]
    m = where["m"]
    unmaps = sorted((f["addr"] - m, f["size"], f["kind"]) for f in frees
                    if m <= f["addr"] < m + 64 * 4096)
    assert unmaps == [(0, 4 * 4096, FREE["MUNMAP"]), (4 * 4096, 4 * 4096, FREE["MUNMAP"]),
                      (8 * 4096, 8 * 4096, FREE["MUNMAP"]),
                      (16 * 4096, 48 * 4096, FREE["MREMAP"])]
    assert by_addr[where["m2"]][0]["size"] == 96 * 4096
    # every heap object that was freed is closed; nothing below the threshold appears
    freed_heap = {f["addr"] for f in frees if f["kind"] in (FREE["FREE"], FREE["REALLOC"])}
    assert {a["addr"] for a in allocs if a["kind"] not in (KIND["MMAP"], KIND["MREMAP"])} \
        <= freed_heap
    assert t.ends.to_pylist()[0]["exit_status"] == 7


def test_same_site_same_context_across_pie_runs(compile_c, run_traced):
    exe = compile_c(SITES, name="sites_pie", flags=NOBUILTIN, pie=True)
    one, two = run_traced(exe), run_traced(exe)
    t1, t2 = one.trace(), two.trace()
    a1, a2 = t1.allocations.to_pylist(), t2.allocations.to_pylist()
    assert a1[0]["addr"] != a2[0]["addr"] or True  # ASLR usually moves them; not required
    for i in (0, 2):
        f1 = frames_of(t1, a1[i]["context"])
        f2 = frames_of(t2, a2[i]["context"])
        assert f1 == f2
    k1 = {r["context"]: r["key"] for r in t1.contexts.to_pylist()}
    k2 = {r["context"]: r["key"] for r in t2.contexts.to_pylist()}
    assert k1[a1[0]["context"]] == k2[a2[0]["context"]]
    assert k1[a1[0]["context"]] != k1[a1[2]["context"]]


CXX = r"""
#include <cstdio>
#include <new>
struct alignas(64) Big { char bytes[1 << 18]; };
int main() {
    char *a = new char[300000];
    Big *b = new Big;
    char *c = new (std::nothrow) char[200000];
    std::printf("a %p\nb %p\nc %p\n", (void *)a, (void *)b, (void *)c);
    delete[] a; delete b; delete[] c;
    return 0;
}
"""


def test_cxx_operator_new(tmp_path, run_traced):
    src = tmp_path / "cxx.cc"
    src.write_text(CXX)
    exe = tmp_path / "cxx"
    subprocess.run(["g++", "-O1", "-g", "-o", str(exe), str(src)], check=True)
    run = run_traced(exe)
    assert run.returncode == 0, run.stderr
    where = printed(run.stdout)
    t = run.trace()
    allocs = t.allocations.to_pylist()
    assert [(a["addr"], a["size"], a["kind"]) for a in allocs] == [
        (where["a"], 300000, KIND["NEW"]), (where["b"], 1 << 18, KIND["NEW"]),
        (where["c"], 200000, KIND["NEW"])]
    assert sorted(f["addr"] for f in t.frees.to_pylist()) == sorted(where.values())
    assert frames_of(t, allocs[0]["context"])[0][0] == str(exe)


def test_passive_without_output_and_on_bad_settings(compile_c, tmp_path):
    exe = compile_c(SITES, name="sites_passive", flags=NOBUILTIN)
    env = runtime_env(None)
    run = subprocess.run([str(exe)], env=env, capture_output=True, text=True)
    assert run.returncode == 7 and run.stderr == ""
    out = tmp_path / "bad"
    env = runtime_env(out, stack_depth="99")
    run = subprocess.run([str(exe)], env=env, capture_output=True, text=True)
    assert run.returncode == 7
    assert run.stderr.strip().splitlines() == [
        "objtier: OBJTIER_STACK_DEPTH=99 is not an integer in 1..32; not recording"]
    assert not out.exists()
