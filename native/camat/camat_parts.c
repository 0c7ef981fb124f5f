/* The C-AMAT model's parts: set-associative caches, the per-level cycle timeline and the
 * page-LRU local buffer (camat_internal.h). */
#define _GNU_SOURCE
#include "camat_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_BYTES (2u << 20)

void *cm_zalloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    size_t bytes = n * size;
    if (bytes < HUGE_BYTES / 2)
        return calloc(n ? n : 1, size ? size : 1);
    /* large tables are looked up at random: huge pages save a TLB miss per look-up */
    size_t rounded = (bytes + HUGE_BYTES - 1) / HUGE_BYTES * HUGE_BYTES;
    void *p = NULL;
    if (posix_memalign(&p, HUGE_BYTES, rounded) != 0)
        return NULL;
    madvise(p, rounded, MADV_HUGEPAGE); /* advice only: base pages when refused */
    memset(p, 0, bytes);
    return p;
}

/* ---- caches ---------------------------------------------------------------------------- */

int cm_cache_init(cm_cache *c, uint64_t size_bytes, uint32_t ways, uint32_t line_bytes)
{
    memset(c, 0, sizeof *c);
    uint64_t sets = size_bytes / ((uint64_t)ways * line_bytes);
    if (sets == 0)
        sets = 1;
    c->sets = sets;
    c->set_mask = (sets & (sets - 1)) == 0 ? sets - 1 : 0;
    c->ways = ways;
    c->way = cm_zalloc(sets * ways, sizeof *c->way);
    c->state = cm_zalloc(sets * ways, 1);
    return c->way && c->state ? 0 : -1;
}

void cm_cache_free(cm_cache *c)
{
    free(c->way);
    free(c->state);
    memset(c, 0, sizeof *c);
}

int64_t cm_cache_fill(cm_cache *c, uint64_t line, uint8_t state)
{
    uint64_t base = cm_set_of(c, line) * c->ways;
    uint64_t victim = base;
    for (uint32_t w = 0; w < c->ways; w++) {
        uint64_t s = base + w;
        if (c->way[s].tag == 0) {
            victim = s;
            break;
        }
        if (c->way[s].stamp < c->way[victim].stamp)
            victim = s;
    }
    c->way[victim].tag = line + 1;
    c->state[victim] = state;
    c->way[victim].stamp = ++c->clock;
    return (int64_t)victim;
}

/* ---- timeline -------------------------------------------------------------------------- */

int cm_timeline_init(cm_timeline *tl, uint64_t ring, camat_counts *total, camat_counts *by_object,
                     uint32_t objects, camat_counts *by_region, uint32_t regions)
{
    memset(tl, 0, sizeof *tl);
    tl->ring = ring;
    tl->mask = ring - 1;
    tl->delta = cm_zalloc(ring, sizeof *tl->delta);
    tl->prefix = cm_zalloc(ring, sizeof *tl->prefix);
    tl->events = cm_zalloc(ring / 64, sizeof *tl->events);
    tl->qcap = 4096;
    tl->q = malloc(tl->qcap * sizeof *tl->q);
    tl->total = total;
    tl->by_object = by_object;
    tl->by_region = by_region;
    tl->objects = objects;
    tl->regions = regions;
    return tl->delta && tl->prefix && tl->q && tl->events ? 0 : -1;
}

void cm_timeline_free(cm_timeline *tl)
{
    free(tl->delta);
    free(tl->prefix);
    free(tl->events);
    free(tl->q);
    memset(tl, 0, sizeof *tl);
}

int cm_timeline_add(cm_timeline *tl, uint64_t start, uint64_t hit_end, uint64_t done, int missed,
                    uint32_t object, uint32_t region)
{
    if (start < tl->t || done - tl->t >= tl->ring - 1)
        return -1;
    if (tl->qlen == tl->qcap) { /* grow the FIFO, unrolling it to start at 0 */
        cm_pending *q = malloc(2 * tl->qcap * sizeof *q);
        if (!q)
            return -1;
        for (uint64_t i = 0; i < tl->qlen; i++)
            q[i] = tl->q[(tl->qhead + i) & (tl->qcap - 1)];
        free(tl->q);
        tl->q = q;
        tl->qhead = 0;
        tl->qcap *= 2;
    }
    uint64_t s = start & tl->mask, h = hit_end & tl->mask, d = done & tl->mask;
    tl->delta[s].dh++;
    tl->delta[h].dh--;
    tl->events[s / 64] |= 1ULL << (s % 64);
    tl->events[h / 64] |= 1ULL << (h % 64);
    if (missed) {
        tl->delta[h].dm++;
        tl->delta[d].dm--;
        tl->events[d / 64] |= 1ULL << (d % 64);
    }
    tl->q[(tl->qhead + tl->qlen++) & (tl->qcap - 1)] =
        (cm_pending){start, hit_end, done, tl->t, object, region, (uint32_t)missed, 0};
    return 0;
}

static void add_final(camat_counts *c, const cm_pending *p, uint64_t pure, double hs, double ms,
                      double ps)
{
    c->accesses++;
    c->hit_phase += p->hit_end - p->start;
    c->hit_share += hs;
    if (p->missed) {
        c->misses++;
        c->miss_phase += p->done - p->hit_end;
        c->miss_share += ms;
        c->pure_phase += pure;
        c->pure_share += ps;
        c->pure_misses += pure > 0;
    }
}

/* Final shares of the FIFO head (its last cycle is swept). */
static void finalize(cm_timeline *tl, const cm_pending *p)
{
    uint64_t m = tl->mask;
    const cm_prefix *s = &tl->prefix[p->start & m], *h = &tl->prefix[p->hit_end & m];
    double hs = h->qh - s->qh;
    uint64_t pure = 0;
    double ms = 0, ps = 0;
    if (p->missed) {
        const cm_prefix *d = &tl->prefix[p->done & m];
        pure = d->pure - h->pure;
        ms = d->qm - h->qm;
        ps = d->qp - h->qp;
    }
    add_final(tl->total, p, pure, hs, ms, ps);
    add_final(&tl->by_object[p->object], p, pure, hs, ms, ps);
    add_final(&tl->by_region[p->region], p, pure, hs, ms, ps);
}

/* The first event cycle in [t, limit), or limit. */
static uint64_t next_event(const cm_timeline *tl, uint64_t limit)
{
    uint64_t c = tl->t;
    while (c < limit) {
        uint64_t i = c & tl->mask;
        uint64_t word = tl->events[i / 64] >> (i % 64);
        if (word)
            return c + (uint64_t)__builtin_ctzll(word) < limit ? c + (uint64_t)__builtin_ctzll(word)
                                                               : limit;
        c += 64 - i % 64;
    }
    return limit;
}

/* n cycles with the open phases unchanged. */
static void count_cycles(cm_timeline *tl, camat_counts *tot, uint64_t n)
{
    double k = (double)n;
    if (tl->hits > 0) {
        tot->hit_cycles += n;
        tl->qh_now += k / (double)tl->hits;
    }
    if (tl->misses > 0) {
        tot->miss_cycles += n;
        tl->qm_now += k / (double)tl->misses;
        if (tl->hits == 0) {
            tot->pure_cycles += n;
            tl->pure_now += n;
            tl->qp_now += k / (double)tl->misses;
        }
    }
    if (tl->hits > 0 || tl->misses > 0)
        tot->active_cycles += n;
}

/* Sweeps [t, limit) without looking at the FIFO. An event cycle gets its prefixes and phase
 * changes but stays at t with its bit cleared, so the next step counts it together with the
 * quiet cycles after it (one count_cycles call per event). */
static void sweep(cm_timeline *tl, camat_counts *tot, uint64_t limit)
{
    while (tl->t < limit) {
        uint64_t e = next_event(tl, limit);
        if (e > tl->t) {
            count_cycles(tl, tot, e - tl->t);
            tl->t = e;
            continue;
        }
        uint64_t i = tl->t & tl->mask;
        tl->events[i / 64] &= ~(1ULL << (i % 64));
        tl->prefix[i] = (cm_prefix){tl->pure_now, tl->qh_now, tl->qm_now, tl->qp_now};
        tl->hits += tl->delta[i].dh;
        tl->misses += tl->delta[i].dm;
        tl->delta[i] = (cm_delta){0, 0};
    }
}

void cm_timeline_advance(cm_timeline *tl, uint64_t frontier)
{
    camat_counts *tot = tl->total;
    for (;;) {
        /* heads whose last event cycle is swept are final (FIFO order: the sums' order) */
        while (tl->qlen && tl->q[tl->qhead].done < tl->t) {
            finalize(tl, &tl->q[tl->qhead]);
            tl->qhead = (tl->qhead + 1) & (tl->qcap - 1);
            tl->qlen--;
        }
        /* the head's start must stay inside the ring until it is final; later entries were
         * added at a later sweep position, so the head's bound holds for all of them */
        uint64_t limit = frontier;
        if (tl->qlen) {
            uint64_t keep = tl->q[tl->qhead].floor + tl->ring - 1;
            if (keep < limit)
                limit = keep;
        }
        if (tl->t >= limit)
            return;
        sweep(tl, tot, limit);
    }
}

/* ---- local buffer ---------------------------------------------------------------------- */

#define NONE UINT32_MAX

int cm_local_init(cm_local *b, uint64_t capacity)
{
    memset(b, 0, sizeof *b);
    b->capacity = capacity;
    b->head = b->tail = NONE;
    uint64_t h = 16;
    while (h < capacity * 2)
        h *= 2;
    b->hmask = h - 1;
    b->keys = cm_zalloc(h, sizeof *b->keys);
    b->vals = cm_zalloc(h, sizeof *b->vals);
    uint64_t n = capacity ? capacity : 1;
    b->page = cm_zalloc(n, sizeof *b->page);
    b->prev = cm_zalloc(n, sizeof *b->prev);
    b->next = cm_zalloc(n, sizeof *b->next);
    return b->keys && b->vals && b->page && b->prev && b->next && capacity < NONE ? 0 : -1;
}

void cm_local_free(cm_local *b)
{
    free(b->keys);
    free(b->vals);
    free(b->page);
    free(b->prev);
    free(b->next);
    memset(b, 0, sizeof *b);
}

static uint64_t hash_page(uint64_t p)
{
    return (p * 0x9E3779B97F4A7C15ULL) >> 17;
}

static void unlink_node(cm_local *b, uint32_t n)
{
    if (b->prev[n] != NONE)
        b->next[b->prev[n]] = b->next[n];
    else
        b->head = b->next[n];
    if (b->next[n] != NONE)
        b->prev[b->next[n]] = b->prev[n];
    else
        b->tail = b->prev[n];
}

static void push_front(cm_local *b, uint32_t n)
{
    b->prev[n] = NONE;
    b->next[n] = b->head;
    if (b->head != NONE)
        b->prev[b->head] = n;
    b->head = n;
    if (b->tail == NONE)
        b->tail = n;
}

/* Removes key page from the table (linear probing, backward-shift deletion). */
static void table_remove(cm_local *b, uint64_t page)
{
    uint64_t i = hash_page(page) & b->hmask;
    while (b->keys[i] != page + 1)
        i = (i + 1) & b->hmask;
    for (;;) {
        b->keys[i] = 0;
        uint64_t j = i;
        for (;;) {
            j = (j + 1) & b->hmask;
            if (b->keys[j] == 0)
                return;
            uint64_t home = hash_page(b->keys[j] - 1) & b->hmask;
            /* move j back to i when its home is not in (i, j] (cyclically) */
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
                break;
        }
        b->keys[i] = b->keys[j];
        b->vals[i] = b->vals[j];
        i = j;
    }
}

int cm_local_access(cm_local *b, uint64_t page)
{
    if (b->capacity == 0)
        return 0;
    uint64_t i = hash_page(page) & b->hmask;
    while (b->keys[i]) {
        if (b->keys[i] == page + 1) {
            uint32_t n = b->vals[i];
            if (b->head != n) {
                unlink_node(b, n);
                push_front(b, n);
            }
            return 1;
        }
        i = (i + 1) & b->hmask;
    }
    uint32_t n;
    if (b->used < b->capacity) {
        n = (uint32_t)b->used++;
    } else {
        n = b->tail;
        unlink_node(b, n);
        table_remove(b, b->page[n]);
        i = hash_page(page) & b->hmask; /* the removal may have moved keys */
        while (b->keys[i])
            i = (i + 1) & b->hmask;
    }
    b->page[n] = page;
    b->keys[i] = page + 1;
    b->vals[i] = n;
    push_front(b, n);
    return 0;
}
