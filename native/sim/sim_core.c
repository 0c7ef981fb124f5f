/*
 * Simulator core: event loop (allocations, accesses, frees in time order), the 1 ms policy
 * clock and per-bin statistics. Migrations and reclaim live in sim_tiers.c, objects in
 * sim_objects.c, page storage in sim_pages.c, policies in policy_*.c.
 *
 * Invariants
 *   - fast_pages + slow_pages == live pages == hash entries; fast_pages <= fast_cap.
 *   - Every tick with time <= an event's time runs before that event; ticks are 1 ms apart and
 *     aligned to cfg.start_ns.
 *   - Bin b covers [start_ns + b*bin_ns, start_ns + (b+1)*bin_ns); page gauges of a bin are
 *     taken when the next bin opens (or at sim_finish).
 */
#include "sim_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TICK_NS 1000000ull

static const sim_policy_ops *const POLICIES[] = {
    &sim_policy_first_touch, &sim_policy_numab2, &sim_policy_tpp,    &sim_policy_memtis,
    &sim_policy_hemem,       &sim_policy_static, &sim_policy_phases, &sim_policy_belady,
};
#define NPOLICIES (sizeof POLICIES / sizeof POLICIES[0])

static const char *const COUNTER_NAMES[SIM_C_COUNT_] = {
    "events",           "samples",           "fast_loads",          "fast_stores",
    "slow_loads",       "slow_stores",       "other_accesses",      "alloc_fast_pages",
    "alloc_slow_pages", "pgpromote_success", "pgpromote_candidate", "pgdemote_kswapd",
    "numa_hint_faults", "numa_pte_updates",  "numa_pages_migrated", "pgmigrate_fail",
    "kswapd_wake",      "peak_pages",        "peak_fast_pages",     "hot_threshold_ms",
    "pswpin",           "pswpout",           "pgmajfault",          "pgfault_first_touch",
    "phase_switches",   "pgmigrate_phase",   "swap_fault_pinned",
};

static const sim_policy_ops *find_policy(const char *name)
{
    for (size_t i = 0; i < NPOLICIES; i++)
        if (strcmp(POLICIES[i]->name, name) == 0)
            return POLICIES[i];
    return NULL;
}

const char *sim_policy_names(void)
{
    static char buf[256];
    if (!buf[0]) {
        size_t off = 0;
        for (size_t i = 0; i < NPOLICIES; i++)
            off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%s", i ? "," : "",
                                    POLICIES[i]->name);
    }
    return buf;
}

const char *sim_policy_params(const char *policy)
{
    static __thread char buf[1024];
    const sim_policy_ops *ops = find_policy(policy);
    if (!ops)
        return NULL;
    size_t off = 0;
    buf[0] = 0;
    for (const sim_param_def *p = ops->params; p && p->name && off < sizeof buf; p++)
        off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%s=%g", off ? "," : "", p->name,
                                p->value);
    return buf;
}

sim_t *sim_create(const sim_config *config, const char *policy)
{
    const sim_policy_ops *ops = find_policy(policy);
    if (!ops || config->bin_ns == 0 || (config->page_shift != 12 && config->page_shift != 21))
        return NULL;
    sim_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cfg = *config;
    s->ops = ops;
    for (size_t i = 0; ops->params && ops->params[i].name && i < SIM_MAX_PARAMS; i++)
        s->param[i] = ops->params[i].value;
    s->fast_cap = config->fast_bytes >> config->page_shift;
    s->objects = calloc(config->objects ? config->objects : 1, sizeof *s->objects);
    s->obj_swap_in = calloc(config->objects ? config->objects : 1, sizeof *s->obj_swap_in);
    s->state = calloc(1, ops->state_bytes ? ops->state_bytes : 1);
    s->bins_cap = 64;
    s->bins = calloc(s->bins_cap, sizeof *s->bins);
    if (!s->objects || !s->obj_swap_in || !s->state || !s->bins || sim_pages_init(s) < 0) {
        sim_destroy(s);
        return NULL;
    }
    s->nbins = 1;
    s->bin = &s->bins[0];
    s->bin_end = config->start_ns + config->bin_ns;
    s->now = config->start_ns;
    s->next_tick = config->start_ns + TICK_NS;
    return s;
}

void sim_destroy(sim_t *s)
{
    if (!s)
        return;
    if (s->started && s->ops->fini)
        s->ops->fini(s);
    sim_objects_fini(s);
    sim_pages_fini(s);
    free(s->objects);
    free(s->obj_swap_in);
    free(s->state);
    free(s->bins);
    free(s);
}

int sim_set_param(sim_t *s, const char *name, double value)
{
    for (size_t i = 0; s->ops->params && s->ops->params[i].name; i++)
        if (strcmp(s->ops->params[i].name, name) == 0) {
            s->param[i] = value;
            return 0;
        }
    return -1;
}

double sim_param(const sim_t *s, const char *name)
{
    for (size_t i = 0; s->ops->params && s->ops->params[i].name; i++)
        if (strcmp(s->ops->params[i].name, name) == 0)
            return s->param[i];
    return 0.0;
}

void sim_set_placement(sim_t *s, const uint64_t *fast_bytes, const uint8_t *page_bits,
                       const uint64_t *page_base)
{
    s->place_fast_bytes = fast_bytes;
    s->place_bits = page_bits;
    s->place_base = page_base;
}

void sim_set_phase_placement(sim_t *s, uint32_t nphases, const uint64_t *offsets,
                             const uint32_t *objs, const uint64_t *fast_bytes)
{
    s->phase_count = nphases;
    s->phase_offsets = offsets;
    s->phase_objs = objs;
    s->phase_fast_bytes = fast_bytes;
}

const char *sim_error(const sim_t *s)
{
    return s->error;
}

size_t sim_counter_count(void)
{
    return SIM_C_COUNT_;
}

const char *sim_counter_name(size_t i)
{
    return i < SIM_C_COUNT_ ? COUNTER_NAMES[i] : NULL;
}

void sim_counters(const sim_t *s, uint64_t *out)
{
    memcpy(out, s->counter, sizeof s->counter);
}

void sim_object_swap_ins(const sim_t *s, uint64_t *out)
{
    memcpy(out, s->obj_swap_in, s->cfg.objects * sizeof *out);
}

size_t sim_bins(const sim_t *s, const sim_bin **bins)
{
    *bins = s->bins;
    return s->nbins;
}

/* --- bins and clock --------------------------------------------------------------------- */

static int set_bin(sim_t *s, uint64_t t)
{
    uint64_t b = t > s->cfg.start_ns ? (t - s->cfg.start_ns) / s->cfg.bin_ns : 0;
    if (b < s->nbins)
        return 0;
    if (b >= s->bins_cap) {
        size_t cap = s->bins_cap;
        while (cap <= b)
            cap *= 2;
        sim_bin *nb = realloc(s->bins, cap * sizeof *nb);
        if (!nb) {
            snprintf(s->error, sizeof s->error, "out of memory for %zu statistics bins", cap);
            return -1;
        }
        s->bins = nb;
        s->bins_cap = cap;
    }
    /* close the open bin and every empty bin up to b with the current gauges */
    for (size_t i = s->nbins - 1; i < b; i++) {
        s->bins[i].fast_pages = s->fast_pages;
        s->bins[i].slow_pages = s->slow_pages;
        memset(&s->bins[i + 1], 0, sizeof s->bins[i + 1]);
    }
    s->nbins = (size_t)b + 1;
    s->bin = &s->bins[b];
    s->bin_end = s->cfg.start_ns + (b + 1) * s->cfg.bin_ns;
    return 0;
}

static int advance(sim_t *s, uint64_t t)
{
    while (s->next_tick <= t) {
        s->now = s->next_tick;
        if (set_bin(s, s->now) < 0)
            return -1;
        if (s->ops->on_tick)
            s->ops->on_tick(s, s->now);
        s->next_tick += TICK_NS;
    }
    if (t > s->now)
        s->now = t;
    return set_bin(s, s->now);
}

static int start_policy(sim_t *s)
{
    s->started = true;
    if (s->ops->init && s->ops->init(s) < 0) {
        if (!s->error[0])
            snprintf(s->error, sizeof s->error, "policy %s failed to start", s->ops->name);
        return -1;
    }
    return 0;
}

/* --- events ----------------------------------------------------------------------------- */

/* --- accesses -------------------------------------------------------------------------- */

/* Swap mode: swap one unpinned fast page out, chosen by the policy's evict hook or else by
 * second-chance LRU. Returns the pages swapped out (0 or 1). */
static uint64_t make_room(sim_t *s)
{
    if (!s->ops->evict)
        return sim_reclaim(s, 1, NULL);
    sim_page *victim = s->ops->evict(s);
    if (!victim)
        return 0;
    sim_demote(s, victim);
    return 1;
}

/* Swap mode: an access of weight w to a page in the slow tier. Makes room by swapping out the
 * coldest unpinned fast page (the memcg charge path reclaims before it can fault a page in; the
 * policy's evict hook chooses instead when it has one),
 * then brings the page in: a swap-in (one access charged at slow cost, the w - 1 others left to
 * the caller as fast), or a zero-fill for a page never resident (all w left to the caller).
 * Returns the weight still to charge to pg's tier (0 = all charged here); pg stays slow, with
 * w returned unchanged, when every fast page is pinned. */
static uint64_t swap_fault(sim_t *s, sim_page *pg, bool store, uint64_t w)
{
    bool fresh = (pg->flags & SIM_PG_UNTOUCHED) != 0;
    if (s->fast_pages >= s->fast_cap && (make_room(s) == 0 || s->fast_pages >= s->fast_cap)) {
        /* every fast page pinned, or fast_cap == 0 */
        s->counter[SIM_C_PGMIGRATE_FAIL]++;
        s->counter[SIM_C_SWAP_FAULT_PINNED]++;
        return w;
    }
    pg->tier = SIM_FAST;
    pg->flags &= (uint8_t) ~(SIM_PG_UNTOUCHED | SIM_PG_PROTNONE);
    s->slow_pages--;
    s->fast_pages++;
    sim_lru_push_head(s, pg);
    if (s->fast_pages > s->counter[SIM_C_PEAK_FAST_PAGES])
        s->counter[SIM_C_PEAK_FAST_PAGES] = s->fast_pages;
    if (fresh) {
        s->counter[SIM_C_PGFAULT_FIRST_TOUCH]++;
        return w;
    }
    s->counter[SIM_C_PSWPIN]++;
    s->counter[SIM_C_PGMAJFAULT]++;
    s->bin->swap_in++;
    if (s->event->obj < s->cfg.objects)
        s->obj_swap_in[s->event->obj]++;
    if (store) {
        s->counter[SIM_C_SLOW_STORES]++;
        s->bin->slow_stores++;
    } else {
        s->counter[SIM_C_SLOW_LOADS]++;
        s->bin->slow_loads++;
    }
    return w - 1;
}

/* The page an access falls in: through its object's page array when the event names the
 * object and the address is inside it (one load, no hash), else by hash lookup. */
static inline sim_page *find_page(sim_t *s, const sim_event *e)
{
    uint64_t vpn = e->addr >> s->cfg.page_shift;
    if (e->obj < s->cfg.objects) {
        const sim_object *o = &s->objects[e->obj];
        uint64_t k = vpn - o->first_vpn;
        if (k < o->npages && o->space == e->space && o->pages[k] != SIM_NIL)
            return &s->pool[o->pages[k]];
    }
    return sim_page_lookup(s, sim_page_key(e->space, vpn));
}

static inline void do_access(sim_t *s, const sim_event *e)
{
    uint64_t w = e->size ? e->size : 1;
    bool store = (e->flags & 0x3) == 0x3; /* OT_SAMPLE_RW_KNOWN | OT_SAMPLE_WRITE */
    s->counter[SIM_C_SAMPLES]++;
    s->event = e;
    sim_page *pg = find_page(s, e);
    if (!pg) {
        s->counter[SIM_C_OTHER] += w;
        s->bin->other += w;
        return;
    }
    if (s->cfg.swap && pg->tier == SIM_SLOW && (w = swap_fault(s, pg, store, w)) == 0)
        goto touched;
    if (pg->tier == SIM_FAST) {
        if (store) {
            s->counter[SIM_C_FAST_STORES] += w;
            s->bin->fast_stores += w;
        } else {
            s->counter[SIM_C_FAST_LOADS] += w;
            s->bin->fast_loads += w;
        }
    } else if (store) {
        s->counter[SIM_C_SLOW_STORES] += w;
        s->bin->slow_stores += w;
    } else {
        s->counter[SIM_C_SLOW_LOADS] += w;
        s->bin->slow_loads += w;
    }
touched:
    pg->flags |= SIM_PG_REFERENCED;
    if (s->ops->on_access && (!s->ops->access_flags || (pg->flags & s->ops->access_flags)))
        s->ops->on_access(s, pg, e->time_ns, w, store);
}

/* Software prefetch for the access path, in three stages so that each load finds its line in
 * cache: the object record PREFETCH_OBJ events ahead, the page-array entry PREFETCH_ENTRY ahead,
 * the page PREFETCH_PAGE ahead (accesses without an object: the hash slot instead). Only a
 * hint: correctness does not depend on it. */
#ifndef PREFETCH_OBJ
#define PREFETCH_OBJ   32
#define PREFETCH_ENTRY 16
#define PREFETCH_PAGE  8
#endif

static inline void prefetch_stage(const sim_t *s, const sim_event *e, int stage)
{
    if (e->type != SIM_EV_ACCESS)
        return;
    if (e->obj >= s->cfg.objects) {
        if (stage == 1) {
            uint64_t key = sim_page_key(e->space, e->addr >> s->cfg.page_shift);
            uint64_t i = sim_hash_key(key) & s->hmask;
            __builtin_prefetch(&s->hkeys[i]);
            __builtin_prefetch(&s->hvals[i]);
        }
        return;
    }
    const sim_object *o = &s->objects[e->obj];
    if (stage == 0) {
        __builtin_prefetch(o);
        return;
    }
    uint64_t k = (e->addr >> s->cfg.page_shift) - o->first_vpn;
    if (k >= o->npages)
        return;
    if (stage == 1)
        __builtin_prefetch(&o->pages[k]);
    else if (o->pages[k] != SIM_NIL)
        __builtin_prefetch(&s->pool[o->pages[k]]);
}

int sim_feed(sim_t *s, const sim_event *ev, size_t n)
{
    if (!s->started && start_policy(s) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const sim_event *e = &ev[i];
        if (i + PREFETCH_OBJ < n)
            prefetch_stage(s, &ev[i + PREFETCH_OBJ], 0);
        if (i + PREFETCH_ENTRY < n)
            prefetch_stage(s, &ev[i + PREFETCH_ENTRY], 1);
        if (i + PREFETCH_PAGE < n)
            prefetch_stage(s, &ev[i + PREFETCH_PAGE], 2);
        if (e->time_ns >= s->next_tick || e->time_ns >= s->bin_end || e->time_ns < s->now) {
            if (e->time_ns < s->now) {
                snprintf(s->error, sizeof s->error, "events out of time order at event %zu", i);
                return -1;
            }
            if (advance(s, e->time_ns) < 0)
                return -1;
        } else {
            s->now = e->time_ns; /* no tick due, same bin */
        }
        s->counter[SIM_C_EVENTS]++;
        switch (e->type) {
        case SIM_EV_ACCESS: do_access(s, e); break;
        case SIM_EV_ALLOC:
            if (sim_do_alloc(s, e) < 0)
                return -1;
            break;
        case SIM_EV_FREE:
            if (sim_do_free(s, e) < 0)
                return -1;
            break;
        case SIM_EV_PHASE:
            if (!s->ops->on_phase)
                break;
            if (e->obj >= s->phase_count) {
                snprintf(s->error, sizeof s->error, "phase %u out of range (%u phases)", e->obj,
                         s->phase_count);
                return -1;
            }
            s->counter[SIM_C_PHASE_SWITCHES]++;
            s->ops->on_phase(s, e->obj);
            break;
        default: snprintf(s->error, sizeof s->error, "unknown event type %u", e->type); return -1;
        }
    }
    return 0;
}

void sim_finish(sim_t *s, uint64_t end_ns)
{
    if (!s->started && start_policy(s) < 0)
        return;
    if (end_ns > s->now)
        advance(s, end_ns);
    s->bin->fast_pages = s->fast_pages;
    s->bin->slow_pages = s->slow_pages;
}
