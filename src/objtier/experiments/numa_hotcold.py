"""A small hot/cold program for the NUMA tier: one array used over and over, one touched once.

    hotcold HOT_MIB COLD_MIB SECS

allocates the cold array (call site `alloc_cold`) and writes every page once, then the hot array
(`alloc_hot`) and writes every page, then re-touches every page of the hot array (read + write of
one byte per 4 KiB page) until SECS seconds have passed. It prints where each array's pages are
(move_pages(2) query, every page):

    hot pages=N node0=A node1=B absent=C
    cold pages=N node0=A node1=B absent=C
    FOM hot_passes=<passes per second> passes/s time=<seconds of the re-touch loop>

and exits without freeing, so the runtime's exit residency pass still sees both arrays. The
cold array is older on the LRU: when node 0 fills, it is what the kernel demotes first; hot
pages that land on node 1 take NUMA-balancing hint faults and are promoted in tiering mode.
No libnuma (raw system calls), so the binary built on the host runs in the guest unchanged.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

SOURCE = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#define MIB (1024UL * 1024UL)
#define PAGE 4096UL
#define BATCH 4096UL

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
__attribute__((noinline)) char *alloc_cold(size_t n) { char *p = malloc(n); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) char *alloc_hot(size_t n) { char *p = malloc(n); __asm__ volatile("" ::: "memory"); return p; }

static void where(const char *name, char *p, size_t bytes) {
    /* whole pages inside the block only */
    char *base = (char *)(((unsigned long)p + PAGE - 1) & ~(PAGE - 1));
    size_t n = (size_t)(p + bytes - base) / PAGE, c0 = 0, c1 = 0, absent = 0;
    void **pages = malloc(BATCH * sizeof *pages);
    int *status = malloc(BATCH * sizeof *status);
    for (size_t first = 0; first < n; first += BATCH) {
        size_t m = n - first < BATCH ? n - first : BATCH;
        for (size_t i = 0; i < m; i++) pages[i] = base + (first + i) * PAGE;
        if (syscall(SYS_move_pages, 0, m, pages, NULL, status, 0) != 0) { perror("move_pages"); exit(2); }
        for (size_t i = 0; i < m; i++) {
            if (status[i] == 0) c0++;
            else if (status[i] == 1) c1++;
            else absent++;
        }
    }
    printf("%s pages=%zu node0=%zu node1=%zu absent=%zu\n", name, n, c0, c1, absent);
    free(pages);
    free(status);
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: hotcold HOT_MIB COLD_MIB SECS\n"); return 2; }
    size_t hot_n = strtoul(argv[1], NULL, 10) * MIB, cold_n = strtoul(argv[2], NULL, 10) * MIB;
    double secs = atof(argv[3]);
    char *cold = alloc_cold(cold_n);
    if (!cold) { perror("malloc cold"); return 1; }
    memset(cold, 1, cold_n);
    volatile char *hot = alloc_hot(hot_n);
    if (!hot) { perror("malloc hot"); return 1; }
    memset((char *)hot, 2, hot_n);
    double t0 = now_s(), t;
    long passes = 0;
    do {
        for (size_t i = 0; i < hot_n; i += PAGE) hot[i] = hot[i] + 1;
        passes++;
        t = now_s();
    } while (t - t0 < secs);
    where("hot", (char *)hot, hot_n);
    where("cold", cold, cold_n);
    printf("FOM hot_passes=%.3f passes/s time=%.3f\n", passes / (t - t0), t - t0);
    fflush(stdout);
    return 0;
}
"""


def build_hotcold(dest: Path) -> Path:
    """Compile the program to `dest` (frame pointers and -O1, as the workloads); returns dest."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    src = dest.with_suffix(".c")
    src.write_text(SOURCE)
    subprocess.run(["gcc", "-std=gnu11", "-O1", "-g", "-fno-omit-frame-pointer", "-o", str(dest),
                    str(src)], check=True)
    return dest


def parse_where(text: str) -> dict[str, dict[str, int]]:
    """The program's `<name> pages=N node0=A ...` lines -> {name: {field: value}}."""
    rows: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) > 1 and words[1].startswith("pages="):
            rows[words[0]] = {k: int(v) for k, v in (w.split("=") for w in words[1:])}
    return rows
