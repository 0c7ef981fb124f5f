/*
 * phases: objtier's per-phase plan (DAPHICX §2.2). While phase p is in force, object o's first
 * cur[o] bytes are fast and pinned (mbind + mlock by the runtime at the phase's entry) and the
 * rest of memory follows the plan's "slow" (or, with rest_fast=1, first-touch while there is
 * room). At a phase switch every live page is moved to the new placement at once:
 *   1. pages planned fast by the old phase and not by the new one are unpinned and demoted
 *      (the runtime undoes the old phase's placement);
 *   2. pages planned fast by the new phase are promoted and pinned while the fast tier has a
 *      free page, after reclaiming unpinned fast pages (LRU) to make room; a page that still
 *      finds no room stays slow (pgmigrate_fail).
 * Moves count as promotions/demotions (so the cost model charges them as migrations) and in
 * pgmigrate_phase. Pages shared by two objects follow the last object that moved them.
 *
 * Invariant: cur[o] == the fast bytes of o in the phase in force (0 when o has no entry).
 */
#include "sim_internal.h"

#include <stdlib.h>

typedef struct phases_state {
    uint64_t *cur;  /* per object: fast bytes in the phase in force */
    uint32_t phase; /* the phase in force */
} phases_state;

static const sim_param_def phases_params[] = {
    {"rest_fast", 0}, /* 1: unplanned pages go fast while there is room (first-touch) */
    {NULL, 0},
};

static void set_phase(sim_t *s, phases_state *st, uint32_t p, uint64_t value_scale)
{
    if (p >= s->phase_count)
        return;
    for (uint64_t i = s->phase_offsets[p]; i < s->phase_offsets[p + 1]; i++) {
        uint32_t o = s->phase_objs[i];
        if (o < s->cfg.objects)
            st->cur[o] = value_scale ? s->phase_fast_bytes[i] : 0;
    }
}

static int phases_init(sim_t *s)
{
    phases_state *st = s->state;
    st->cur = calloc(s->cfg.objects ? s->cfg.objects : 1, sizeof *st->cur);
    if (!st->cur)
        return -1;
    st->phase = 0;
    set_phase(s, st, 0, 1);
    return 0;
}

/* Byte offset of page k of object o from the object's first byte (0 for its first page). */
static inline uint64_t page_offset(const sim_t *s, const sim_object *o, uint64_t k)
{
    uint64_t start = (o->first_vpn + k) << s->cfg.page_shift;
    return start > o->addr ? start - o->addr : 0;
}

static int phases_alloc(sim_t *s, sim_page *pg, uint32_t obj, uint64_t offset)
{
    phases_state *st = s->state;
    if (offset < st->cur[obj]) {
        pg->flags |= SIM_PG_PINNED;
        return SIM_FAST;
    }
    return s->param[0] != 0 ? SIM_FAST : SIM_SLOW;
}

/* Unpin and demote o's pages past cur[o] that are pinned fast. */
static void undo_object(sim_t *s, phases_state *st, uint32_t oi)
{
    sim_object *o = &s->objects[oi];
    for (uint64_t k = 0; k < o->npages; k++) {
        if (o->pages[k] == SIM_NIL || page_offset(s, o, k) < st->cur[oi])
            continue;
        sim_page *pg = &s->pool[o->pages[k]];
        if (!(pg->flags & SIM_PG_PINNED))
            continue;
        sim_unpin(s, pg);
        if (pg->tier == SIM_FAST) {
            sim_demote(s, pg);
            s->counter[SIM_C_PGMIGRATE_PHASE]++;
        }
    }
}

/* Promote and pin o's pages before cur[o]. */
static void apply_object(sim_t *s, phases_state *st, uint32_t oi)
{
    sim_object *o = &s->objects[oi];
    for (uint64_t k = 0; k < o->npages; k++) {
        if (o->pages[k] == SIM_NIL || page_offset(s, o, k) >= st->cur[oi])
            continue;
        sim_page *pg = &s->pool[o->pages[k]];
        if (pg->tier == SIM_SLOW) {
            if (sim_fast_free(s) == 0)
                sim_reclaim(s, 1, NULL);
            if (!sim_promote(s, pg)) {
                s->counter[SIM_C_PGMIGRATE_FAIL]++;
                continue;
            }
            s->counter[SIM_C_PGMIGRATE_PHASE]++;
        }
        sim_pin(s, pg);
    }
}

static void phases_switch(sim_t *s, uint32_t p)
{
    phases_state *st = s->state;
    if (p == st->phase)
        return;
    uint32_t old = st->phase;
    set_phase(s, st, old, 0); /* objects of the old phase: 0 unless the new phase says more */
    set_phase(s, st, p, 1);
    st->phase = p;
    for (uint64_t i = s->phase_offsets[old]; i < s->phase_offsets[old + 1]; i++)
        if (s->phase_objs[i] < s->cfg.objects)
            undo_object(s, st, s->phase_objs[i]);
    for (uint64_t i = s->phase_offsets[p]; i < s->phase_offsets[p + 1]; i++)
        if (s->phase_objs[i] < s->cfg.objects)
            apply_object(s, st, s->phase_objs[i]);
}

static void phases_fini(sim_t *s)
{
    phases_state *st = s->state;
    free(st->cur);
    st->cur = NULL;
}

const sim_policy_ops sim_policy_phases = {
    .name = "phases",
    .params = phases_params,
    .state_bytes = sizeof(phases_state),
    .init = phases_init,
    .on_alloc = phases_alloc,
    .on_phase = phases_switch,
    .fini = phases_fini,
};
