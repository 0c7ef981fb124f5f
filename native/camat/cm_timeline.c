/* Per-level cycle accounting of the C-AMAT model (cm_timeline.h). */
#include "cm_timeline.h"

#include "cm_alloc.h"

#include <stdlib.h>
#include <string.h>

int cm_timeline_init(cm_timeline *tl, uint64_t ring, camat_counts *total, camat_counts *by_object,
                     uint32_t objects, camat_counts *by_region, uint32_t regions)
{
    memset(tl, 0, sizeof *tl);
    tl->ring = ring;
    tl->mask = ring - 1;
    tl->delta = cm_zalloc(ring, sizeof *tl->delta);
    tl->prefix = cm_zalloc(ring, sizeof *tl->prefix);
    tl->events = cm_zalloc(ring / 64, sizeof *tl->events);
    tl->total = total;
    tl->by_object = by_object;
    tl->by_region = by_region;
    tl->objects = objects;
    tl->regions = regions;
    for (uint32_t k = 1; k < CM_RCP; k++)
        tl->rcp[k] = 1.0 / (double)k;
    return tl->delta && tl->prefix && tl->events ? 0 : -1;
}

void cm_timeline_free(cm_timeline *tl)
{
    free(tl->delta);
    free(tl->prefix);
    free(tl->events);
    memset(tl, 0, sizeof *tl);
}

int cm_timeline_widen(cm_timeline *tl, uint64_t lo)
{
    uint64_t ring = 2 * tl->ring, om = tl->mask, nm = ring - 1;
    if (ring > CM_RING_MAX)
        return -1;
    cm_delta *delta = cm_zalloc(ring, sizeof *delta);
    cm_prefix *prefix = cm_zalloc(ring, sizeof *prefix);
    uint64_t *events = cm_zalloc(ring / 64, sizeof *events);
    if (!delta || !prefix || !events) {
        free(delta);
        free(prefix);
        free(events);
        return -1;
    }
    for (uint64_t c = lo; c < tl->t; c++)
        prefix[c & nm] = tl->prefix[c & om];
    for (uint64_t c = tl->t; c < tl->t + tl->ring; c++) {
        uint64_t i = c & om, j = c & nm;
        delta[j] = tl->delta[i];
        if (tl->events[i >> 6] >> (i & 63) & 1)
            events[j >> 6] |= 1ULL << (j & 63);
    }
    free(tl->delta);
    free(tl->prefix);
    free(tl->events);
    tl->delta = delta;
    tl->prefix = prefix;
    tl->events = events;
    tl->ring = ring;
    tl->mask = nm;
    return 0;
}

/* The running sums of a sweep, in locals. */
typedef struct sums {
    int64_t hits, misses;
    uint64_t pure, hc, mc;
    double qh, qm, qp;
} sums;

/* Counts a run of n > 0 cycles with the phases open as they are. */
static inline void run(sums *z, const double *rcp, uint64_t n)
{
    double k = (double)(int64_t)n; /* n < 2^53: exact; signed converts in one instruction */
    int64_t hits = z->hits, misses = z->misses;
    /* selects, not branches; rcp[0] = 0 (adding 0.0 leaves a sum as it is) */
    int h = hits > 0, mi = misses > 0, p = mi && !h;
    double qh_run = k * (hits < CM_RCP ? rcp[hits] : 1.0 / (double)hits);
    double qm_run = k * (misses < CM_RCP ? rcp[misses] : 1.0 / (double)misses);
    z->hc += h ? n : 0;
    z->qh += qh_run;
    z->mc += mi ? n : 0;
    z->qm += qm_run;
    z->pure += p ? n : 0; /* pure-miss cycles: also the active ones beyond hit cycles */
    z->qp += p ? qm_run : 0.0;
}

/* Sweeps [t, limit): counts each run of cycles between events at once, and at each event
 * cycle writes the prefixes before it and applies its phase changes. The state lives in
 * locals for the loop. */
void cm_timeline_sweep(cm_timeline *tl, uint64_t limit, int none_pending)
{
    uint64_t t = tl->t, mask = tl->mask, pure0 = tl->pure_now;
    sums z = {tl->hits, tl->misses, pure0, 0, 0, tl->qh_now, tl->qm_now, tl->qp_now};
    uint64_t *ev = tl->events;
    cm_delta *delta = tl->delta;
    cm_prefix *prefix = tl->prefix;
    const double *rcp = tl->rcp;
    if (none_pending) { /* nothing pending: no events */
        if (limit > t)
            run(&z, rcp, limit - t);
        t = limit > t ? limit : t;
    }
    while (t < limit) {
        uint64_t e = t; /* the first event at or after t, or limit */
        for (;;) {
            uint64_t i = e & mask, word = ev[i >> 6] >> (i & 63);
            if (word) {
                e += (uint64_t)__builtin_ctzll(word);
                break;
            }
            e += 64 - (i & 63);
            if (e >= limit)
                break;
        }
        if (e > limit)
            e = limit;
        if (e > t) {
            run(&z, rcp, e - t);
            t = e;
            if (t == limit)
                break;
        }
        uint64_t i = t & mask;
        ev[i >> 6] &= ~(1ULL << (i & 63));
        prefix[i] = (cm_prefix){z.pure, z.qh, z.qm, z.qp};
        z.hits += delta[i].dh;
        z.misses += delta[i].dm;
        delta[i] = (cm_delta){0, 0};
    }
    tl->t = t;
    tl->pure_now = z.pure;
    tl->hits = z.hits;
    tl->misses = z.misses;
    tl->qh_now = z.qh;
    tl->qm_now = z.qm;
    tl->qp_now = z.qp;
    tl->total->hit_cycles += z.hc;
    tl->total->miss_cycles += z.mc;
    tl->total->pure_cycles += z.pure - pure0;
    tl->total->active_cycles += z.hc + (z.pure - pure0); /* hit, or miss and not hit */
}

void cm_counts_add(camat_counts *to, const camat_counts *c)
{
    to->accesses += c->accesses;
    to->misses += c->misses;
    to->pure_misses += c->pure_misses;
    to->hit_phase += c->hit_phase;
    to->miss_phase += c->miss_phase;
    to->pure_phase += c->pure_phase;
    to->hit_share += c->hit_share;
    to->miss_share += c->miss_share;
    to->pure_share += c->pure_share;
}

void cm_timeline_totals(cm_timeline *tl)
{
    camat_counts sum = {0};
    for (uint32_t o = 0; o < tl->objects; o++)
        cm_counts_add(&sum, &tl->by_object[o]);
    camat_counts *t = tl->total;
    t->accesses = t->misses = t->pure_misses = t->hit_phase = t->miss_phase = t->pure_phase = 0;
    t->hit_share = t->miss_share = t->pure_share = 0;
    cm_counts_add(t, &sum);
    if (tl->regions == 1) {
        camat_counts *r = tl->by_region;
        r->accesses = r->misses = r->pure_misses = r->hit_phase = r->miss_phase = 0;
        r->pure_phase = 0;
        r->hit_share = r->miss_share = r->pure_share = 0;
        cm_counts_add(r, &sum);
    }
}
