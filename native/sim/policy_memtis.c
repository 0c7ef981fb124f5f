/*
 * memtis: Memtis-like (SOSP'23, cosmoss-jigu/memtis defaults; reference §2). Each page counts
 * its samples; a 16-bin histogram of bin = min(15, floor(log2(count + 1))) over live pages sets,
 * every adaptation_period samples, the hot bin: the lowest bin whose pages, with all hotter
 * bins, fit in the fast-tier budget (capacity - promo watermark). warm = hot - 1. Every
 * cooling_period samples all counts halve. kmigrated runs every migrate_period_ms: it demotes
 * fast pages below the warm bin to make room and promotes queued slow pages still in a hot bin.
 * New pages go to the fast tier while it has room. Huge-page splitting is not modelled.
 */
#include "sim_internal.h"

#include <stdlib.h>

#define NBINS     16
#define NS_PER_MS 1000000ull

typedef struct memtis_state {
    uint64_t hist[NBINS]; /* live pages per bin */
    uint64_t samples;     /* samples seen (the adaptation/cooling clock) */
    uint64_t adapt_every, cool_every, period_ns, next_ns, budget;
    unsigned hot; /* pages in bins >= hot are hot */
    bool count_weight;
    sim_queue queue; /* slow pages that reached the hot bin */
} memtis_state;

static const sim_param_def memtis_params[] = {
    {"adaptation_period", 100000}, /* samples between hot-threshold updates */
    {"cooling_period", 2000000},   /* samples between halvings */
    {"migrate_period_ms", 500},    /* kmigrated promote/demote period */
    {"count_weight", 0},           /* 1: count sample weights instead of samples */
    {NULL, 0},
};

static inline unsigned bin_of(uint32_t count)
{
    unsigned b = 0;
    uint64_t c = (uint64_t)count + 1;
    while (c >>= 1)
        b++;
    return b < NBINS - 1 ? b : NBINS - 1;
}

static int memtis_init(sim_t *s)
{
    memtis_state *st = s->state;
    st->adapt_every = (uint64_t)s->param[0];
    st->cool_every = (uint64_t)s->param[1];
    st->period_ns = (uint64_t)(s->param[2] * NS_PER_MS);
    st->count_weight = s->param[3] != 0;
    st->next_ns = s->cfg.start_ns + st->period_ns;
    /* fast-tier budget: capacity less a promotion watermark of 1% */
    st->budget = s->fast_cap - s->fast_cap / 100;
    st->hot = 1;
    return 0;
}

static int memtis_alloc(sim_t *s, sim_page *pg, uint32_t obj, uint64_t offset)
{
    memtis_state *st = s->state;
    (void)obj, (void)offset, (void)pg;
    st->hist[0]++;
    (void)s;
    return SIM_FAST;
}

static void memtis_free(sim_t *s, sim_page *pg)
{
    memtis_state *st = s->state;
    st->hist[bin_of(pg->count)]--;
}

static void adapt(memtis_state *st)
{
    uint64_t sum = 0;
    unsigned hot = NBINS;
    for (unsigned b = NBINS - 1; b >= 1; b--) {
        sum += st->hist[b];
        if (sum > st->budget)
            break;
        hot = b;
    }
    st->hot = hot < NBINS ? hot : NBINS - 1;
}

static void cool(sim_t *s, memtis_state *st)
{
    for (unsigned b = 0; b < NBINS; b++)
        st->hist[b] = 0;
    for (uint32_t i = 0; i < s->pool_used; i++) {
        sim_page *pg = sim_page_at(s, i);
        if (!pg)
            continue;
        pg->count >>= 1;
        st->hist[bin_of(pg->count)]++;
    }
}

static void memtis_access(sim_t *s, sim_page *pg, uint64_t now, uint64_t weight, bool store)
{
    memtis_state *st = s->state;
    (void)now, (void)store;
    unsigned old = bin_of(pg->count);
    uint64_t c = (uint64_t)pg->count + (st->count_weight ? weight : 1);
    pg->count = c > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)c;
    unsigned nb = bin_of(pg->count);
    if (nb != old) {
        st->hist[old]--;
        st->hist[nb]++;
    }
    if (pg->tier == SIM_SLOW && nb >= st->hot && !(pg->flags & SIM_PG_QUEUED)) {
        if (sim_queue_push(&st->queue, sim_page_index(s, pg), sim_page_key_of(s, pg)) == 0)
            pg->flags |= SIM_PG_QUEUED;
    }
    st->samples++;
    if (st->adapt_every && st->samples % st->adapt_every == 0)
        adapt(st);
    if (st->cool_every && st->samples % st->cool_every == 0)
        cool(s, st);
}

static bool keep_warm(sim_t *s, sim_page *pg)
{
    memtis_state *st = s->state;
    unsigned warm = st->hot > 1 ? st->hot - 1 : 1;
    return bin_of(pg->count) >= warm;
}

static void memtis_tick(sim_t *s, uint64_t now)
{
    memtis_state *st = s->state;
    if (now < st->next_ns)
        return;
    st->next_ns = now + st->period_ns;
    uint32_t idx;
    uint64_t key;
    size_t n = sim_queue_len(&st->queue);
    while (n-- && sim_queue_pop(&st->queue, &idx, &key)) {
        sim_page *pg = sim_page_check(s, idx, key);
        if (!pg)
            continue;
        pg->flags &= (uint8_t)~SIM_PG_QUEUED;
        if (pg->tier != SIM_SLOW || bin_of(pg->count) < st->hot)
            continue;
        if (sim_fast_free(s) == 0 && sim_reclaim(s, 1, keep_warm) == 0) {
            /* no cold page left to make room: retry next period */
            if (sim_queue_push(&st->queue, idx, key) == 0)
                pg->flags |= SIM_PG_QUEUED;
            break;
        }
        sim_promote(s, pg);
    }
}

static void memtis_fini(sim_t *s)
{
    memtis_state *st = s->state;
    sim_queue_free(&st->queue);
}

const sim_policy_ops sim_policy_memtis = {
    .name = "memtis",
    .params = memtis_params,
    .state_bytes = sizeof(memtis_state),
    .init = memtis_init,
    .on_alloc = memtis_alloc,
    .on_free = memtis_free,
    .on_access = memtis_access,
    .on_tick = memtis_tick,
    .fini = memtis_fini,
};
