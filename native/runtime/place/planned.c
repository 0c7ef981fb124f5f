/*
 * The planned objects; see planned.h.
 */
#define _GNU_SOURCE
#include "planned.h"
#include "rt.h"
#include "writer.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t key, count;
} occ_slot; /* count 0 = empty */

rt_plan rt_plan_in_force;
pthread_mutex_t rt_planned_lock = PTHREAD_MUTEX_INITIALIZER;
_Atomic uint64_t rt_planned_generation;
static uint32_t phase_now; /* index of the phase whose entries are in force */
static rt_pobj *objs;
static uint64_t objs_cap, objs_used, objs_live, maps_live;
static occ_slot *occ;
static uint64_t occ_cap, occ_used;
static unsigned char
    batch[sizeof(ot_block_header) + RT_PLANNED_BATCH * sizeof(ot_placement_record)];
static uint32_t batch_n;

/* ---- records ------------------------------------------------------------------- */

void rt_planned_flush(void)
{
    if (batch_n && rt_active())
        rt_write_block(&rt_w, batch, OT_TAG_PLACEMENT, sizeof(ot_placement_record),
                       batch_n * (uint32_t)sizeof(ot_placement_record), batch_n);
    batch_n = 0;
}

void rt_planned_record(const rt_pobj *o, uint64_t start, uint64_t end, uint16_t action, int result,
                       uint64_t nodemask)
{
    ot_placement_record r = {.time_ns = rt_now_ns(),
                             .alloc_seq = o->seq,
                             .offset = start - o->addr,
                             .length = end - start,
                             .action = action,
                             .result = result,
                             .nodemask = nodemask};
    memcpy(batch + sizeof(ot_block_header) + batch_n * sizeof r, &r, sizeof r);
    if (++batch_n == RT_PLANNED_BATCH)
        rt_planned_flush();
}

uint32_t rt_planned_pending(void)
{
    return batch_n;
}

/* ---- the table ------------------------------------------------------------------- */

int rt_planned_init(void)
{
    objs_cap = 1024;
    occ_cap = 1024;
    objs = rt_sys_mmap(objs_cap * sizeof *objs);
    occ = rt_sys_mmap(occ_cap * sizeof *occ);
    return objs && occ ? 0 : -1;
}

void rt_planned_fork_child(int planned)
{
    pthread_mutex_init(&rt_planned_lock, NULL);
    batch_n = 0;
    if (planned) {
        memset(objs, 0, objs_cap * sizeof *objs);
        memset(occ, 0, occ_cap * sizeof *occ);
        objs_used = objs_live = maps_live = occ_used = 0;
    }
}

static uint64_t mix(uint64_t a)
{
    a ^= a >> 33;
    a *= 0xff51afd7ed558ccdULL;
    a ^= a >> 33;
    return a;
}

static rt_pobj *find_obj(uint64_t addr, int for_insert)
{
    uint64_t mask = objs_cap - 1, i = mix(addr >> 4) & mask;
    rt_pobj *tomb = NULL;
    for (;;) {
        rt_pobj *o = &objs[i];
        if (o->addr == addr)
            return o;
        if (o->addr == RT_POBJ_EMPTY)
            return for_insert ? (tomb ? tomb : o) : NULL;
        if (o->addr == RT_POBJ_DELETED && !tomb)
            tomb = o;
        i = (i + 1) & mask;
    }
}

static int grow_objs(void)
{
    uint64_t cap = objs_live * 4 < objs_cap ? objs_cap : objs_cap * 2;
    rt_pobj *old = objs, *n = rt_sys_mmap(cap * sizeof *n);
    if (!n)
        return -1;
    uint64_t old_cap = objs_cap;
    objs = n;
    objs_cap = cap;
    objs_used = 0;
    for (uint64_t i = 0; i < old_cap; i++)
        if (old[i].addr > RT_POBJ_DELETED) {
            *find_obj(old[i].addr, 1) = old[i];
            objs_used++;
        }
    rt_sys_munmap(old, old_cap * sizeof *old);
    return 0;
}

uint64_t rt_planned_next_occurrence(uint64_t key)
{
    if ((occ_used + 1) * 2 > occ_cap) {
        uint64_t cap = occ_cap * 2;
        occ_slot *n = rt_sys_mmap(cap * sizeof *n);
        if (!n)
            return RT_PLAN_ANY;
        for (uint64_t i = 0; i < occ_cap; i++) {
            if (!occ[i].count)
                continue;
            uint64_t j = mix(occ[i].key) & (cap - 1);
            while (n[j].count)
                j = (j + 1) & (cap - 1);
            n[j] = occ[i];
        }
        rt_sys_munmap(occ, occ_cap * sizeof *occ);
        occ = n;
        occ_cap = cap;
    }
    uint64_t j = mix(key) & (occ_cap - 1);
    while (occ[j].count && occ[j].key != key)
        j = (j + 1) & (occ_cap - 1);
    if (!occ[j].count) {
        occ[j].key = key;
        occ_used++;
    }
    return occ[j].count++;
}

rt_pobj *rt_planned_find(uint64_t addr)
{
    return objs_live ? find_obj(addr, 0) : NULL;
}

rt_pobj *rt_planned_slot_for(uint64_t addr)
{
    if ((objs_used + 1) * 2 > objs_cap && grow_objs() != 0)
        return NULL;
    rt_pobj *d = find_obj(addr, 1);
    if (d->addr == RT_POBJ_EMPTY)
        objs_used++;
    return d;
}

void rt_planned_put(rt_pobj *d, const rt_pobj *o)
{
    *d = *o;
    objs_live++;
    maps_live += o->is_map;
}

void rt_planned_changed(void)
{
    atomic_fetch_add_explicit(&rt_planned_generation, 1, memory_order_release);
}

void rt_planned_remove(rt_pobj *o)
{
    if (o->is_map)
        maps_live--;
    o->addr = RT_POBJ_DELETED;
    objs_live--;
    rt_planned_changed();
}

uint64_t rt_planned_slots(void)
{
    return objs_cap;
}

rt_pobj *rt_planned_slot(uint64_t i)
{
    return &objs[i];
}

uint64_t rt_planned_maps(void)
{
    return maps_live;
}

/* ---- the plan in force ----------------------------------------------------------- */

uint32_t rt_planned_phase(void)
{
    return phase_now;
}

void rt_planned_set_phase(uint32_t ph)
{
    phase_now = ph;
}

void rt_planned_replan(rt_pobj *o)
{
    uint32_t ph = rt_plan_in_force.phases[phase_now].target;
    uint64_t e = rt_plan_match(&rt_plan_in_force, o->key, o->occurrence, o->size, ph);
    if (e == RT_PLAN_NONE && ph != 0)
        e = rt_plan_match(&rt_plan_in_force, o->key, o->occurrence, o->size, 0);
    o->planned = e != RT_PLAN_NONE;
    o->pages = RT_PLAN_NONE;
    if (!o->planned) {
        o->split = o->lo;
        return;
    }
    if (rt_plan_in_force.entries[e].tier == RT_PLAN_PAGES) {
        o->pages = e;
        o->split = o->lo;
        return;
    }
    uint64_t f = rt_plan_in_force.entries[e].fast_bytes, pg = rt_page_bytes;
    if (f >= o->size)
        o->split = o->hi;
    else {
        uint64_t s = (o->addr + f) & ~(pg - 1);
        o->split = s < o->lo ? o->lo : (s > o->hi ? o->hi : s);
    }
}

int rt_planned_pages_range(const rt_pobj *o, uint64_t e, uint64_t i, uint64_t *start, uint64_t *end)
{
    const rt_plan_range *r = &rt_plan_in_force.ranges[rt_plan_in_force.entries[e].range0 + i];
    uint64_t span = o->hi - o->lo;
    if (r->off >= span)
        return 0;
    *start = o->lo + r->off;
    *end = r->len > span - r->off ? o->hi : *start + r->len;
    return 1;
}

static int by_lo(const void *a, const void *b)
{
    const rt_extent *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

size_t rt_planned_slow_extents(rt_extent *out, size_t cap)
{
    size_t n = 0;
    pthread_mutex_lock(&rt_planned_lock);
    for (uint64_t i = 0; i < objs_cap && n < cap; i++) {
        const rt_pobj *o = &objs[i];
        if (o->addr > RT_POBJ_DELETED && o->planned && o->hi > o->lo &&
            (o->pages != RT_PLAN_NONE || o->split < o->hi))
            out[n++] = (rt_extent){o->lo / rt_page_bytes, o->hi / rt_page_bytes};
    }
    pthread_mutex_unlock(&rt_planned_lock);
    qsort(out, n, sizeof *out, by_lo);
    return n;
}
