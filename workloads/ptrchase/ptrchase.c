/*
 * ptrchase: dependent pointer chasing through one buffer (latency bound).
 *
 * The buffer is an array of elements of ELEM bytes (>= 128, a multiple of 64, so no two
 * pointers share a cache line or an adjacent-line prefetch pair). Each element holds
 *   next  pointer to the following element of the cycle
 *   pos   the element's position along its cycle (0 .. len-1), used for verification
 * and padding. Sattolo's algorithm makes one uniformly random Hamiltonian cycle through all
 * elements (default), or, with -r, one cycle per thread through that thread's own region.
 * Without -r, thread i starts at position i x len / threads of the shared cycle.
 *
 * Large objects:
 *   buffer  SIZE bytes (one posix_memalign allocation): one random 8-byte read per
 *           dereference, no writes during the timed region
 *   order   uint64[elements], a temporary permutation freed before the timed region
 * Timed region: STEPS dereferences per thread. FoM: dereferences per second, all threads.
 * Verification: each thread's final element has pos = (start + STEPS) mod len, and the cycle
 * was checked (untimed) to be one cycle through every element of its region.
 */
#include <getopt.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/wl.h"

typedef struct elem {
    struct elem *next;
    uint64_t pos;
} elem;

static inline elem *at(char *buf, uint64_t elem_bytes, uint64_t i)
{
    return (elem *)(buf + i * elem_bytes);
}

/* Link elements first .. first+len-1 into one random cycle; pos follows the cycle from
 * element `first`. order is scratch of len entries. */
static void make_cycle(char *buf, uint64_t elem_bytes, uint64_t first, uint64_t len,
                       uint64_t *order, uint64_t seed)
{
    wl_rng r = {wl_hash64(seed ^ first)};
    for (uint64_t i = 0; i < len; i++)
        order[i] = first + i;
    /* Sattolo: a uniformly random cyclic permutation (j < i, never j == i). */
    for (uint64_t i = len - 1; i > 0; i--) {
        uint64_t j = wl_rng_below(&r, i);
        uint64_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    /* order[i] -> order[i+1]: walk order as the cycle; rotate so that `first` is pos 0. */
    uint64_t zero = 0;
    for (uint64_t i = 0; i < len; i++)
        if (order[i] == first)
            zero = i;
    for (uint64_t i = 0; i < len; i++) {
        elem *e = at(buf, elem_bytes, order[i]);
        e->next = at(buf, elem_bytes, order[(i + 1) % len]);
        e->pos = (i + len - zero) % len;
    }
}

/* 1 when elements first .. first+len-1 form one cycle: every next pointer stays in the
 * region and lands on the element with the following pos, and the pos values are a
 * permutation of 0 .. len-1. Independent loads, so this runs at bandwidth, not latency. */
static int check_cycle(char *buf, uint64_t elem_bytes, uint64_t first, uint64_t len)
{
    uint64_t *seen = wl_calloc((len + 63) / 64, sizeof(uint64_t), "cycle check bitmap");
    const char *lo = buf + first * elem_bytes, *hi = buf + (first + len) * elem_bytes;
    int ok = 1;
#pragma omp parallel for schedule(static) reduction(&& : ok)
    for (uint64_t i = first; i < first + len; i++) {
        elem *e = at(buf, elem_bytes, i);
        const char *p = (const char *)e->next;
        if (e->pos >= len || p < lo || p >= hi || (uint64_t)(p - buf) % elem_bytes ||
            e->next->pos != (e->pos + 1) % len) {
            ok = 0;
            continue;
        }
        uint64_t bit = 1ULL << (e->pos & 63);
        if (__atomic_fetch_or(&seen[e->pos >> 6], bit, __ATOMIC_RELAXED) & bit)
            ok = 0;
    }
    free(seen);
    return ok;
}

static void usage(void)
{
    printf("usage: ptrchase [-s SIZE] [-e ELEM] [-n STEPS] [-t THREADS] [-r] [-S SEED]\n"
           "Dependent random pointer chasing; prints dereferences per second.\n"
           "  -s SIZE    buffer size, with K/M/G suffix (default 256M)\n"
           "  -e ELEM    bytes per element, multiple of 64, at least 128 (default 128)\n"
           "  -n STEPS   dereferences per thread (default 2000000)\n"
           "  -t THREADS threads chasing concurrently (default: the OpenMP default)\n"
           "  -r         one cycle per thread through its own region (default: one cycle\n"
           "             through the whole buffer, threads start at spread-out positions)\n"
           "  -S SEED    seed of the random cycle (default 1)\n"
           "  -h         this help\n");
}

int main(int argc, char **argv)
{
    wl_init(argv[0]);
    uint64_t size = 256ULL << 20, elem_bytes = 128, steps = 2000000, threads = 0, seed = 1;
    int regions = 0, c;
    opterr = 0;
    while ((c = getopt(argc, argv, ":s:e:n:t:rS:h")) != -1) {
        switch (c) {
        case 's': size = wl_parse_bytes("-s", optarg, 4096, 1ULL << 42); break;
        case 'e': elem_bytes = wl_parse_u64("-e", optarg, 128, 1 << 20); break;
        case 'n': steps = wl_parse_u64("-n", optarg, 1, 1ULL << 40); break;
        case 't': threads = wl_parse_u64("-t", optarg, 1, 4096); break;
        case 'r': regions = 1; break;
        case 'S': seed = wl_parse_u64("-S", optarg, 0, UINT64_MAX); break;
        case 'h': usage(); return 0;
        default: wl_bad_option(optopt, NULL);
        }
    }
    if (optind < argc)
        wl_die(WL_EXIT_USAGE, "unexpected argument '%s' (try -h)", argv[optind]);
    if (elem_bytes % 64)
        wl_die(WL_EXIT_USAGE, "-e must be a multiple of 64, got %llu",
               (unsigned long long)elem_bytes);
    wl_set_threads(threads);
    int nthreads = threads ? (int)threads : omp_get_max_threads();
    uint64_t elements = size / elem_bytes;
    if (elements < 2 * (uint64_t)nthreads)
        wl_die(WL_EXIT_USAGE, "buffer of %llu bytes is too small for %d threads",
               (unsigned long long)size, nthreads);

    char *buf = wl_aligned(4096, elements * elem_bytes, "buffer");
    memset(buf, 0, elements * elem_bytes);
    uint64_t *order = wl_malloc(elements * sizeof(uint64_t), "cycle order");
    uint64_t ncycles = regions ? (uint64_t)nthreads : 1;
    uint64_t per = elements / ncycles; /* region length; the last region takes the rest */
    for (uint64_t k = 0; k < ncycles; k++) {
        uint64_t first = k * per, len = k + 1 == ncycles ? elements - first : per;
        make_cycle(buf, elem_bytes, first, len, order, seed);
        if (!check_cycle(buf, elem_bytes, first, len))
            wl_die(WL_EXIT_FAIL, "verification failed: cycle %llu is not Hamiltonian",
                   (unsigned long long)k);
    }
    free(order);

    /* Start of thread i: its region's first element (-r), or position i*len/threads. */
    elem **start = wl_calloc((size_t)nthreads, sizeof(elem *), "thread starts");
    uint64_t *start_pos = wl_calloc((size_t)nthreads, sizeof(uint64_t), "thread start positions");
    if (regions) {
        for (int i = 0; i < nthreads; i++)
            start[i] = at(buf, elem_bytes, (uint64_t)i * per);
    } else {
        /* One sequential scan finds the elements at positions i x elements / nthreads. */
#pragma omp parallel for schedule(static)
        for (uint64_t j = 0; j < elements; j++) {
            elem *e = at(buf, elem_bytes, j);
            for (int i = 0; i < nthreads; i++)
                if (e->pos == (uint64_t)i * elements / (uint64_t)nthreads)
                    start[i] = e;
        }
    }
    for (int i = 0; i < nthreads; i++)
        start_pos[i] = start[i]->pos;
    elem **finish = wl_calloc((size_t)nthreads, sizeof(elem *), "thread finishes");

    /* Start the OpenMP thread team before the clock starts. */
#pragma omp parallel num_threads(nthreads)
    finish[omp_get_thread_num()] = NULL;

    double t0 = wl_now();
#pragma omp parallel num_threads(nthreads)
    {
        int id = omp_get_thread_num();
        elem *e = start[id];
        for (uint64_t i = 0; i < steps; i++)
            e = e->next;
        finish[id] = e;
    }
    double secs = wl_now() - t0;

    for (int i = 0; i < nthreads; i++) {
        uint64_t len =
            regions ? (i + 1 == nthreads ? elements - (uint64_t)i * per : per) : elements;
        if (finish[i]->pos != (start_pos[i] + steps) % len)
            wl_die(WL_EXIT_FAIL, "verification failed: thread %d ended at the wrong element", i);
    }
    printf("ptrchase: %llu elements of %llu bytes (%.1f MiB), %d threads, %s, %llu steps each\n",
           (unsigned long long)elements, (unsigned long long)elem_bytes,
           (double)(elements * elem_bytes) / 1048576.0, nthreads,
           regions ? "one cycle per thread region" : "one cycle through the buffer",
           (unsigned long long)steps);
    double derefs = (double)steps * nthreads;
    printf("latency: %.1f ns per dereference per thread\n", secs * 1e9 / (double)steps);
    printf("verification: passed\n");
    wl_fom("ptrchase", derefs / secs, "deref/s", secs);
    free(start);
    free(start_pos);
    free(finish);
    free(buf);
    return 0;
}
