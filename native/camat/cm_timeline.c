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
    tl->qcap = 4096;
    tl->q = malloc(tl->qcap * sizeof *tl->q);
    tl->total = total;
    tl->by_object = by_object;
    tl->by_region = by_region;
    tl->objects = objects;
    tl->regions = regions;
    for (uint32_t k = 1; k < CM_RCP; k++)
        tl->rcp[k] = 1.0 / (double)k;
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

int cm_timeline_grow(cm_timeline *tl)
{
    cm_pending *q = malloc(2 * tl->qcap * sizeof *q); /* unrolled to start at 0 */
    if (!q)
        return -1;
    for (uint64_t i = 0; i < tl->qlen; i++)
        q[i] = tl->q[(tl->qhead + i) & (tl->qcap - 1)];
    free(tl->q);
    tl->q = q;
    tl->qhead = 0;
    tl->qcap *= 2;
    return 0;
}

int cm_timeline_widen(cm_timeline *tl)
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
    /* Live: prefixes of the swept cycles a pending access may still look up, [lo, t) with lo
     * the sweep position when the FIFO head was added (the head's bound, cm_timeline_advance,
     * keeps t - lo below the ring); phase changes and events of [t, t + ring). */
    uint64_t lo = tl->t;
    if (tl->qlen) {
        const cm_pending *p = &tl->q[tl->qhead];
        lo = p->start - p->back;
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

static inline void add_final(camat_counts *c, const cm_pending *p, uint64_t pure, double hs,
                             double ms, double ps)
{
    c->accesses++;
    c->hit_phase += p->hit_len;
    c->hit_share += hs;
    if (p->missed) {
        c->misses++;
        c->miss_phase += p->miss_len;
        c->miss_share += ms;
        c->pure_phase += pure;
        c->pure_share += ps;
        c->pure_misses += pure > 0;
    }
}

/* Final shares of p (its last cycle is swept), into its object's and region's counts. */
static void finalize(cm_timeline *tl, const cm_pending *p)
{
    uint64_t m = tl->mask, hit_end = p->start + p->hit_len;
    const cm_prefix *s = &tl->prefix[p->start & m], *h = &tl->prefix[hit_end & m];
    double hs = h->qh - s->qh, ms = 0, ps = 0;
    uint64_t pure = 0;
    if (p->missed) {
        const cm_prefix *d = &tl->prefix[(hit_end + p->miss_len) & m];
        pure = d->pure - h->pure;
        ms = d->qm - h->qm;
        ps = d->qp - h->qp;
    }
    add_final(&tl->by_object[p->object], p, pure, hs, ms, ps);
    if (tl->regions > 1)
        add_final(&tl->by_region[p->region], p, pure, hs, ms, ps);
}

/* Sweeps [t, limit): counts each run of cycles between events at once, and at each event
 * cycle writes the prefixes before it and applies its phase changes. The state lives in
 * locals for the loop. */
static void sweep(cm_timeline *tl, uint64_t limit)
{
    uint64_t t = tl->t, mask = tl->mask, pure = tl->pure_now;
    uint64_t hc = 0, mc = 0, pc = 0, ac = 0;
    int64_t hits = tl->hits, misses = tl->misses;
    double qh = tl->qh_now, qm = tl->qm_now, qp = tl->qp_now;
    uint64_t *ev = tl->events;
    cm_delta *delta = tl->delta;
    cm_prefix *prefix = tl->prefix;
    const double *rcp = tl->rcp;
    const int none_pending = tl->qlen == 0;
    while (t < limit) {
        uint64_t e = t; /* the first event at or after t, or limit */
        if (none_pending) {
            e = limit; /* nothing pending: no events */
        } else {
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
        }
        if (e > t) {
            uint64_t n = e - t;
            double k = (double)n;
            /* selects, not branches; rcp[0] = 0 (adding 0.0 leaves a sum as it is) */
            int h = hits > 0, mi = misses > 0, p = mi && !h;
            double qh_run = k * (hits < CM_RCP ? rcp[hits] : 1.0 / (double)hits);
            double qm_run = k * (misses < CM_RCP ? rcp[misses] : 1.0 / (double)misses);
            hc += h ? n : 0;
            qh += qh_run;
            mc += mi ? n : 0;
            qm += qm_run;
            pc += p ? n : 0;
            pure += p ? n : 0;
            qp += p ? qm_run : 0.0;
            ac += h || mi ? n : 0;
            t = e;
            if (t == limit)
                break;
        }
        uint64_t i = t & mask;
        ev[i >> 6] &= ~(1ULL << (i & 63));
        prefix[i] = (cm_prefix){pure, qh, qm, qp};
        hits += delta[i].dh;
        misses += delta[i].dm;
        delta[i] = (cm_delta){0, 0};
    }
    tl->t = t;
    tl->pure_now = pure;
    tl->hits = hits;
    tl->misses = misses;
    tl->qh_now = qh;
    tl->qm_now = qm;
    tl->qp_now = qp;
    tl->total->hit_cycles += hc;
    tl->total->miss_cycles += mc;
    tl->total->pure_cycles += pc;
    tl->total->active_cycles += ac;
}

void cm_timeline_advance(cm_timeline *tl, uint64_t frontier)
{
    for (;;) {
        /* heads whose last cycle is swept are final (FIFO order: the sums' order) */
        while (tl->qlen) {
            const cm_pending *p = &tl->q[tl->qhead];
            if (p->start + p->hit_len + p->miss_len >= tl->t)
                break;
            finalize(tl, p);
            tl->qhead = (tl->qhead + 1) & (tl->qcap - 1);
            tl->qlen--;
        }
        /* the head's start must stay inside the ring until it is final; later entries were
         * added at a later sweep position, so the head's bound holds for all of them */
        uint64_t limit = frontier;
        if (tl->qlen) {
            const cm_pending *p = &tl->q[tl->qhead];
            uint64_t keep = p->start - p->back + tl->ring - 1;
            if (keep < limit)
                limit = keep;
        }
        if (tl->t >= limit)
            return;
        sweep(tl, limit);
    }
}

static void add_counts(camat_counts *to, const camat_counts *c)
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
        add_counts(&sum, &tl->by_object[o]);
    camat_counts *t = tl->total;
    t->accesses = t->misses = t->pure_misses = t->hit_phase = t->miss_phase = t->pure_phase = 0;
    t->hit_share = t->miss_share = t->pure_share = 0;
    add_counts(t, &sum);
    if (tl->regions == 1) {
        camat_counts *r = tl->by_region;
        r->accesses = r->misses = r->pure_misses = r->hit_phase = r->miss_phase = 0;
        r->pure_phase = 0;
        r->hit_share = r->miss_share = r->pure_share = 0;
        add_counts(r, &sum);
    }
}
