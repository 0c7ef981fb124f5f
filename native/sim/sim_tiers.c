/*
 * The tiers of the simulated machine: a page's moves between fast and slow memory (promotion,
 * demotion or swap-out), kswapd-like reclaim from the cold end of the fast LRU, and mlock
 * pinning. Called by the core (sim_core.c), the objects (sim_objects.c) and the policies.
 *
 * Invariants
 *   - fast_pages + slow_pages == live pages; fast_pages <= fast_cap (promotion fails when the
 *     fast tier is full).
 *   - A page is on the fast LRU iff its tier is SIM_FAST and it is not pinned (pinned pages
 *     are mlocked: off the LRU, never reclaimed).
 */
#include "sim_internal.h"

bool sim_promote(sim_t *s, sim_page *pg)
{
    if (pg->tier == SIM_FAST)
        return true;
    if (s->fast_pages >= s->fast_cap)
        return false;
    pg->tier = SIM_FAST;
    s->slow_pages--;
    s->fast_pages++;
    sim_lru_push_head(s, pg);
    if (s->cfg.swap && !(pg->flags & SIM_PG_UNTOUCHED))
        s->counter[SIM_C_PSWPIN]++;
    pg->flags &= (uint8_t)~SIM_PG_UNTOUCHED;
    s->counter[SIM_C_PGPROMOTE_SUCCESS]++;
    s->counter[SIM_C_NUMA_PAGES_MIGRATED]++;
    s->bin->promoted++;
    if (s->fast_pages > s->counter[SIM_C_PEAK_FAST_PAGES])
        s->counter[SIM_C_PEAK_FAST_PAGES] = s->fast_pages;
    return true;
}

void sim_demote(sim_t *s, sim_page *pg)
{
    if (pg->tier == SIM_SLOW)
        return;
    sim_lru_unlink(s, pg);
    pg->tier = SIM_SLOW;
    pg->flags &= (uint8_t) ~(SIM_PG_REFERENCED | SIM_PG_ACTIVE);
    s->fast_pages--;
    s->slow_pages++;
    if (s->cfg.swap) {
        s->counter[SIM_C_PSWPOUT]++;
        s->bin->swap_out++;
    } else {
        s->counter[SIM_C_PGDEMOTE_KSWAPD]++;
        s->bin->demoted++;
    }
}

uint64_t sim_reclaim(sim_t *s, uint64_t target_free, sim_keep_fn keep)
{
    uint64_t demoted = 0, scanned = 0, limit = 2 * s->fast_pages + 2;
    if (target_free > s->fast_cap)
        target_free = s->fast_cap;
    while (sim_fast_free(s) < target_free && s->lru_tail != SIM_NIL && scanned++ < limit) {
        sim_page *pg = &s->pool[s->lru_tail];
        uint32_t next = s->links[s->lru_tail].prev; /* the next victim: fetch it meanwhile */
        if (next != SIM_NIL) {
            __builtin_prefetch(&s->pool[next]);
            __builtin_prefetch(&s->links[next]);
        }
        bool rotate = (pg->flags & SIM_PG_REFERENCED) || (keep && keep(s, pg));
        if (rotate) {
            pg->flags &= (uint8_t)~SIM_PG_REFERENCED;
            sim_lru_unlink(s, pg);
            sim_lru_push_head(s, pg);
            continue;
        }
        sim_demote(s, pg);
        demoted++;
    }
    return demoted;
}

void sim_pin(sim_t *s, sim_page *pg)
{
    if (pg->flags & SIM_PG_PINNED)
        return;
    if (pg->tier == SIM_FAST)
        sim_lru_unlink(s, pg);
    pg->flags |= SIM_PG_PINNED;
}

void sim_unpin(sim_t *s, sim_page *pg)
{
    if (!(pg->flags & SIM_PG_PINNED))
        return;
    pg->flags &= (uint8_t)~SIM_PG_PINNED;
    if (pg->tier == SIM_FAST)
        sim_lru_push_head(s, pg);
}
