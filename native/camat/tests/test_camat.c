/*
 * C unit tests of the C-AMAT model on synthetic access streams whose concurrency is known:
 * a dependent pointer chase (one miss at a time), independent streaming loads (as many misses
 * as miss-status registers), two cores writing neighbouring bytes of one line (false sharing)
 * and of separate lines, an L1 miss merging with the fetch in flight, the page-LRU local
 * buffer, true LRU in a cache set (recency order in nibbles up to 16 ways, in bytes above),
 * clock-ordered interleaving (turns longer than a core's first lane ring included), sampled
 * timing (exact counts, units, accounting), the per-core counts of held lines that
 * let coherence skip look-ups (kept true, and the same counts as asking every core) and bad
 * configurations.
 * Each failed check prints its line; the program exits non-zero on any failure.
 */
#include "camat.h"
#include "cm_cache.h"
#include "cm_local.h"
#include "cm_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static camat_config base_config(uint32_t cores)
{
    camat_config c = {
        .cache = {{32 << 10, 8, 4, 10, 0}, {256 << 10, 8, 12, 16, 0}, {2 << 20, 16, 40, 32, 0}},
        .line_bytes = 64,
        .cores = cores,
        .issue_width = 2,
        .window = 128,
        .lag = 64,
        .mem_cycles = 200,
        .mem_mshrs = 1,
        .far_cycles = 3000,
        .coherence_cycles = 60,
        .page_shift = 12,
        .local_pages = 0,
        .objects = 3,
        .regions = 2};
    return c;
}

/* H/C_H + pMR * pAMP / C_M from the counts, as the Python side computes it. */
static double camat_terms(const camat_counts *c)
{
    double n = (double)c->accesses;
    double h = c->hit_phase / n, ch = (double)c->hit_phase / (double)c->hit_cycles;
    double v = h / ch;
    if (c->pure_misses) {
        double pmr = c->pure_misses / n, pamp = (double)c->pure_phase / (double)c->pure_misses;
        double cm = (double)c->pure_phase / (double)c->pure_cycles;
        v += pmr * pamp / cm;
    }
    return v;
}

static double miss_concurrency(const camat_counts *c)
{
    return (double)c->pure_phase / (double)c->pure_cycles;
}

static void check_apc(const camat_counts *c)
{
    double apc = (double)c->accesses / (double)c->active_cycles;
    CHECK(fabs(apc * camat_terms(c) - 1.0) < 0.02);
}

/* Sums over objects (and over regions) equal the level's totals. */
static void check_sums(camat_model *m, const camat_config *cfg)
{
    for (int l = 0; l < CAMAT_LEVELS; l++) {
        const camat_counts *t = &camat_totals(m)[l];
        for (int pass = 0; pass < 2; pass++) {
            uint32_t n = pass ? cfg->regions : cfg->objects;
            const camat_counts *p =
                (pass ? camat_by_region(m) : camat_by_object(m)) + (size_t)l * n;
            uint64_t acc = 0, mis = 0, pm = 0, pp = 0;
            double hs = 0, ps = 0, ms = 0;
            for (uint32_t i = 0; i < n; i++) {
                acc += p[i].accesses;
                mis += p[i].misses;
                pm += p[i].pure_misses;
                pp += p[i].pure_phase;
                hs += p[i].hit_share;
                ps += p[i].pure_share;
                ms += p[i].miss_share;
            }
            CHECK(acc == t->accesses && mis == t->misses && pm == t->pure_misses &&
                  pp == t->pure_phase);
            CHECK(fabs(hs - (double)t->hit_cycles) <= 1e-6 * (1 + (double)t->hit_cycles));
            CHECK(fabs(ps - (double)t->pure_cycles) <= 1e-6 * (1 + (double)t->pure_cycles));
            CHECK(fabs(ms - (double)t->miss_cycles) <= 1e-6 * (1 + (double)t->miss_cycles));
        }
    }
}

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void test_pointer_chase(void)
{
    printf("pointer chase: miss concurrency 1\n");
    camat_config cfg = base_config(1);
    const char *err;
    camat_model *m = camat_create(&cfg, &err);
    CHECK(m != NULL);
    enum { N = 20000 };
    camat_access *a = calloc(N, sizeof *a);
    uint64_t s = 88172645463325252ULL;
    for (int i = 0; i < N; i++) /* random lines of a 256 MiB array, each on the previous */
        a[i] = (camat_access){.addr = 0x10000000ULL + (rng(&s) % (1 << 22)) * 64,
                              .object = 1,
                              .region = 1,
                              .flags = 8 << 8,
                              .dep = i ? 1 : 0};
    CHECK(camat_feed(m, a, N) == 0);
    camat_finish(m);
    const camat_counts *t = camat_totals(m);
    CHECK(t[CAMAT_L1].accesses == N);
    CHECK(t[CAMAT_L1].misses > N * 9 / 10);
    double cm1 = miss_concurrency(&t[CAMAT_L1]), cmm = t[CAMAT_MEM].accesses ? 1.0 : 0;
    printf("  L1 C_M %.3f  MR %.3f  C-AMAT %.1f\n", cm1, (double)t[CAMAT_L1].misses / N,
           camat_terms(&t[CAMAT_L1]));
    CHECK(cm1 > 0.95 && cm1 < 1.05);
    CHECK(cmm == 1.0);
    for (int l = 0; l < CAMAT_FAR; l++)
        if (t[l].accesses)
            check_apc(&t[l]);
    /* each miss waits its full latency: L1 C-AMAT is about the memory round trip */
    CHECK(camat_terms(&t[CAMAT_L1]) > 200);
    check_sums(m, &cfg);
    camat_destroy(m);
    free(a);
}

static void test_streaming(void)
{
    printf("independent streaming loads: miss concurrency near the L1 registers\n");
    camat_config cfg = base_config(1);
    camat_model *m = camat_create(&cfg, NULL);
    enum { N = 40000 };
    camat_access *a = calloc(N, sizeof *a);
    for (int i = 0; i < N; i++) /* one load per line, no dependence */
        a[i] = (camat_access){.addr = 0x40000000ULL + (uint64_t)i * 64,
                              .object = 2,
                              .region = i & 1,
                              .flags = 8 << 8};
    CHECK(camat_feed(m, a, N) == 0);
    camat_finish(m);
    const camat_counts *t = camat_totals(m);
    double cm1 = miss_concurrency(&t[CAMAT_L1]);
    printf("  L1 C_M %.3f (registers %u)  C-AMAT %.2f  APC %.3f\n", cm1, cfg.cache[0].mshrs,
           camat_terms(&t[CAMAT_L1]), (double)t[0].accesses / (double)t[0].active_cycles);
    CHECK(cm1 > 0.8 * cfg.cache[0].mshrs && cm1 <= cfg.cache[0].mshrs + 1e-9);
    for (int l = 0; l < CAMAT_FAR; l++)
        if (t[l].accesses)
            check_apc(&t[l]);
    check_sums(m, &cfg);
    /* the same stream with dependences is serial: far higher C-AMAT */
    double parallel = camat_terms(&t[CAMAT_L1]);
    camat_destroy(m);
    m = camat_create(&cfg, NULL);
    for (int i = 1; i < N; i++)
        a[i].dep = 1;
    CHECK(camat_feed(m, a, N) == 0);
    camat_finish(m);
    double serial = camat_terms(&camat_totals(m)[CAMAT_L1]);
    CHECK(serial > 5 * parallel);
    camat_destroy(m);
    free(a);
}

static void test_hits_overlap(void)
{
    printf("hits overlap hits: C_H up to issue width x hit latency\n");
    camat_config cfg = base_config(1);
    camat_model *m = camat_create(&cfg, NULL);
    enum { N = 10000 };
    camat_access *a = calloc(N, sizeof *a);
    for (int i = 0; i < N; i++) /* 16 KiB loop: all L1 hits after the first pass */
        a[i] = (camat_access){.addr = 0x1000 + (uint64_t)(i % 2048) * 8, .flags = 8 << 8};
    CHECK(camat_feed(m, a, N) == 0);
    camat_finish(m);
    const camat_counts *t = camat_totals(m);
    double ch = (double)t[0].hit_phase / (double)t[0].hit_cycles;
    printf("  L1 C_H %.2f  H %.2f\n", ch, (double)t[0].hit_phase / N);
    CHECK(ch > 7.0 && ch <= 8.0 + 1e-9); /* 2 per cycle x 4 cycles */
    check_apc(&t[0]);
    camat_destroy(m);
    free(a);
}

/* L1 of one set of two ways: A, B, C miss (C evicts A while A's fetch is in flight), then A
 * again: a miss that merges with the fetch in flight (it goes no deeper), unless it is
 * issued after that fetch returned (dep on C), or another line shares A's register bucket. */
static uint64_t l2_accesses_after_reaccess(int after_return, uint64_t b_line)
{
    camat_config cfg = base_config(1);
    cfg.cache[0] = (camat_cache){128, 2, 4, 10, 0};
    camat_model *m = camat_create(&cfg, NULL);
    uint64_t a_line = 0x10000 / 64;
    camat_access a[4] = {{.addr = a_line * 64, .flags = 8 << 8},
                         {.addr = b_line * 64, .flags = 8 << 8},
                         {.addr = 0x30000, .flags = 8 << 8},
                         {.addr = a_line * 64, .flags = 8 << 8, .dep = after_return ? 1 : 0}};
    CHECK(camat_feed(m, a, 4) == 0);
    camat_finish(m);
    const camat_counts *t = camat_totals(m);
    CHECK(t[0].accesses == 4 && t[0].misses == 4);
    uint64_t n = t[1].accesses;
    camat_destroy(m);
    return n;
}

static void test_merge_in_flight(void)
{
    printf("an L1 miss on a line in flight merges with its fetch\n");
    CHECK(l2_accesses_after_reaccess(0, 0x20000 / 64) == 3);
    CHECK(l2_accesses_after_reaccess(0, 0x10000 / 64 + 256) == 3); /* same bucket as A */
    CHECK(l2_accesses_after_reaccess(1, 0x20000 / 64) == 4);
}

/* Two cores increment their own counter; the counters share a line or not. */
static void sharing(int padded, camat_counts *out)
{
    camat_config cfg = base_config(2);
    camat_model *m = camat_create(&cfg, NULL);
    enum { N = 4000 };
    camat_access *a = calloc(N, sizeof *a);
    for (int i = 0; i < N; i++) {
        uint32_t c = (uint32_t)(i & 1);
        uint64_t addr = 0x2000 + (padded ? c * 64 : c * 4);
        a[i] = (camat_access){.addr = addr,
                              .core = c,
                              .object = 1,
                              .region = 1,
                              .flags = (uint16_t)((4 << 8) | ((i >> 1) & 1 ? CAMAT_WRITE : 0))};
    }
    CHECK(camat_feed(m, a, N) == 0);
    camat_finish(m);
    *out = camat_totals(m)[CAMAT_L1];
    out->invalidations = camat_totals(m)[CAMAT_LLC].invalidations;
    check_sums(m, &cfg);
    check_apc(&camat_totals(m)[CAMAT_L1]);
    camat_destroy(m);
    free(a);
}

static void test_false_sharing(void)
{
    printf("false sharing: invalidation misses on a shared line, none when padded\n");
    camat_counts shared, padded;
    sharing(0, &shared);
    sharing(1, &padded);
    printf("  shared: coherence misses %llu (false %llu), invalidations %llu, C-AMAT %.2f\n",
           (unsigned long long)shared.coherence_misses, (unsigned long long)shared.false_sharing,
           (unsigned long long)shared.invalidations, camat_terms(&shared));
    printf("  padded: coherence misses %llu, C-AMAT %.2f\n",
           (unsigned long long)padded.coherence_misses, camat_terms(&padded));
    CHECK(shared.coherence_misses > 500);
    CHECK(shared.false_sharing == shared.coherence_misses);
    CHECK(shared.invalidations > 500);
    CHECK(padded.coherence_misses == 0 && padded.invalidations == 0);
    CHECK(camat_terms(&shared) > 2 * camat_terms(&padded));
}

/* Two threads that ran in turns (1000 accesses each) on a busy machine: in stream order they
 * never overlap; interleaved by the model's clocks they do, and share the line again. */
static void test_clock_interleaving(void)
{
    printf("clock-ordered interleaving overlaps threads that ran in turns\n");
    camat_counts by_stream, by_clock;
    enum { N = 8000 };
    camat_access *a = calloc(N, sizeof *a);
    for (int i = 0; i < N; i++) {
        uint32_t c = (uint32_t)((i / 1000) & 1);
        a[i] = (camat_access){.addr = 0x2000 + c * 4,
                              .core = c,
                              .object = 1,
                              .region = 1,
                              .flags = (uint16_t)((4 << 8) | (i & 1 ? CAMAT_WRITE : 0))};
    }
    for (int pass = 0; pass < 2; pass++) {
        camat_config cfg = base_config(2);
        cfg.reorder = pass ? 4096 : 0;
        camat_model *m = camat_create(&cfg, NULL);
        CHECK(camat_feed(m, a, N) == 0);
        camat_finish(m);
        *(pass ? &by_clock : &by_stream) = camat_totals(m)[CAMAT_L1];
        check_sums(m, &cfg);
        for (int l = 0; l < CAMAT_FAR; l++)
            if (camat_totals(m)[l].accesses)
                check_apc(&camat_totals(m)[l]);
        camat_destroy(m);
    }
    printf("  coherence misses: stream order %llu, clock order %llu\n",
           (unsigned long long)by_stream.coherence_misses,
           (unsigned long long)by_clock.coherence_misses);
    CHECK(by_stream.accesses == N && by_clock.accesses == N);
    CHECK(by_stream.coherence_misses < 20);
    CHECK(by_clock.coherence_misses > 1000);
    free(a);
}

/* Threads in turns of 5000 accesses, longer than a lane's first ring: in clock order with a
 * window of 16384 the turns overlap (each core's lane holds thousands of accesses), exact and
 * sampled; a core out of range, dealt late in the stream, is an error. */
static void test_clock_long_turns(void)
{
    printf("clock order over turns longer than a lane's first ring\n");
    enum { N = 40000, TURN = 5000 };
    camat_access *a = calloc(N, sizeof *a);
    for (int i = 0; i < N; i++) {
        uint32_t c = (uint32_t)((i / TURN) & 1);
        a[i] = (camat_access){.addr = 0x2000 + c * 4,
                              .core = c,
                              .object = 1,
                              .region = 1,
                              .flags = (uint16_t)((4 << 8) | (i & 1 ? CAMAT_WRITE : 0))};
    }
    uint64_t coherence[3];
    for (int pass = 0; pass < 3; pass++) { /* stream order, clock order, clock order sampled */
        camat_config cfg = base_config(2);
        cfg.reorder = pass ? 16384 : 0;
        camat_model *m = camat_create(&cfg, NULL);
        if (pass == 2)
            CHECK(camat_sample(m, 8000, 2000, 200) == NULL);
        CHECK(camat_feed(m, a, N) == 0);
        camat_finish(m);
        CHECK(camat_totals(m)[CAMAT_L1].accesses == N);
        coherence[pass] = camat_totals(m)[CAMAT_L1].coherence_misses;
        camat_destroy(m);
    }
    printf("  coherence misses: stream order %llu, clock order %llu, sampled %llu\n",
           (unsigned long long)coherence[0], (unsigned long long)coherence[1],
           (unsigned long long)coherence[2]);
    CHECK(coherence[0] < 20);
    CHECK(coherence[1] > 5000);
    CHECK(coherence[2] > 1000);
    a[N - 1].core = 2;
    for (int pass = 0; pass < 2; pass++) {
        camat_config cfg = base_config(2);
        cfg.reorder = 16384;
        camat_model *m = camat_create(&cfg, NULL);
        if (pass)
            CHECK(camat_sample(m, 8000, 2000, 200) == NULL);
        CHECK(camat_feed(m, a, N) == -1);
        CHECK(camat_error(m) && !strcmp(camat_error(m), "access core out of range"));
        camat_destroy(m);
    }
    free(a);
}

/* Core c's count of copies in bucket at, recounted from its caches' tags. */
static uint64_t copies_in(const camat_model *m, const core *k, uint64_t at)
{
    uint64_t n = 0;
    const cm_cache *cs[2] = {&k->l1, &k->l2};
    for (int i = 0; i < 2; i++)
        for (uint64_t s = 0; s < cs[i]->sets * cs[i]->ways; s++)
            n += cs[i]->tag[s] && cm_held_at(m, cs[i]->tag[s] - 1) == at;
    return n;
}

static int same_counts(const camat_model *a, const camat_model *b, const camat_config *cfg)
{
    size_t no = (size_t)CAMAT_LEVELS * cfg->objects, nr = (size_t)CAMAT_LEVELS * cfg->regions;
    return !memcmp(camat_totals(a), camat_totals(b), CAMAT_LEVELS * sizeof(camat_counts)) &&
           !memcmp(camat_by_object(a), camat_by_object(b), no * sizeof(camat_counts)) &&
           !memcmp(camat_by_region(a), camat_by_region(b), nr * sizeof(camat_counts)) &&
           camat_cycles(a) == camat_cycles(b);
}

static void test_held_counts(void)
{
    printf("held-line counts match the caches and change no count\n");
    enum { N = 60000 };
    camat_access *a = calloc(N, sizeof *a);
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < N; i++) { /* shared hot lines with stores, a stream, random lines */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t pick = x % 100, y = x * 0x9E3779B97F4A7C15ULL;
        uint64_t addr = pick < 70   ? 0x100000 + (y >> 49) * 8
                        : pick < 90 ? 0x10000000 + (uint64_t)i * 8
                                    : 0x40000000 + (y >> 40) / 8 * 8;
        a[i] = (camat_access){.addr = addr,
                              .core = (uint32_t)(y >> 20) % 3,
                              .object = (uint32_t)(i % 3),
                              .region = (uint32_t)(i / 7000) % 2,
                              .flags = (uint16_t)((8 << 8) | ((y & 3) == 0 ? CAMAT_WRITE : 0))};
    }
    for (int pass = 0; pass < 3; pass++) { /* recorded order, clock order, sampled */
        camat_config cfg = base_config(3);
        cfg.cache[0] = (camat_cache){4 << 10, 4, 4, 10, 0};
        cfg.cache[1] = (camat_cache){16 << 10, 8, 12, 16, 0};
        cfg.reorder = pass ? 4096 : 0;
        camat_model *m = camat_create(&cfg, NULL), *all = camat_create(&cfg, NULL);
        /* every bucket stuck: no look-up is skipped, as before the counts were kept */
        for (uint32_t c = 0; c < cfg.cores; c++)
            memset(all->cores[c].held, HELD_STUCK, (size_t)1 << (64 - all->held_shift));
        if (pass == 2) {
            CHECK(camat_sample(m, 5000, 1000, 200) == NULL);
            CHECK(camat_sample(all, 5000, 1000, 200) == NULL);
        }
        CHECK(camat_feed(m, a, N) == 0 && camat_feed(all, a, N) == 0);
        camat_finish(m);
        camat_finish(all);
        CHECK(same_counts(m, all, &cfg));
        CHECK(camat_totals(m)[CAMAT_L1].coherence_misses > 100);
        CHECK(camat_totals(m)[CAMAT_LLC].invalidations > 100);
        int bad = 0;
        for (uint32_t c = 0; c < cfg.cores; c++)
            for (uint64_t at = 0; at < (1ULL << (64 - m->held_shift)); at++) {
                uint8_t h = m->cores[c].held[at];
                uint64_t n = copies_in(m, &m->cores[c], at);
                bad += h != HELD_STUCK && h != n; /* a stuck count claims nothing */
            }
        CHECK(bad == 0);
        camat_destroy(m);
        camat_destroy(all);
    }
    free(a);
}

/* Lines core c holds Exclusive or Modified in its l1 or l2 that another core also holds. */
static uint64_t owned_elsewhere(const camat_model *m, uint64_t *owned)
{
    uint64_t bad = 0;
    for (uint32_t c = 0; c < m->cfg.cores; c++) {
        const cm_cache *cs[2] = {&m->cores[c].l1, &m->cores[c].l2};
        for (int i = 0; i < 2; i++)
            for (uint64_t s = 0; s < cs[i]->sets * cs[i]->ways; s++) {
                if (!cs[i]->tag[s] || cs[i]->state[s] < ST_E)
                    continue;
                uint64_t line = cs[i]->tag[s] - 1;
                (*owned)++;
                for (uint32_t o = 0; o < m->cfg.cores; o++)
                    bad += o != c && (cm_cache_find(&m->cores[o].l1, line) >= 0 ||
                                      cm_cache_find(&m->cores[o].l2, line) >= 0);
            }
    }
    return bad;
}

static void test_exclusive_invariant(void)
{
    printf("a line held Exclusive or Modified has no other holder\n");
    enum { N = 40000, CHUNK = 40 };
    camat_access *a = calloc(N, sizeof *a);
    uint64_t x = 0x2545F4914F6CDD1DULL;
    for (int i = 0; i < N; i++) { /* shared hot lines with stores, a shared stream, random lines */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t pick = x % 100, y = x * 0x9E3779B97F4A7C15ULL;
        uint64_t addr = pick < 70   ? 0x100000 + (y >> 50) * 8
                        : pick < 90 ? 0x10000000 + (uint64_t)(i / 2) * 8
                                    : 0x40000000 + (y >> 40) / 8 * 8;
        a[i] = (camat_access){.addr = addr,
                              .core = (uint32_t)(y >> 20) % 3,
                              .object = 0,
                              .region = 0,
                              .flags = (uint16_t)((8 << 8) | ((y & 3) == 0 ? CAMAT_WRITE : 0))};
    }
    /* recorded order and sampled, checked after every chunk; clock order (one feed of the
     * whole stream: a clock-ordered feed starts its cores afresh) and clock order sampled,
     * checked at the end */
    for (int pass = 0; pass < 4; pass++) {
        camat_config cfg = base_config(3);
        cfg.cache[0] = (camat_cache){4 << 10, 4, 4, 10, 0};
        cfg.cache[1] = (camat_cache){16 << 10, 8, 12, 16, 0};
        cfg.reorder = pass >= 2 ? 4096 : 0;
        camat_model *m = camat_create(&cfg, NULL);
        if (pass & 1)
            CHECK(camat_sample(m, 4000, 1000, 200) == NULL);
        uint64_t bad = 0, owned = 0;
        size_t chunk = pass < 2 ? CHUNK : N;
        for (size_t i = 0; i < N; i += chunk) {
            CHECK(camat_feed(m, a + i, chunk) == 0);
            bad += owned_elsewhere(m, &owned);
        }
        camat_finish(m);
        CHECK(bad == 0);
        CHECK(owned > (pass < 2 ? 10000 : 20));                  /* the check saw owned lines */
        CHECK(camat_totals(m)[CAMAT_LLC].invalidations > 100);   /* and the paths that remove */
        CHECK(camat_totals(m)[CAMAT_L1].coherence_misses > 100); /* copies were taken */
        camat_destroy(m);
    }
    free(a);
}

static void test_local_buffer(void)
{
    printf("local buffer: page LRU\n");
    cm_local b;
    CHECK(cm_local_init(&b, 2) == 0);
    CHECK(cm_local_access(&b, 1) == 0);
    CHECK(cm_local_access(&b, 2) == 0);
    CHECK(cm_local_access(&b, 1) == 1);
    CHECK(cm_local_access(&b, 3) == 0); /* evicts 2 */
    CHECK(cm_local_access(&b, 1) == 1);
    CHECK(cm_local_access(&b, 2) == 0); /* evicts 3 */
    CHECK(cm_local_access(&b, 3) == 0);
    cm_local_free(&b);
    /* many pages through a small buffer: hits only within the recency window */
    CHECK(cm_local_init(&b, 100) == 0);
    int hits = 0;
    for (int round = 0; round < 3; round++)
        for (uint64_t p = 0; p < 100; p++)
            hits += cm_local_access(&b, p * 7919);
    CHECK(hits == 200);
    for (uint64_t p = 1000; p < 1300; p++)
        hits += cm_local_access(&b, p);
    CHECK(hits == 200);
    cm_local_free(&b);

    /* a model with a far level: a random walk over 4x the buffer mostly misses it */
    camat_config cfg = base_config(1);
    cfg.local_pages = 256;
    camat_model *m = camat_create(&cfg, NULL);
    enum { N = 20000 };
    camat_access *a = calloc(N, sizeof *a);
    uint64_t s = 12345;
    for (int i = 0; i < N; i++)
        a[i] = (camat_access){.addr = (rng(&s) % (1024 * 4096)) & ~63ULL, .flags = 8 << 8};
    CHECK(camat_feed(m, a, N) == 0);
    camat_finish(m);
    const camat_counts *t = camat_totals(m);
    double mr = (double)t[CAMAT_MEM].misses / (double)t[CAMAT_MEM].accesses;
    printf("  local buffer miss ratio %.3f (expected about 0.75)\n", mr);
    CHECK(mr > 0.65 && mr < 0.85);
    CHECK(t[CAMAT_FAR].accesses == t[CAMAT_MEM].misses);
    for (int l = 0; l < CAMAT_LEVELS; l++)
        check_apc(&t[l]);
    check_sums(m, &cfg);
    camat_destroy(m);
    free(a);
}

/* Sampled timing: accesses and misses equal to the exact model's at every level, object and
 * region (two cores in recorded order, stores, a far level), units counted, shares summed. */
static void test_sampled(void)
{
    printf("sampled timing: exact counts, units\n");
    camat_config cfg = base_config(2);
    cfg.local_pages = 512;
    enum { N = 120000 };
    camat_access *a = calloc(N, sizeof *a);
    uint64_t s = 777;
    for (int i = 0; i < N; i++) {
        uint64_t r = rng(&s);
        uint64_t addr = r % 4 == 0 ? 0x1000 + (r >> 8) % 64 * 8 : (r >> 8) % (8 << 20);
        a[i] = (camat_access){.addr = addr & ~7ULL,
                              .core = (uint32_t)(i / 7) % 2,
                              .object = (uint32_t)(r >> 40) % 3,
                              .region = (uint32_t)(i / 5000) % 2,
                              .flags = (uint16_t)((8 << 8) | ((r >> 20) % 4 == 0))};
    }
    camat_model *ex = camat_create(&cfg, NULL), *sm = camat_create(&cfg, NULL);
    CHECK(camat_sample(sm, 10000, 1000, 200) == NULL);
    CHECK(camat_sample(sm, 10000, 1000, 200) != NULL); /* once only */
    CHECK(camat_feed(ex, a, N) == 0 && camat_feed(sm, a, N) == 0);
    camat_finish(ex);
    camat_finish(sm);
    CHECK(camat_sample_info_of(ex) == NULL);
    const camat_sample_info *info = camat_sample_info_of(sm);
    CHECK(info->units == N / 10000 && info->measured == info->units * 1000);
    CHECK(info->detailed == info->units * 1400 && info->accesses == N);
    size_t units = 0;
    const double *u = camat_sample_units(sm, &units);
    CHECK(units == info->units && u[0] == 1000);
    for (int l = 0; l < CAMAT_LEVELS; l++) {
        const camat_counts *e = &camat_totals(ex)[l], *t = &camat_totals(sm)[l];
        CHECK(e->accesses == t->accesses && e->misses == t->misses);
        CHECK(e->coherence_misses == t->coherence_misses && e->false_sharing == t->false_sharing);
        CHECK(e->invalidations == t->invalidations);
        for (uint32_t o = 0; o < cfg.objects; o++)
            CHECK(camat_by_object(ex)[l * cfg.objects + o].misses ==
                  camat_by_object(sm)[l * cfg.objects + o].misses);
        for (uint32_t r = 0; r < cfg.regions; r++)
            CHECK(camat_by_region(ex)[l * cfg.regions + r].accesses ==
                  camat_by_region(sm)[l * cfg.regions + r].accesses);
        if (t->accesses) {
            check_apc(t);
            CHECK(fabs(info->shared_active[l] - info->counted_active[l]) <=
                  1e-9 * info->counted_active[l] + 1e-6);
        }
    }
    CHECK(camat_totals(sm)[CAMAT_FAR].accesses > 1000 &&
          camat_totals(sm)[0].coherence_misses > 100);
    double ce = camat_terms(&camat_totals(ex)[0]), cs = camat_terms(&camat_totals(sm)[0]);
    printf("  L1 C-AMAT exact %.3f sampled %.3f\n", ce, cs);
    CHECK(fabs(cs - ce) < 0.1 * ce);
    camat_destroy(ex);
    camat_destroy(sm);
    free(a);
}

static void test_bad_input(void)
{
    printf("bad configurations and accesses are refused\n");
    const char *err = NULL;
    camat_config cfg = base_config(1);
    cfg.line_bytes = 48;
    CHECK(camat_create(&cfg, &err) == NULL && strcmp(err, "line_bytes") == 0);
    cfg = base_config(1);
    cfg.cache[1].ways = 0;
    CHECK(camat_create(&cfg, &err) == NULL && strcmp(err, "l2.ways") == 0);
    cfg = base_config(0);
    CHECK(camat_create(&cfg, &err) == NULL && strcmp(err, "cores") == 0);
    cfg = base_config(1);
    camat_model *m = camat_create(&cfg, &err);
    camat_access a = {.addr = 64, .object = 7};
    CHECK(camat_feed(m, &a, 1) == -1 && strstr(camat_error(m), "object"));
    camat_destroy(m);
    cfg = base_config(2);
    cfg.reorder = 64; /* clock order: one call with the whole stream, a second one refused */
    m = camat_create(&cfg, &err);
    a = (camat_access){.addr = 64, .core = 1};
    CHECK(camat_feed(m, &a, 1) == 0);
    CHECK(camat_feed(m, &a, 1) == -1 && strstr(camat_error(m), "one camat_feed call"));
    camat_destroy(m);
}

/* One set of `ways` ways (and one of 2 sets): after filling it, touching every other line and
 * an invalidation, each fill evicts the least recently used line, as a reference LRU list
 * kept here says. */
static void lru_in_one_set(uint32_t ways, uint64_t sets)
{
    cm_cache c;
    CHECK(cm_cache_init(&c, (uint64_t)ways * 64 * sets, ways, 64) == 0);
    uint64_t ref[64], n = 0, next = 0, seed = ways; /* ref: lines, most recent first */
    for (int step = 0; step < 4000; step++) {
        uint64_t pick = rng(&seed) % 4;
        if (pick == 0 && n) { /* touch a resident line */
            uint64_t at = rng(&seed) % n, line = ref[at];
            int64_t s = cm_cache_find(&c, line);
            CHECK(s >= 0);
            if (s >= 0)
                cm_cache_touch(&c, line, s);
            memmove(ref + 1, ref, at * sizeof *ref);
            ref[0] = line;
        } else if (pick == 1 && n > 1 && step % 7 == 0) { /* invalidate one */
            uint64_t at = rng(&seed) % n, line = ref[at];
            int64_t s = cm_cache_find(&c, line);
            CHECK(s >= 0);
            if (s >= 0)
                cm_cache_drop(&c, s, line);
            memmove(ref + at, ref + at + 1, (n - at - 1) * sizeof *ref);
            n--;
        } else { /* a new line of set 0 */
            uint64_t line = (next++) * sets, victim = 0;
            CHECK(cm_cache_lookup(&c, line, &victim) < 0);
            if (n == ways) { /* full: the LRU line goes */
                CHECK(c.tag[victim] == ref[n - 1] + 1);
                n--;
            }
            cm_cache_put(&c, victim, line, ST_E);
            memmove(ref + 1, ref, n * sizeof *ref);
            ref[0] = line;
            n++;
        }
    }
    for (uint64_t i = 0; i < n; i++)
        CHECK(cm_cache_find(&c, ref[i]) >= 0);
    cm_cache_free(&c);
}

static void test_lru(void)
{
    uint32_t ways[] = {1, 2, 8, 11, 15, 16, 17, 20, 64};
    for (size_t i = 0; i < sizeof ways / sizeof *ways; i++) {
        lru_in_one_set(ways[i], 1);
        lru_in_one_set(ways[i], 2);
    }
}

int main(void)
{
    test_lru();
    test_pointer_chase();
    test_streaming();
    test_hits_overlap();
    test_merge_in_flight();
    test_false_sharing();
    test_clock_interleaving();
    test_clock_long_turns();
    test_held_counts();
    test_exclusive_invariant();
    test_local_buffer();
    test_sampled();
    test_bad_input();
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("all camat tests passed\n");
    return 0;
}
