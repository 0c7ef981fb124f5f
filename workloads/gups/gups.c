/*
 * gups: HPCC RandomAccess. Updates table[r & (size-1)] ^= r for 4 x size values r of the
 * primitive-polynomial sequence r' = (r << 1) ^ (r < 0 ? POLY : 0) (as a signed 64-bit value),
 * each thread starting at its own offset of the sequence (gups_starts).
 *
 * Large object: table, uint64[2^LOG2] (one allocation), random read-modify-write of one
 * 8-byte word per update; nothing else is large. Updates race between threads without
 * locks, as HPCC allows. Timed region: the updates. FoM: GUP/s = updates / 10^9 / seconds.
 * Verification (HPCC): replay the same updates serially (XOR undoes them) and count entries
 * with table[i] != i; at most 1% of the table may be wrong.
 */
#include <getopt.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../common/wl.h"

#define POLY   0x0000000000000007ULL
#define PERIOD 1317624576693539401LL

static inline uint64_t step(uint64_t r)
{
    return (r << 1) ^ ((int64_t)r < 0 ? POLY : 0);
}

/* The n-th value of the sequence that starts at 1 (value 0 = 1): x^n mod P in GF(2)[x],
 * by binary exponentiation. Squaring uses m2[j] = x^(2j) mod P. */
static uint64_t gups_starts(int64_t n)
{
    while (n < 0)
        n += PERIOD;
    while (n > PERIOD)
        n -= PERIOD;
    if (n == 0)
        return 1;
    uint64_t m2[64], t = 1;
    for (int j = 0; j < 64; j++) {
        m2[j] = t;
        t = step(step(t));
    }
    int i = 62;
    while (i >= 0 && !((n >> i) & 1))
        i--;
    uint64_t r = 2; /* x^1, for the leading bit of n */
    while (i > 0) {
        uint64_t sq = 0;
        for (int j = 0; j < 64; j++)
            if ((r >> j) & 1)
                sq ^= m2[j];
        r = sq;
        i--;
        if ((n >> i) & 1)
            r = step(r);
    }
    return r;
}

static void usage(void)
{
    printf("usage: gups [-l LOG2] [-u UPDATES] [-t THREADS]\n"
           "HPCC RandomAccess; prints giga-updates per second.\n"
           "  -l LOG2    table of 2^LOG2 uint64 words (default 24: 128 MiB); 4 x 2^LOG2 updates\n"
           "  -u UPDATES updates instead of 4 x 2^LOG2 (fewer for slow tiers; verified alike)\n"
           "  -t THREADS OpenMP threads\n"
           "  -h         this help\n");
}

int main(int argc, char **argv)
{
    wl_init(argv[0]);
    uint64_t log2size = 24, nupdates = 0;
    int c;
    opterr = 0;
    while ((c = getopt(argc, argv, ":l:s:u:t:h")) != -1) {
        switch (c) {
        case 'l':
        case 's': log2size = wl_parse_u64(c == 'l' ? "-l" : "-s", optarg, 10, 40); break;
        case 'u': nupdates = wl_parse_u64("-u", optarg, 1, 1ULL << 50); break;
        case 't': wl_set_threads(wl_parse_u64("-t", optarg, 1, 4096)); break;
        case 'h': usage(); return 0;
        default: wl_bad_option(optopt, NULL);
        }
    }
    if (optind < argc)
        wl_die(WL_EXIT_USAGE, "unexpected argument '%s' (try -h)", argv[optind]);
    const uint64_t size = 1ULL << log2size, mask = size - 1,
                   updates = nupdates ? nupdates : 4 * size;

    uint64_t *table = wl_aligned(4096, size * sizeof(uint64_t), "table");
#pragma omp parallel for schedule(static)
    for (uint64_t i = 0; i < size; i++)
        table[i] = i;
#pragma omp parallel
    (void)0; /* start the thread team before the clock */

    double t0 = wl_now();
#pragma omp parallel
    {
        uint64_t nt = (uint64_t)omp_get_num_threads(), id = (uint64_t)omp_get_thread_num();
        uint64_t lo = updates * id / nt, hi = updates * (id + 1) / nt;
        uint64_t r = gups_starts((int64_t)lo);
        for (uint64_t i = lo; i < hi; i++) {
            r = step(r);
            uint64_t *p = &table[r & mask];
            /* Relaxed atomics compile to plain loads/stores: racing updates may be lost. */
            __atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) ^ r, __ATOMIC_RELAXED);
        }
    }
    double secs = wl_now() - t0;

    uint64_t r = gups_starts(0);
    for (uint64_t i = 0; i < updates; i++) {
        r = step(r);
        table[r & mask] ^= r;
    }
    uint64_t errors = 0;
#pragma omp parallel for reduction(+ : errors)
    for (uint64_t i = 0; i < size; i++)
        errors += table[i] != i;
    printf("gups: table 2^%llu words (%.1f MiB), %llu updates, %d threads\n",
           (unsigned long long)log2size, (double)size * 8.0 / 1048576.0,
           (unsigned long long)updates, omp_get_max_threads());
    if ((double)errors > 0.01 * (double)size)
        wl_die(WL_EXIT_FAIL, "verification failed: %llu of %llu entries wrong, above HPCC's 1%%",
               (unsigned long long)errors, (unsigned long long)size);
    printf("verification: passed (%llu of %llu entries wrong, %.4f%%; HPCC allows 1%%)\n",
           (unsigned long long)errors, (unsigned long long)size,
           100.0 * (double)errors / (double)size);
    wl_fom("gups", (double)updates / secs / 1e9, "GUP/s", secs);
    free(table);
    return 0;
}
