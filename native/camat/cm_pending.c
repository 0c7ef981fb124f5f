/* The accesses of the C-AMAT model whose shares are not yet final (cm_pending.h). */
#include "cm_pending.h"

#include <stdlib.h>
#include <string.h>

int cm_queue_init(cm_queue *q, cm_timeline *tl, uint32_t levels)
{
    memset(q, 0, sizeof *q);
    q->tl = tl;
    q->levels = levels;
    q->cap = 4096;
    q->q = malloc(q->cap * sizeof *q->q);
    return q->q ? 0 : -1;
}

void cm_queue_free(cm_queue *q)
{
    free(q->q);
    memset(q, 0, sizeof *q);
}

int cm_queue_grow(cm_queue *q)
{
    cm_pending *n = malloc(2 * q->cap * sizeof *n); /* unrolled to start at 0 */
    if (!n)
        return -1;
    for (uint64_t i = 0; i < q->len; i++)
        n[i] = q->q[(q->head + i) & (q->cap - 1)];
    free(q->q);
    q->q = n;
    q->head = 0;
    q->cap *= 2;
    return 0;
}

static inline void add_final(camat_counts *c, uint64_t hit_len, uint64_t miss_len, int missed,
                             uint64_t pure, double hs, double ms, double ps)
{
    c->accesses++;
    c->hit_phase += hit_len;
    c->hit_share += hs;
    if (missed) {
        c->misses++;
        c->miss_phase += miss_len;
        c->miss_share += ms;
        c->pure_phase += pure;
        c->pure_share += ps;
        c->pure_misses += pure > 0;
    }
}

/* Final shares of p at level l, its phases [start, he) and, when missed, [he, done). */
static inline void finalize_level(cm_timeline *tl, const cm_pending *p, uint64_t start, uint64_t he,
                                  uint64_t done, int missed)
{
    uint64_t m = tl->mask;
    const cm_prefix *s = &tl->prefix[start & m], *h = &tl->prefix[he & m];
    double hs = h->qh - s->qh, ms = 0, ps = 0;
    uint64_t pure = 0;
    if (missed) {
        const cm_prefix *d = &tl->prefix[done & m];
        pure = d->pure - h->pure;
        ms = d->qm - h->qm;
        ps = d->qp - h->qp;
    }
    add_final(&tl->by_object[p->object], he - start, done - he, missed, pure, hs, ms, ps);
    if (tl->regions > 1)
        add_final(&tl->by_region[p->region], he - start, done - he, missed, pure, hs, ms, ps);
}

/* Final shares of p at every level it visited (its last cycle is swept everywhere). */
static void finalize(cm_queue *q, const cm_pending *p)
{
    uint64_t done = p->start + p->life;
    for (uint32_t l = 0; l < p->levels; l++) {
        uint64_t from = l ? p->hit_from[l] : 0;
        finalize_level(&q->tl[l], p, p->start + from, p->start + p->hit_to[l], done,
                       p->missed >> l & 1);
    }
}

void cm_queue_advance(cm_queue *q, uint64_t frontier)
{
    cm_timeline *tl = q->tl;
    for (;;) {
        /* heads whose last cycle is swept are final (FIFO order: the sums' order) */
        uint64_t t = tl[0].t;
        while (q->len) {
            const cm_pending *p = &q->q[q->head];
            if (p->start + p->life >= t)
                break;
            finalize(q, p);
            q->head = (q->head + 1) & (q->cap - 1);
            q->len--;
        }
        /* the head's start must stay inside the rings until it is final; later entries were
         * added at a later sweep position, so the head's bound holds for all of them */
        uint64_t limit = frontier;
        if (q->len) {
            const cm_pending *p = &q->q[q->head];
            uint64_t keep = p->start - p->back + tl[0].ring - 1;
            if (keep < limit)
                limit = keep;
        }
        if (t >= limit)
            return;
        for (uint32_t l = 0; l < q->levels; l++)
            cm_timeline_sweep(&tl[l], limit, q->len == 0);
    }
}

int cm_queue_widen(cm_queue *q)
{
    /* live prefixes: from the sweep position when the FIFO head was added (the head's bound
     * keeps t - lo below the ring) */
    uint64_t lo = q->tl[0].t;
    if (q->len) {
        const cm_pending *p = &q->q[q->head];
        lo = p->start - p->back;
    }
    for (uint32_t l = 0; l < q->levels; l++)
        if (cm_timeline_widen(&q->tl[l], lo) != 0)
            return -1;
    return 0;
}
