/*
 * C unit tests of the simulator core and policies on tiny synthetic event streams.
 * Each test prints its name; a failed check prints the line and the test exits non-zero.
 */
#include "sim_internal.h"

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

#define PAGE 4096ull
#define MS   1000000ull
#define BASE 0x10000000ull

static sim_t *make(const char *policy, uint64_t fast_pages, uint32_t objects)
{
    sim_config c = {.fast_bytes = fast_pages * PAGE,
                    .start_ns = 0,
                    .bin_ns = 100 * MS,
                    .page_shift = 12,
                    .objects = objects};
    sim_t *s = sim_create(&c, policy);
    if (!s) {
        fprintf(stderr, "cannot create %s\n", policy);
        exit(1);
    }
    return s;
}

static sim_event ev(uint16_t type, uint64_t t, uint64_t addr, uint64_t size, uint32_t obj)
{
    sim_event e = {.time_ns = t, .addr = addr, .size = size, .obj = obj, .type = type};
    return e;
}

static void feed1(sim_t *s, sim_event e)
{
    if (sim_feed(s, &e, 1) != 0) {
        fprintf(stderr, "feed failed: %s\n", sim_error(s));
        exit(1);
    }
}

static uint64_t counter(sim_t *s, const char *name)
{
    uint64_t v[SIM_C_COUNT_];
    sim_counters(s, v);
    for (size_t i = 0; i < sim_counter_count(); i++)
        if (strcmp(sim_counter_name(i), name) == 0)
            return v[i];
    fprintf(stderr, "no counter %s\n", name);
    exit(1);
}

static void test_first_touch_fills_in_order(void)
{
    puts("first-touch fills the fast tier in allocation order");
    sim_t *s = make("first-touch", 4, 2);
    feed1(s, ev(SIM_EV_ALLOC, 1, BASE, 3 * PAGE, 0));
    feed1(s, ev(SIM_EV_ALLOC, 2, BASE + 0x100000, 3 * PAGE, 1));
    CHECK(s->fast_pages == 4 && s->slow_pages == 2);
    /* object 1's last two pages are slow */
    feed1(s, ev(SIM_EV_ACCESS, 3, BASE + 0x100000 + 2 * PAGE, 5, 0));
    feed1(s, ev(SIM_EV_ACCESS, 4, BASE, 7, 0));
    CHECK(counter(s, "slow_loads") == 5 && counter(s, "fast_loads") == 7);
    /* freeing object 0 releases its three fast pages */
    feed1(s, ev(SIM_EV_FREE, 5, BASE, 0, 0));
    CHECK(s->fast_pages == 1 && s->slow_pages == 2);
    sim_destroy(s);
}

static void test_shared_pages_refcounted(void)
{
    puts("a page shared by two objects lives until both are freed");
    sim_t *s = make("first-touch", 16, 2);
    feed1(s, ev(SIM_EV_ALLOC, 1, BASE, 100, 0));
    feed1(s, ev(SIM_EV_ALLOC, 2, BASE + 200, 100, 1));
    CHECK(s->fast_pages == 1);
    feed1(s, ev(SIM_EV_FREE, 3, BASE, 0, 0));
    CHECK(s->fast_pages == 1);
    feed1(s, ev(SIM_EV_FREE, 4, BASE + 200, 0, 1));
    CHECK(s->fast_pages == 0);
    sim_destroy(s);
}

static void test_hash_many_pages(void)
{
    puts("hash table survives growth and deletions");
    sim_t *s = make("first-touch", 1 << 20, 3);
    feed1(s, ev(SIM_EV_ALLOC, 1, BASE, 50000 * PAGE, 0));
    feed1(s, ev(SIM_EV_ALLOC, 2, BASE + 60000 * PAGE, 30000 * PAGE, 1));
    feed1(s, ev(SIM_EV_FREE, 3, BASE, 0, 0));
    feed1(s, ev(SIM_EV_ALLOC, 4, BASE + 100000 * PAGE, 20000 * PAGE, 2));
    CHECK(s->fast_pages == 50000 && s->hcount == 50000);
    for (uint64_t p = 0; p < 30000; p++)
        CHECK(sim_page_lookup(s, (1ull << 40) | ((BASE >> 12) + 60000 + p)) != NULL);
    CHECK(sim_page_lookup(s, (1ull << 40) | ((BASE >> 12) + 5)) == NULL);
    sim_destroy(s);
}

/* numab2 on a tier of 64 fast pages, all full, with quick scanning. */
static sim_t *numab_setup(uint64_t rate_mbps)
{
    sim_t *s = make("numab2", 64, 2);
    CHECK(sim_set_param(s, "scan_delay_ms", 10) == 0);
    CHECK(sim_set_param(s, "scan_period_min_ms", 10) == 0);
    CHECK(sim_set_param(s, "scan_size_mb", 4) == 0);
    CHECK(sim_set_param(s, "promote_rate_limit_MBps", (double)rate_mbps) == 0);
    CHECK(sim_set_param(s, "min_free_kbytes", 16) == 0); /* 4 pages: low 5, high 6, promo 7 */
    CHECK(sim_set_param(s, "nonexistent", 1) == -1);
    feed1(s, ev(SIM_EV_ALLOC, 1, BASE, 64 * PAGE, 0));              /* fills fast down to low */
    feed1(s, ev(SIM_EV_ALLOC, 2, BASE + 0x1000000, 512 * PAGE, 1)); /* slow */
    return s;
}

static void test_numab2_hint_within_threshold_promotes(void)
{
    puts("numab2: a slow page faulting within the hot threshold of its scan is promoted");
    sim_t *s = numab_setup(65536);
    CHECK(s->slow_pages > 512);
    /* after the first scan (t = 10 ms) the slow pages are PROT_NONE; kswapd made room */
    uint64_t hot = BASE + 0x1000000 + 3 * PAGE, cold = BASE + 0x1000000 + 9 * PAGE;
    feed1(s, ev(SIM_EV_ACCESS, 50 * MS, hot, 1, 0));
    CHECK(counter(s, "numa_hint_faults") == 1);
    CHECK(counter(s, "pgpromote_success") == 1);
    sim_page *pg = sim_page_lookup(s, (1ull << 40) | (hot >> 12));
    CHECK(pg && pg->tier == SIM_FAST);
    /* a page first touched 2 s after its scan exceeds the 1000 ms threshold */
    feed1(s, ev(SIM_EV_ACCESS, 2050 * MS, cold, 1, 0));
    pg = sim_page_lookup(s, (1ull << 40) | (cold >> 12));
    CHECK(pg && pg->tier == SIM_SLOW);
    CHECK(counter(s, "numa_hint_faults") == 2);
    sim_destroy(s);
}

static void test_numab2_rate_limit(void)
{
    puts("numab2: the rate limit caps promotion candidates per second");
    /* 1 MB/s = 256 pages per second window */
    sim_t *s = numab_setup(1);
    CHECK(sim_set_param(s, "demotion_enabled", 1) == 0);
    /* touch every slow page right after it was scanned, for 3 s */
    uint64_t t = 11 * MS;
    for (int round = 0; round < 300; round++, t += 10 * MS)
        for (uint64_t p = 0; p < 512; p += 1)
            feed1(s, ev(SIM_EV_ACCESS, t + p, BASE + 0x1000000 + p * PAGE, 1, 0));
    uint64_t promoted = counter(s, "pgpromote_success");
    /* at most 256 candidates per 1 s window (windows open at first candidate, > 1000 ms) */
    CHECK(promoted > 0);
    CHECK(promoted <= 256 * 3);
    CHECK(counter(s, "pgpromote_candidate") > promoted);
    sim_destroy(s);
}

static void test_numab2_demotes_when_full(void)
{
    puts("numab2: kswapd demotes when the fast tier is full");
    sim_t *s = numab_setup(65536);
    feed1(s, ev(SIM_EV_ACCESS, 20 * MS, BASE + 0x1000000, 1, 0));
    CHECK(counter(s, "pgdemote_kswapd") >= 1);
    CHECK(sim_fast_free(s) >= s->wm_high);
    sim_destroy(s);
}

static void test_tpp_needs_two_faults(void)
{
    puts("tpp: the first fault activates, a second fault in a later pass promotes");
    sim_t *s = make("tpp", 64, 2);
    sim_set_param(s, "scan_delay_ms", 10);
    sim_set_param(s, "scan_period_min_ms", 10);
    sim_set_param(s, "scan_size_mb", 4);
    sim_set_param(s, "min_free_kbytes", 16);
    feed1(s, ev(SIM_EV_ALLOC, 1, BASE, 64 * PAGE, 0));
    feed1(s, ev(SIM_EV_ALLOC, 2, BASE + 0x1000000, 512 * PAGE, 1));
    uint64_t a = BASE + 0x1000000 + 5 * PAGE;
    feed1(s, ev(SIM_EV_ACCESS, 15 * MS, a, 1, 0));
    sim_page *pg = sim_page_lookup(s, (1ull << 40) | (a >> 12));
    CHECK(pg->tier == SIM_SLOW && (pg->flags & SIM_PG_ACTIVE));
    /* the scanner passes 512 pages per ~1024-page budget each 10 ms */
    feed1(s, ev(SIM_EV_ACCESS, 45 * MS, a, 1, 0));
    pg = sim_page_lookup(s, (1ull << 40) | (a >> 12));
    CHECK(pg->tier == SIM_FAST);
    sim_destroy(s);
}

static void test_static_prefix_and_bits(void)
{
    puts("static: fast prefix bytes and page bits");
    sim_t *s = make("static", 100, 2);
    uint64_t fast_bytes[2] = {2 * PAGE, 0};
    uint8_t bits[8] = {0, 0, 0, 0, 0, 1, 0, 1};
    uint64_t base[2] = {0, 4};
    sim_set_placement(s, fast_bytes, bits, base);
    feed1(s, ev(SIM_EV_ALLOC, 1, BASE, 4 * PAGE, 0));
    feed1(s, ev(SIM_EV_ALLOC, 2, BASE + 0x100000, 4 * PAGE, 1));
    CHECK(s->fast_pages == 4 && s->slow_pages == 4);
    sim_page *pg = sim_page_lookup(s, (1ull << 40) | ((BASE + 0x100000 + PAGE) >> 12));
    CHECK(pg && pg->tier == SIM_FAST);
    sim_destroy(s);
}

static void test_hemem_promotes_hot(void)
{
    puts("hemem: a slow page read read_hot times is promoted at the next pass");
    sim_t *s = make("hemem", 4, 2);
    feed1(s, ev(SIM_EV_ALLOC, 1, BASE, 4 * PAGE, 0));
    feed1(s, ev(SIM_EV_ALLOC, 2, BASE + 0x100000, 4 * PAGE, 1));
    for (int i = 0; i < 8; i++)
        feed1(s, ev(SIM_EV_ACCESS, 1 * MS + i, BASE + 0x100000, 1, 0));
    feed1(s, ev(SIM_EV_ACCESS, 30 * MS, BASE + PAGE, 1, 0));
    sim_page *pg = sim_page_lookup(s, (1ull << 40) | ((BASE + 0x100000) >> 12));
    CHECK(pg->tier == SIM_FAST);
    CHECK(counter(s, "pgdemote_kswapd") == 1 && counter(s, "pgpromote_success") == 1);
    sim_destroy(s);
}

static void test_memtis_promotes_hot(void)
{
    puts("memtis: slow pages in the hot bin replace cold fast pages");
    sim_t *s = make("memtis", 4, 2);
    sim_set_param(s, "adaptation_period", 10);
    sim_set_param(s, "migrate_period_ms", 10);
    feed1(s, ev(SIM_EV_ALLOC, 1, BASE, 4 * PAGE, 0));
    feed1(s, ev(SIM_EV_ALLOC, 2, BASE + 0x100000, 4 * PAGE, 1));
    for (int i = 0; i < 40; i++)
        feed1(s, ev(SIM_EV_ACCESS, 1 * MS + i, BASE + 0x100000 + (uint64_t)(i % 2) * PAGE, 1, 0));
    feed1(s, ev(SIM_EV_ACCESS, 30 * MS, BASE + 3 * PAGE, 1, 0));
    CHECK(counter(s, "pgpromote_success") == 2);
    sim_destroy(s);
}

static void test_bins(void)
{
    puts("bins: accesses land in their time bin, gauges close each bin");
    sim_t *s = make("first-touch", 4, 1);
    feed1(s, ev(SIM_EV_ALLOC, 1, BASE, 8 * PAGE, 0));
    feed1(s, ev(SIM_EV_ACCESS, 50 * MS, BASE, 3, 0));
    feed1(s, ev(SIM_EV_ACCESS, 250 * MS, BASE + 6 * PAGE, 2, 0));
    sim_finish(s, 300 * MS);
    const sim_bin *b;
    size_t n = sim_bins(s, &b);
    CHECK(n == 4);
    CHECK(b[0].fast_loads == 3 && b[2].slow_loads == 2 && b[1].fast_pages == 4);
    CHECK(b[3].slow_pages == 4);
    sim_destroy(s);
}

static sim_t *make_swap(const char *policy, uint64_t fast_pages, uint32_t objects)
{
    sim_config c = {.fast_bytes = fast_pages * PAGE,
                    .start_ns = 0,
                    .bin_ns = 100 * MS,
                    .page_shift = 12,
                    .objects = objects,
                    .swap = 1};
    sim_t *s = sim_create(&c, policy);
    if (!s)
        exit(1);
    return s;
}

static sim_page *page_of(sim_t *s, uint64_t addr)
{
    return sim_page_lookup(s, (1ull << 40) | (addr >> 12));
}

static void test_swap_in_on_access(void)
{
    puts("swap: an access swaps the page in and the LRU tail out");
    sim_t *s = make_swap("first-touch", 4, 2);
    uint64_t b = BASE + 0x100000;
    feed1(s, ev(SIM_EV_ALLOC, 1, BASE, 4 * PAGE, 0)); /* fast: LRU head p3 ... tail p0 */
    feed1(s, ev(SIM_EV_ALLOC, 2, b, 4 * PAGE, 1));    /* never touched: in neither tier */
    CHECK(s->fast_pages == 4 && s->slow_pages == 4);
    /* first touch of b0: zero-fill, no swap-in; the tail p0 is swapped out */
    feed1(s, ev(SIM_EV_ACCESS, 3, b, 3, 0));
    CHECK(counter(s, "pgfault_first_touch") == 1 && counter(s, "pswpin") == 0);
    CHECK(counter(s, "pswpout") == 1 && counter(s, "fast_loads") == 3);
    CHECK(page_of(s, BASE)->tier == SIM_SLOW && page_of(s, b)->tier == SIM_FAST);
    /* p0 is in swap now: a sample of weight 5 is one swap-in (slow) and 4 fast accesses;
     * p1 is the LRU tail and goes out */
    feed1(s, ev(SIM_EV_ACCESS, 4, BASE, 5, 0));
    CHECK(counter(s, "pswpin") == 1 && counter(s, "pgmajfault") == 1);
    CHECK(counter(s, "slow_loads") == 1 && counter(s, "fast_loads") == 3 + 4);
    CHECK(counter(s, "pswpout") == 2 && page_of(s, BASE + PAGE)->tier == SIM_SLOW);
    /* second chance: p2 was referenced, so the next victim is p3 */
    feed1(s, ev(SIM_EV_ACCESS, 5, BASE + 2 * PAGE, 1, 0));
    feed1(s, ev(SIM_EV_ACCESS, 6, BASE + PAGE, 1, 0));
    CHECK(page_of(s, BASE + 2 * PAGE)->tier == SIM_FAST);
    CHECK(page_of(s, BASE + 3 * PAGE)->tier == SIM_SLOW);
    CHECK(counter(s, "pswpin") == 2 && counter(s, "pswpout") == 3);
    CHECK(counter(s, "pgdemote_kswapd") == 0 && counter(s, "pgpromote_success") == 0);
    const sim_bin *bins;
    sim_bins(s, &bins);
    CHECK(bins[0].swap_in == 2 && bins[0].swap_out == 3 && bins[0].demoted == 0);
    sim_destroy(s);
}

static void test_swap_pinned_pages_stay(void)
{
    puts("swap: pinned (mlocked) pages are never swapped out; all pinned = thrash");
    sim_t *s = make_swap("static", 6, 2);
    uint64_t fast_bytes[2] = {4 * PAGE, 0};
    sim_set_placement(s, fast_bytes, NULL, NULL);
    uint64_t b = BASE + 0x100000;
    feed1(s, ev(SIM_EV_ALLOC, 1, BASE, 4 * PAGE, 0)); /* pinned */
    feed1(s, ev(SIM_EV_ALLOC, 2, b, 8 * PAGE, 1));    /* unplanned: untouched */
    CHECK(s->fast_pages == 4 && s->lru_head == SIM_NIL);
    /* cycle through the 8 unplanned pages three times: only 2 frames are evictable */
    uint64_t t = 10;
    for (int round = 0; round < 3; round++)
        for (uint64_t p = 0; p < 8; p++)
            feed1(s, ev(SIM_EV_ACCESS, t++, b + p * PAGE, 1, 0));
    for (uint64_t p = 0; p < 4; p++)
        CHECK(page_of(s, BASE + p * PAGE)->tier == SIM_FAST);
    CHECK(counter(s, "pgfault_first_touch") == 8);
    CHECK(counter(s, "pswpin") == 16 && counter(s, "pswpout") == 22);
    sim_destroy(s);

    s = make_swap("static", 4, 2);
    sim_set_placement(s, fast_bytes, NULL, NULL);
    feed1(s, ev(SIM_EV_ALLOC, 1, BASE, 4 * PAGE, 0));
    feed1(s, ev(SIM_EV_ALLOC, 2, b, 2 * PAGE, 1));
    feed1(s, ev(SIM_EV_ACCESS, 3, b, 7, 0));
    CHECK(page_of(s, b)->tier == SIM_SLOW && counter(s, "slow_loads") == 7);
    CHECK(counter(s, "pgmigrate_fail") == 1 && counter(s, "pswpout") == 0);
    sim_destroy(s);
}

static void test_phases_switch(void)
{
    puts("phases: a switch demotes the old phase's objects and promotes the new one's");
    sim_t *s = make("phases", 4, 2);
    /* phase 0: object 0 fast; phase 1: object 1 fast; phase 2: nothing */
    uint64_t offsets[4] = {0, 1, 2, 2};
    uint32_t objs[2] = {0, 1};
    uint64_t fast[2] = {1ull << 40, 1ull << 40};
    sim_set_phase_placement(s, 3, offsets, objs, fast);
    uint64_t b = BASE + 0x100000;
    feed1(s, ev(SIM_EV_ALLOC, 1, BASE, 4 * PAGE, 0));
    feed1(s, ev(SIM_EV_ALLOC, 2, b, 4 * PAGE, 1));
    CHECK(page_of(s, BASE)->tier == SIM_FAST && page_of(s, b)->tier == SIM_SLOW);
    CHECK(page_of(s, BASE)->flags & SIM_PG_PINNED);
    feed1(s, ev(SIM_EV_ACCESS, 3, b, 2, 1));
    feed1(s, ev(SIM_EV_PHASE, 4, 0, 0, 1));
    CHECK(page_of(s, BASE)->tier == SIM_SLOW && page_of(s, b)->tier == SIM_FAST);
    CHECK(!(page_of(s, BASE)->flags & SIM_PG_PINNED) && (page_of(s, b)->flags & SIM_PG_PINNED));
    feed1(s, ev(SIM_EV_ACCESS, 5, b + 3 * PAGE, 5, 1));
    CHECK(counter(s, "slow_loads") == 2 && counter(s, "fast_loads") == 5);
    CHECK(counter(s, "phase_switches") == 1 && counter(s, "pgmigrate_phase") == 8);
    CHECK(counter(s, "pgpromote_success") == 4 && counter(s, "pgdemote_kswapd") == 4);
    /* phase 2 plans nothing: object 1 is unpinned and demoted */
    feed1(s, ev(SIM_EV_PHASE, 6, 0, 0, 2));
    CHECK(s->fast_pages == 0 && counter(s, "pgmigrate_phase") == 12);
    /* an unknown phase is an error */
    sim_event bad = ev(SIM_EV_PHASE, 7, 0, 0, 3);
    CHECK(sim_feed(s, &bad, 1) == -1 && strstr(sim_error(s), "phase 3"));
    sim_destroy(s);
}

int main(void)
{
    CHECK(sim_create(&(sim_config){.bin_ns = 1, .page_shift = 12}, "nope") == NULL);
    CHECK(sim_policy_params("numab2") != NULL &&
          strstr(sim_policy_params("numab2"), "hot_threshold_ms"));
    test_first_touch_fills_in_order();
    test_shared_pages_refcounted();
    test_hash_many_pages();
    test_numab2_hint_within_threshold_promotes();
    test_numab2_rate_limit();
    test_numab2_demotes_when_full();
    test_tpp_needs_two_faults();
    test_static_prefix_and_bits();
    test_hemem_promotes_hot();
    test_memtis_promotes_hot();
    test_bins();
    test_swap_in_on_access();
    test_swap_pinned_pages_stay();
    test_phases_switch();
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    puts("all simulator tests passed");
    return 0;
}
