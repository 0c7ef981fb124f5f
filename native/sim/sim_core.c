/*
 * Simulator core: event loop (allocations, accesses, frees in time order), the 1 ms policy
 * clock, per-bin statistics, migrations and kswapd-like reclaim. Policies live in policy_*.c.
 *
 * Invariants
 *   - fast_pages + slow_pages == live pages == hash entries; fast_pages <= fast_cap.
 *   - A page is on the fast LRU iff its tier is SIM_FAST.
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
#define KEY_SPACE_SHIFT 40

static const sim_policy_ops *const POLICIES[] = {
    &sim_policy_first_touch, &sim_policy_numab2, &sim_policy_tpp,
    &sim_policy_memtis,      &sim_policy_hemem,  &sim_policy_static,
};
#define NPOLICIES (sizeof POLICIES / sizeof POLICIES[0])

static const char *const COUNTER_NAMES[SIM_C_COUNT_] = {
    "events", "samples",
    "fast_loads", "fast_stores", "slow_loads", "slow_stores", "other_accesses",
    "alloc_fast_pages", "alloc_slow_pages",
    "pgpromote_success", "pgpromote_candidate", "pgdemote_kswapd",
    "numa_hint_faults", "numa_pte_updates", "numa_pages_migrated",
    "pgmigrate_fail", "kswapd_wake", "peak_pages", "peak_fast_pages",
    "hot_threshold_ms",
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
    s->state = calloc(1, ops->state_bytes ? ops->state_bytes : 1);
    s->bins_cap = 64;
    s->bins = calloc(s->bins_cap, sizeof *s->bins);
    if (!s->objects || !s->state || !s->bins || sim_pages_init(s) < 0) {
        sim_destroy(s);
        return NULL;
    }
    s->nbins = 1;
    s->bin = &s->bins[0];
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
    sim_pages_fini(s);
    free(s->objects);
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

const char *sim_error(const sim_t *s) { return s->error; }

size_t sim_counter_count(void) { return SIM_C_COUNT_; }

const char *sim_counter_name(size_t i) { return i < SIM_C_COUNT_ ? COUNTER_NAMES[i] : NULL; }

void sim_counters(const sim_t *s, uint64_t *out)
{
    memcpy(out, s->counter, sizeof s->counter);
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

static int start(sim_t *s)
{
    s->started = true;
    if (s->ops->init && s->ops->init(s) < 0) {
        if (!s->error[0])
            snprintf(s->error, sizeof s->error, "policy %s failed to start", s->ops->name);
        return -1;
    }
    return 0;
}

/* --- migrations ------------------------------------------------------------------------- */

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
    s->counter[SIM_C_PGDEMOTE_KSWAPD]++;
    s->bin->demoted++;
}

uint64_t sim_reclaim(sim_t *s, uint64_t target_free, sim_keep_fn keep)
{
    uint64_t demoted = 0, scanned = 0, limit = 2 * s->fast_pages + 2;
    if (target_free > s->fast_cap)
        target_free = s->fast_cap;
    while (sim_fast_free(s) < target_free && s->lru_tail != SIM_NIL && scanned++ < limit) {
        sim_page *pg = &s->pool[s->lru_tail];
        bool rotate = (pg->flags & (SIM_PG_REFERENCED | SIM_PG_PINNED)) || (keep && keep(s, pg));
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

/* --- events ----------------------------------------------------------------------------- */

static inline uint64_t page_key(uint32_t space, uint64_t vpn)
{
    return ((uint64_t)(space + 1) << KEY_SPACE_SHIFT) | vpn;
}

static void drop_page(sim_t *s, sim_page *pg)
{
    if (s->ops->on_free)
        s->ops->on_free(s, pg);
    if (pg->tier == SIM_FAST) {
        sim_lru_unlink(s, pg);
        s->fast_pages--;
    } else {
        s->slow_pages--;
    }
    sim_page_remove(s, pg);
}

static int do_alloc(sim_t *s, const sim_event *e)
{
    if (e->obj >= s->cfg.objects) {
        snprintf(s->error, sizeof s->error, "object index %u out of range (%u objects)", e->obj,
                 s->cfg.objects);
        return -1;
    }
    sim_object *o = &s->objects[e->obj];
    o->addr = e->addr;
    o->size = e->size;
    o->space = e->space;
    if (e->size == 0)
        return 0;
    unsigned sh = s->cfg.page_shift;
    uint64_t first = e->addr >> sh, last = (e->addr + e->size - 1) >> sh;
    for (uint64_t vpn = first; vpn <= last; vpn++) {
        uint64_t key = page_key(e->space, vpn);
        sim_page *pg = sim_page_lookup(s, key);
        if (pg) {
            pg->refs++;
            continue;
        }
        pg = sim_page_insert(s, key);
        if (!pg) {
            snprintf(s->error, sizeof s->error, "out of memory for %llu live pages",
                     (unsigned long long)(s->fast_pages + s->slow_pages));
            return -1;
        }
        pg->refs = 1;
        uint64_t start = vpn << sh;
        uint64_t offset = start > e->addr ? start - e->addr : 0;
        int tier = s->ops->on_alloc(s, pg, e->obj, offset);
        if (tier == SIM_FAST && s->fast_pages < s->fast_cap) {
            pg->tier = SIM_FAST;
            s->fast_pages++;
            sim_lru_push_head(s, pg);
            s->counter[SIM_C_ALLOC_FAST]++;
        } else {
            pg->tier = SIM_SLOW;
            s->slow_pages++;
            s->counter[SIM_C_ALLOC_SLOW]++;
        }
    }
    uint64_t live = s->fast_pages + s->slow_pages;
    if (live > s->counter[SIM_C_PEAK_PAGES])
        s->counter[SIM_C_PEAK_PAGES] = live;
    if (s->fast_pages > s->counter[SIM_C_PEAK_FAST_PAGES])
        s->counter[SIM_C_PEAK_FAST_PAGES] = s->fast_pages;
    return 0;
}

/* Whole object: drop one reference from every page it overlaps. */
static void free_object(sim_t *s, sim_object *o)
{
    unsigned sh = s->cfg.page_shift;
    if (o->size) {
        uint64_t first = o->addr >> sh, last = (o->addr + o->size - 1) >> sh;
        for (uint64_t vpn = first; vpn <= last; vpn++) {
            sim_page *pg = sim_page_lookup(s, page_key(o->space, vpn));
            if (pg && --pg->refs == 0)
                drop_page(s, pg);
        }
    }
    o->size = 0;
}

/* Range [addr, addr+size) unmapped: drop every page lying fully inside it. */
static void free_range(sim_t *s, uint32_t space, uint64_t addr, uint64_t size)
{
    unsigned sh = s->cfg.page_shift;
    uint64_t psz = 1ull << sh;
    uint64_t first = (addr + psz - 1) >> sh, end = (addr + size) >> sh;
    for (uint64_t vpn = first; vpn < end; vpn++) {
        sim_page *pg = sim_page_lookup(s, page_key(space, vpn));
        if (pg)
            drop_page(s, pg);
    }
}

static int do_free(sim_t *s, const sim_event *e)
{
    if (e->obj == SIM_NO_OBJ) {
        free_range(s, e->space, e->addr, e->size);
        return 0;
    }
    if (e->obj >= s->cfg.objects) {
        snprintf(s->error, sizeof s->error, "object index %u out of range (%u objects)", e->obj,
                 s->cfg.objects);
        return -1;
    }
    sim_object *o = &s->objects[e->obj];
    if (e->size == 0 || (e->addr <= o->addr && e->addr + e->size >= o->addr + o->size)) {
        free_object(s, o);
        return 0;
    }
    /* a part of a mapping: drop its pages, keep the object's remaining prefix or suffix */
    free_range(s, e->space, e->addr, e->size);
    uint64_t end = o->addr + o->size;
    if (e->addr <= o->addr) {
        uint64_t cut = e->addr + e->size - o->addr;
        o->addr += cut;
        o->size = end - o->addr;
    } else if (e->addr < end) {
        o->size = e->addr - o->addr; /* the tail past the hole, if any, is forgotten */
    }
    return 0;
}

static inline void do_access(sim_t *s, const sim_event *e)
{
    uint64_t w = e->size ? e->size : 1;
    bool store = (e->flags & 0x3) == 0x3; /* OT_SAMPLE_RW_KNOWN | OT_SAMPLE_WRITE */
    s->counter[SIM_C_SAMPLES]++;
    sim_page *pg = sim_page_lookup(s, page_key(e->space, e->addr >> s->cfg.page_shift));
    if (!pg) {
        s->counter[SIM_C_OTHER] += w;
        s->bin->other += w;
        return;
    }
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
    pg->flags |= SIM_PG_REFERENCED;
    if (s->ops->on_access)
        s->ops->on_access(s, pg, e->time_ns, w, store);
}

/* Software prefetch for the access path: the hash slot of the access PREFETCH_FAR events
 * ahead, and the page of the one PREFETCH_NEAR ahead (when its slot is the first probe). Only a
 * hint: correctness does not depend on it. */
#define PREFETCH_FAR 16
#define PREFETCH_NEAR 8

static inline void prefetch_slot(const sim_t *s, const sim_event *e)
{
    if (e->type != SIM_EV_ACCESS)
        return;
    uint64_t i = sim_hash_key(page_key(e->space, e->addr >> s->cfg.page_shift)) & s->hmask;
    __builtin_prefetch(&s->hkeys[i]);
    __builtin_prefetch(&s->hvals[i]);
}

static inline void prefetch_page(const sim_t *s, const sim_event *e)
{
    if (e->type != SIM_EV_ACCESS)
        return;
    uint64_t key = page_key(e->space, e->addr >> s->cfg.page_shift);
    uint64_t i = sim_hash_key(key) & s->hmask;
    if (s->hkeys[i] == key)
        __builtin_prefetch(&s->pool[s->hvals[i]]);
}

int sim_feed(sim_t *s, const sim_event *ev, size_t n)
{
    if (!s->started && start(s) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const sim_event *e = &ev[i];
        if (i + PREFETCH_FAR < n)
            prefetch_slot(s, &ev[i + PREFETCH_FAR]);
        if (i + PREFETCH_NEAR < n)
            prefetch_page(s, &ev[i + PREFETCH_NEAR]);
        if (e->time_ns >= s->next_tick || e->time_ns > s->now) {
            if (e->time_ns < s->now) {
                snprintf(s->error, sizeof s->error, "events out of time order at event %zu", i);
                return -1;
            }
            if (advance(s, e->time_ns) < 0)
                return -1;
        }
        s->counter[SIM_C_EVENTS]++;
        switch (e->type) {
        case SIM_EV_ACCESS:
            do_access(s, e);
            break;
        case SIM_EV_ALLOC:
            if (do_alloc(s, e) < 0)
                return -1;
            break;
        case SIM_EV_FREE:
            if (do_free(s, e) < 0)
                return -1;
            break;
        default:
            snprintf(s->error, sizeof s->error, "unknown event type %u", e->type);
            return -1;
        }
    }
    return 0;
}

void sim_finish(sim_t *s, uint64_t end_ns)
{
    if (!s->started && start(s) < 0)
        return;
    if (end_ns > s->now)
        advance(s, end_ns);
    s->bin->fast_pages = s->fast_pages;
    s->bin->slow_pages = s->slow_pages;
}
