"""A C program whose hot set alternates between two arrays: `rounds` times, phase "x" sweeps
array x `sweeps` times, then phase "y" sweeps array y as often (phase markers through
<objtier/phase.h>, which does nothing without the runtime). One whole-program plan can keep
only one of the arrays when the fast tier holds one; the other then faults on every page of
every sweep. It prints a checksum of both arrays and exits 0.

Usage: alternating MIB ROUNDS SWEEPS STRIDE (array size in MiB, stride in bytes)."""

from __future__ import annotations

SOURCE = r"""
#include <objtier/phase.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static uint64_t sweep(volatile unsigned char *p, size_t n, size_t stride, int times) {
    uint64_t sum = 0;
    for (int t = 0; t < times; t++)
        for (size_t i = 0; i < n; i += stride) {
            p[i] = (unsigned char)(p[i] + 1);
            sum += p[i];
        }
    return sum;
}
int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: alternating MIB ROUNDS SWEEPS STRIDE\n");
        return 2;
    }
    size_t n = (size_t)atol(argv[1]) << 20;
    int rounds = atoi(argv[2]), sweeps = atoi(argv[3]);
    size_t stride = (size_t)atol(argv[4]);
    if (!n || rounds < 1 || sweeps < 1 || !stride) {
        fprintf(stderr, "alternating: arguments out of range\n");
        return 2;
    }
    unsigned char *x = malloc(n), *y = malloc(n);
    if (!x || !y) {
        fprintf(stderr, "alternating: out of memory\n");
        return 1;
    }
    memset(x, 1, n);
    memset(y, 2, n);
    uint64_t sum = 0;
    for (int r = 0; r < rounds; r++) {
        objtier_phase("x");
        sum += sweep(x, n, stride, sweeps);
        objtier_phase("y");
        sum += sweep(y, n, stride, sweeps);
    }
    objtier_phase_end();
    uint64_t check = 0;
    for (size_t i = 0; i < n; i += 4096)
        check = check * 31 + x[i] + 7 * y[i];
    printf("alternating: sum %llu check %llu\n", (unsigned long long)sum,
           (unsigned long long)check);
    free(x);
    free(y);
    return 0;
}
"""
