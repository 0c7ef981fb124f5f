/*
 * A fixed workload for profiling the C-AMAT model with callgrind or perf (no Python in the
 * profile): the skylake preset of src/objtier/camat/model.py, one synthetic stream of the
 * shapes bench/camat_throughput.py times, fed in one call; one core, two for mix (80 % loads
 * and stores on 32 KiB both threads share, 15 % one sequential stream the threads
 * interleave, 5 % random over 128 MiB; a quarter stores).
 *
 *     camat_profile l1|seq|random|chase|mix [ACCESSES [PERIOD]]
 *     valgrind --tool=callgrind --toggle-collect=camat_feed camat_profile random 300000
 *
 * PERIOD > 0: sampled timing, one unit of 10 000 measured accesses per PERIOD (warm-up 500).
 * Prints the level totals, so that two builds can be checked for the same counts, and the CPU
 * time of feeding and finishing on stderr.
 */
#include "camat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    const char *kind = argc > 1 ? argv[1] : "random";
    long long n_arg = argc > 2 ? atoll(argv[2]) : 300000;
    long long period = argc > 3 ? atoll(argv[3]) : 0;
    int known = !strcmp(kind, "l1") || !strcmp(kind, "seq") || !strcmp(kind, "random") ||
                !strcmp(kind, "chase") || !strcmp(kind, "mix");
    if (!known || n_arg < 1 || n_arg > 100000000) {
        fprintf(stderr, "usage: camat_profile l1|seq|random|chase|mix [ACCESSES 1..100000000]\n");
        return 2;
    }
    size_t n = (size_t)n_arg;
    camat_config c = {
        .cache = {{32 << 10, 8, 4, 12, 0}, {1 << 20, 16, 14, 32, 0}, {22 << 20, 11, 50, 48, 0}},
        .line_bytes = 64,
        .cores = kind[0] == 'm' ? 2 : 1,
        .issue_width = 2,
        .window = 224,
        .lag = 256,
        .reorder = 65536,
        .mem_cycles = 250,
        .mem_mshrs = 1,
        .far_cycles = 9000,
        .coherence_cycles = 70,
        .page_shift = 12,
        .objects = 1,
        .regions = 1};
    camat_access *a = calloc(n, sizeof *a);
    if (!a) {
        fprintf(stderr, "camat_profile: out of memory\n");
        return 1;
    }
    uint64_t x = 88172645463325252ULL; /* xorshift64 */
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        a[i].flags = 8 << 8;
        if (kind[0] == 'l') /* 16 KiB loop */
            a[i].addr = 0x100000 + (i % 2048) * 8;
        else if (kind[0] == 's') /* 8 accesses per line */
            a[i].addr = 0x10000000 + (uint64_t)i * 8;
        else if (kind[0] == 'm') { /* the pick, then the address, from two more draws */
            uint64_t pick = x % 100, y = x * 0x9E3779B97F4A7C15ULL;
            a[i].addr = pick < 80   ? 0x100000 + (y >> 52) * 8
                        : pick < 95 ? 0x10000000 + (uint64_t)i * 8
                                    : 0x40000000 + (y >> 37) / 8 * 8;
            a[i].core = (uint32_t)(i % 2);
            a[i].flags |= (y & 3) == 0 ? CAMAT_WRITE : 0;
        } else /* random over 64 MiB; a chase depends on the access before */
            a[i].addr = 0x10000000 + (x % (1ULL << 26)) / 8 * 8;
        a[i].dep = kind[0] == 'c';
    }
    const char *err = NULL;
    camat_model *m = camat_create(&c, &err);
    if (!m) {
        fprintf(stderr, "camat_profile: %s\n", err);
        free(a);
        return 1;
    }
    const char *bad = period > 0 ? camat_sample(m, (uint64_t)period, 10000, 500) : NULL;
    if (bad) {
        fprintf(stderr, "camat_profile: bad sampling parameter %s\n", bad);
        camat_destroy(m);
        free(a);
        return 2;
    }
    clock_t t0 = clock();
    int rc = camat_feed(m, a, n);
    if (rc == 0) {
        camat_finish(m);
        double sec = (double)(clock() - t0) / CLOCKS_PER_SEC;
        fprintf(stderr, "cpu %.3f s, %.2f M accesses/s\n", sec,
                sec > 0 ? (double)n / sec / 1e6 : 0.0);
        const camat_counts *t = camat_totals(m);
        for (int l = 0; l < CAMAT_FAR; l++)
            printf("level %d: accesses %llu misses %llu pure misses %llu active cycles %llu "
                   "hit share %.6f pure share %.6f\n",
                   l, (unsigned long long)t[l].accesses, (unsigned long long)t[l].misses,
                   (unsigned long long)t[l].pure_misses, (unsigned long long)t[l].active_cycles,
                   t[l].hit_share, t[l].pure_share);
        printf("coherence misses %llu false sharing %llu invalidations %llu\n",
               (unsigned long long)t[0].coherence_misses, (unsigned long long)t[0].false_sharing,
               (unsigned long long)t[CAMAT_LLC].invalidations);
        printf("cycles %llu\n", (unsigned long long)camat_cycles(m));
    } else {
        fprintf(stderr, "camat_profile: %s\n", camat_error(m));
    }
    camat_destroy(m);
    free(a);
    return rc ? 1 : 0;
}
