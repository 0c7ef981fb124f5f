"""A C program in two marked phases, for the tests of phases: "build" sweeps array x, then
"query" sweeps array y, each for about a second; both arrays live through both phases."""

from __future__ import annotations

SOURCE = r"""
#include <objtier/phase.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define MB (1UL << 20)
#define ARRAY (@MIB@ * MB)
static void sweep(volatile char *p, size_t n, double seconds) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        for (size_t i = 0; i < n; i += 4096) p[i]++;
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
}
int main(void) {
    char *x = malloc(ARRAY), *y = malloc(ARRAY);
    memset(x, 1, ARRAY); memset(y, 1, ARRAY);
    objtier_phase("build");
    sweep(x, ARRAY, 1.0);
    objtier_phase("query");
    sweep(y, ARRAY, 1.0);
    objtier_phase_end();
    printf("FOM phased=1 s time=2\n");
    free(x); free(y);
    return 0;
}
"""


def phased_source(array_mib: int) -> str:
    """The program's C source with two arrays of array_mib MiB each."""
    return SOURCE.replace("@MIB@", str(int(array_mib)))
