"""In the guest: the runtime's NUMA-tier plan enforcement (OBJTIER_TIER=numa). A planned-fast
object ends on node 0, a planned-slow one on node 1, and a split object splits at the planned
offset — checked page by page with move_pages; the trace holds the MBIND and RESIDENCY records.

The program is built and its context keys recorded on the host; the guest runs the same binary
and libraries (it chroots into the host's root), so the keys are the same there."""

from __future__ import annotations

import os
import subprocess

import pytest

from objtier import native
from objtier.analysis.objects import object_table
from objtier.trace import open_trace

pytestmark = pytest.mark.guest

MIB = 1 << 20
MBIND = 5
NOT_PRESENT = 0xFFFFFFFF
FAST, SLOW, SPLIT = 6 * MIB, 10 * MIB, 8 * MIB     # one size per call site

# Three anonymous mappings from three call sites, touched after allocation, then every page's
# node printed per object: "<name> pages=N node0=A node1=B absent=C first1=I last0=J"
# (I = first page index on node 1, J = last page index on node 0; -1 when none).
PROG = r"""
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#define MIB (1024 * 1024)
#define MAP(n) mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
__attribute__((noinline)) char *map_fast(size_t n) { char *p = MAP(n); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) char *map_slow(size_t n) { char *p = MAP(n); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) char *map_split(size_t n) { char *p = MAP(n); __asm__ volatile("" ::: "memory"); return p; }
static void where(const char *name, char *p, size_t n) {
    long pg = sysconf(_SC_PAGESIZE), count = (long)(n / pg);
    void **pages = malloc(count * sizeof *pages);
    int *status = malloc(count * sizeof *status);
    for (long i = 0; i < count; i++)
        pages[i] = p + i * pg;
    if (syscall(SYS_move_pages, 0, count, pages, NULL, status, 0) != 0) { perror("move_pages"); exit(2); }
    long n0 = 0, n1 = 0, absent = 0, first1 = -1, last0 = -1;
    for (long i = 0; i < count; i++) {
        if (status[i] == 0) { n0++; last0 = i; }
        else if (status[i] == 1) { n1++; if (first1 < 0) first1 = i; }
        else absent++;
    }
    printf("%s pages=%ld node0=%ld node1=%ld absent=%ld first1=%ld last0=%ld\n",
           name, count, n0, n1, absent, first1, last0);
}
int main(void) {
    char *f = map_fast(6 * MIB), *s = map_slow(10 * MIB), *x = map_split(8 * MIB);
    memset(f, 1, 6 * MIB);
    memset(s, 2, 10 * MIB);
    memset(x, 3, 8 * MIB);
    where("fast", f, 6 * MIB);
    where("slow", s, 10 * MIB);
    where("split", x, 8 * MIB);
    return 0;   /* the mappings stay: the exit residency pass sees them */
}
"""


def parse(out: str) -> dict[str, dict[str, int]]:
    rows = {}
    for line in out.splitlines():
        name, *fields = line.split()
        rows[name] = {k: int(v) for k, v in (f.split("=") for f in fields)}
    return rows


@pytest.fixture(scope="module")
def mbind_setup(testbed):
    """(binary, plan path, run dir): built on the host in the guest-visible run directory."""
    run = testbed.paths.run / "mbind"
    run.mkdir(parents=True, exist_ok=True)
    src = run / "mbind_prog.c"
    src.write_text(PROG)
    exe = run / "mbind_prog"
    subprocess.run(["gcc", "-std=gnu11", "-O1", "-g", "-fno-omit-frame-pointer", "-o", str(exe),
                    str(src)], check=True)
    rec = run / "rec"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBJTIER_")}
    env.update(LD_PRELOAD=str(native.runtime_library()), OBJTIER_OUTPUT=str(rec),
               OBJTIER_SAMPLER="none")
    subprocess.run([str(exe)], env=env, check=True, capture_output=True)
    table = object_table(open_trace(rec), labels=False)
    keys = dict(zip(table.column("size").to_pylist(), table.column("context_key").to_pylist()))
    plan = run / "plan.txt"
    plan.write_text("\n".join([
        "objtier-plan 1", "budget 10485760 4096", "phase * - *",
        f"{keys[FAST]} * {FAST} {FAST} fast {FAST} *",
        f"{keys[SLOW]} * {SLOW} {SLOW} slow 0 *",
        f"{keys[SPLIT]} 0 {SPLIT} {SPLIT} split {SPLIT // 2} *"]) + "\n")
    return exe, plan, run


def test_plan_places_objects_page_by_page(testbed, mbind_setup):
    exe, plan, run = mbind_setup
    out_dir = run / "enforced"
    rc, out, err = testbed.run([str(exe)], env={
        "LD_PRELOAD": str(native.runtime_library()), "OBJTIER_PLAN": str(plan),
        "OBJTIER_TIER": "numa", "OBJTIER_FAST_NODES": "0", "OBJTIER_SLOW_NODES": "1",
        "OBJTIER_SAMPLER": "none", "OBJTIER_OUTPUT": str(out_dir), "OBJTIER_RESIDENCY_MS": "0",
        "OBJTIER_LOG": "1"}, timeout=300)
    assert rc == 0, err
    where = parse(out)
    assert where["fast"]["node0"] == where["fast"]["pages"] == FAST // 4096, out
    assert where["slow"]["node1"] == where["slow"]["pages"] == SLOW // 4096, out
    half = SPLIT // 2 // 4096
    split = where["split"]
    assert (split["node0"], split["node1"]) == (half, half), out
    assert (split["last0"], split["first1"]) == (half - 1, half), out   # splits at the offset

    trace = open_trace(out_dir)
    binds = trace.placements.to_pylist()
    seqs = {a["size"]: a["seq"] for a in trace.allocations.to_pylist()}
    got = sorted((b["alloc_seq"], b["offset"], b["length"], b["nodemask"], b["result"])
                 for b in binds if b["action"] == MBIND)
    assert got == sorted([(seqs[FAST], 0, FAST, 1, 0), (seqs[SLOW], 0, SLOW, 2, 0),
                          (seqs[SPLIT], 0, SPLIT // 2, 1, 0),
                          (seqs[SPLIT], SPLIT // 2, SPLIT // 2, 2, 0)])
    resid = {}
    for r in trace.residency.to_pylist():           # the exit pass (RESIDENCY_MS=0)
        resid.setdefault(r["alloc_seq"], {})[r["node"]] = r["pages"]
    assert resid[seqs[FAST]] == {0: FAST // 4096}
    assert resid[seqs[SLOW]] == {1: SLOW // 4096}
    assert resid[seqs[SPLIT]] == {0: half, 1: half}
