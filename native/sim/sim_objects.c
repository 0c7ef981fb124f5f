/*
 * Objects: allocation and free events, each live object's direct page array (sim_object), and
 * the live objects in address order for scanners.
 *
 * Invariants
 *   - A page's refs equals the number of live objects whose page array names it.
 *   - A live object's pages[k] is SIM_NIL or the pool index of the live page with key
 *     sim_page_key(space, first_vpn + k): dropping a page with refs > 0 (an unmapped range)
 *     clears the entries naming it in every live object of that space overlapping the range.
 *   - sorted_dirty is set by every allocation and free; sim_sorted_objects rebuilds then.
 */
#include "sim_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void release_pages(sim_object *o)
{
    free(o->pages);
    o->pages = NULL;
    o->npages = 0;
}

int sim_do_alloc(sim_t *s, const sim_event *e)
{
    if (e->obj >= s->cfg.objects) {
        snprintf(s->error, sizeof s->error, "object index %u out of range (%u objects)", e->obj,
                 s->cfg.objects);
        return -1;
    }
    sim_object *o = &s->objects[e->obj];
    release_pages(o);
    o->addr = e->addr;
    o->size = e->size;
    o->space = e->space;
    s->sorted_dirty = true;
    if (e->size == 0)
        return 0;
    unsigned sh = s->cfg.page_shift;
    uint64_t first = e->addr >> sh, last = (e->addr + e->size - 1) >> sh;
    if (last - first >= 0xFFFFFFFFull) {
        snprintf(s->error, sizeof s->error, "object %u is too large (%llu pages)", e->obj,
                 (unsigned long long)(last - first + 1));
        return -1;
    }
    o->first_vpn = first;
    o->pages = malloc((size_t)(last - first + 1) * sizeof *o->pages);
    if (!o->pages) {
        snprintf(s->error, sizeof s->error, "out of memory for object %u's page array", e->obj);
        return -1;
    }
    o->npages = (uint32_t)(last - first + 1);
    for (uint64_t vpn = first; vpn <= last; vpn++) {
        uint64_t key = sim_page_key(e->space, vpn);
        sim_page *pg = sim_page_lookup(s, key);
        if (pg) {
            pg->refs++;
            o->pages[vpn - first] = (uint32_t)(pg - s->pool);
            continue;
        }
        pg = sim_page_insert(s, key);
        if (!pg) {
            snprintf(s->error, sizeof s->error, "out of memory for %llu live pages",
                     (unsigned long long)(s->fast_pages + s->slow_pages));
            o->npages = (uint32_t)(vpn - first); /* the pages taken so far stay consistent */
            return -1;
        }
        pg->refs = 1;
        o->pages[vpn - first] = (uint32_t)(pg - s->pool);
        uint64_t start = vpn << sh;
        uint64_t offset = start > e->addr ? start - e->addr : 0;
        int tier = s->ops->on_alloc(s, pg, e->obj, offset);
        if (tier == SIM_FAST && s->cfg.swap && (pg->flags & SIM_PG_PINNED) &&
            s->fast_pages >= s->fast_cap)
            sim_reclaim(s, 1, NULL); /* mlock faults the page in, swapping an unlocked one out */
        if (tier == SIM_FAST && s->fast_pages < s->fast_cap) {
            pg->tier = SIM_FAST;
            s->fast_pages++;
            sim_lru_push_head(s, pg);
            s->counter[SIM_C_ALLOC_FAST]++;
        } else {
            pg->flags &= (uint8_t)~SIM_PG_PINNED; /* a pin holds only in the fast tier */
            pg->tier = SIM_SLOW;
            if (s->cfg.swap)
                pg->flags |= SIM_PG_UNTOUCHED; /* not resident anywhere until first touched */
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

/* Whole object: drop one reference from every page it names. */
static void free_object(sim_t *s, sim_object *o)
{
    for (uint32_t k = 0; k < o->npages; k++) {
        uint32_t idx = o->pages[k];
        if (idx == SIM_NIL)
            continue;
        sim_page *pg = &s->pool[idx];
        if (--pg->refs == 0)
            drop_page(s, pg);
    }
    release_pages(o);
    o->size = 0;
    s->sorted_dirty = true;
}

/* Clear the entries of live objects in `space` naming pages in [first, end) (page numbers). */
static void invalidate(sim_t *s, uint32_t space, uint64_t first, uint64_t end)
{
    for (uint32_t i = 0; i < s->cfg.objects; i++) {
        sim_object *o = &s->objects[i];
        if (!o->npages || o->space != space || o->first_vpn >= end ||
            o->first_vpn + o->npages <= first)
            continue;
        uint64_t lo = first > o->first_vpn ? first - o->first_vpn : 0;
        uint64_t hi = end - o->first_vpn < o->npages ? end - o->first_vpn : o->npages;
        for (uint64_t k = lo; k < hi; k++)
            o->pages[k] = SIM_NIL;
    }
}

/* Range [addr, addr+size) unmapped: drop every page lying fully inside it. `owner` (or NULL)
 * is the object being cut; pages only it references need no search of the other objects. */
static void free_range(sim_t *s, sim_object *owner, uint32_t space, uint64_t addr, uint64_t size)
{
    unsigned sh = s->cfg.page_shift;
    uint64_t psz = 1ull << sh;
    uint64_t first = (addr + psz - 1) >> sh, end = (addr + size) >> sh;
    bool shared = false;
    for (uint64_t vpn = first; vpn < end; vpn++) {
        sim_page *pg = sim_page_lookup(s, sim_page_key(space, vpn));
        if (!pg)
            continue;
        bool mine = owner && pg->refs == 1 && vpn - owner->first_vpn < owner->npages &&
                    owner->pages[vpn - owner->first_vpn] == (uint32_t)(pg - s->pool);
        if (mine)
            owner->pages[vpn - owner->first_vpn] = SIM_NIL;
        else
            shared = true;
        drop_page(s, pg);
    }
    if (shared)
        invalidate(s, space, first, end); /* rare: a range under objects still live */
    s->sorted_dirty = true;
}

int sim_do_free(sim_t *s, const sim_event *e)
{
    if (e->obj == SIM_NO_OBJ) {
        free_range(s, NULL, e->space, e->addr, e->size);
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
    free_range(s, o, e->space, e->addr, e->size);
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

void sim_objects_fini(sim_t *s)
{
    for (uint32_t i = 0; s->objects && i < s->cfg.objects; i++)
        release_pages(&s->objects[i]);
    free(s->sorted);
    s->sorted = NULL;
}

typedef struct sort_item {
    uint64_t key; /* sim_page_key(space, first_vpn): orders by space, then address */
    uint32_t idx, pad;
} sort_item;

static int by_key(const void *a, const void *b)
{
    const sort_item *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

const uint32_t *sim_sorted_objects(sim_t *s, size_t *n)
{
    if (s->sorted_dirty) {
        s->sorted_dirty = false;
        size_t live = 0;
        for (uint32_t i = 0; i < s->cfg.objects; i++)
            live += s->objects[i].npages != 0;
        sort_item *items = malloc((live ? live : 1) * sizeof *items);
        if (live > s->sorted_cap) {
            uint32_t *p = realloc(s->sorted, live * sizeof *p);
            if (p) {
                s->sorted = p;
                s->sorted_cap = live;
            }
        }
        if (!items || live > s->sorted_cap) {
            free(items);
            s->sorted_dirty = true;
            *n = 0;
            return NULL;
        }
        size_t m = 0;
        for (uint32_t i = 0; i < s->cfg.objects; i++)
            if (s->objects[i].npages)
                items[m++] =
                    (sort_item){sim_page_key(s->objects[i].space, s->objects[i].first_vpn), i, 0};
        qsort(items, m, sizeof *items, by_key);
        for (size_t i = 0; i < m; i++)
            s->sorted[i] = items[i].idx;
        s->nsorted = m;
        free(items);
    }
    *n = s->nsorted;
    return s->sorted;
}
