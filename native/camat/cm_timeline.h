/* Per-level cycle accounting of the C-AMAT model: which cycles are hit, miss and pure-miss
 * cycles, and each access's share of them.
 *
 * A difference array of hit and miss phases over a ring of cycles, with a bitmap of the
 * cycles where some phase starts or ends (events). The sweep jumps from event to event (the
 * counts are constant in between) and writes, at each event cycle, the running sums before
 * it (prefixes); an access's shares are differences of the prefixes at its phase bounds, read
 * once the sweep has passed its last cycle. Accesses wait in a FIFO until then. */
#ifndef OBJTIER_CM_TIMELINE_H
#define OBJTIER_CM_TIMELINE_H

#include "camat_counts.h"

#include <stdint.h>

/* An access not yet final: hit phase [start, start + hit_len), miss phase up to
 * start + hit_len + miss_len (empty when !missed). The sweep stood at start - back when it was
 * added. */
typedef struct cm_pending {
    uint64_t start;
    uint32_t hit_len, miss_len, back;
    uint32_t object, region, missed;
} cm_pending;

/* Running sums before one cycle (prefixes), kept together so a look-up is one cache line. */
typedef struct cm_prefix {
    uint64_t pure;     /* pure-miss cycles */
    double qh, qm, qp; /* sum of 1/hits over hit cycles, 1/misses over miss cycles and over
                          pure-miss cycles */
} cm_prefix;

typedef struct cm_delta {
    int32_t dh, dm; /* +1/-1 at hit-phase and miss-phase starts/ends */
} cm_delta;

#define CM_RCP 1024 /* reciprocals kept: 1/k for k < CM_RCP, 0 for k = 0 */

typedef struct cm_timeline {
    uint64_t ring, mask;  /* cycles held: ring (a power of two) */
    cm_delta *delta;      /* indexed cycle & mask */
    uint64_t *events;     /* bitmap over the ring: a phase starts or ends at that cycle */
    cm_prefix *prefix;    /* before cycle t, indexed t & mask (written at events only: every
                            look-up is at some phase's start or end, an event) */
    uint64_t t;           /* cycles < t are swept (final) */
    int64_t hits, misses; /* phases open at cycle t */
    uint64_t pure_now;
    double qh_now, qm_now, qp_now;
    cm_pending *q;
    uint64_t qhead, qlen, qcap; /* FIFO of accesses not yet final */
    camat_counts *total, *by_object, *by_region;
    uint32_t objects, regions;
    double rcp[CM_RCP];
} cm_timeline;

/* The level's counts: total (its cycle counts are the timeline's; its per-access counts are
 * summed from by_object by cm_timeline_totals), by_object[objects], by_region[regions]. */
int cm_timeline_init(cm_timeline *tl, uint64_t ring, camat_counts *total, camat_counts *by_object,
                     uint32_t objects, camat_counts *by_region, uint32_t regions);
void cm_timeline_free(cm_timeline *tl);

/* Doubles the FIFO; 0, or -1 out of memory. */
int cm_timeline_grow(cm_timeline *tl);

static inline void cm_mark(cm_timeline *tl, uint64_t i)
{
    tl->events[i >> 6] |= 1ULL << (i & 63);
}

/* Adds one access's phases. 0; 1 when done lies beyond the ring (advance, then add again);
 * -1 when start is already swept or out of memory. */
static inline int cm_timeline_add(cm_timeline *tl, uint64_t start, uint64_t hit_end, uint64_t done,
                                  int missed, uint32_t object, uint32_t region)
{
    if (start < tl->t)
        return -1;
    if (done - tl->t >= tl->ring - 1)
        return 1;
    if (tl->qlen == tl->qcap && cm_timeline_grow(tl) != 0)
        return -1;
    uint64_t s = start & tl->mask, h = hit_end & tl->mask;
    tl->delta[s].dh++;
    tl->delta[h].dh--;
    cm_mark(tl, s);
    cm_mark(tl, h);
    if (missed) {
        uint64_t d = done & tl->mask;
        tl->delta[h].dm++;
        tl->delta[d].dm--;
        cm_mark(tl, d);
    }
    cm_pending *p = &tl->q[(tl->qhead + tl->qlen++) & (tl->qcap - 1)];
    p->start = start;
    p->hit_len = (uint32_t)(hit_end - start);
    p->miss_len = (uint32_t)(done - hit_end);
    p->back = (uint32_t)(start - tl->t);
    p->object = object;
    p->region = region;
    p->missed = (uint32_t)missed;
    return 0;
}

#define CM_RING_MAX (1ULL << 23) /* cycles */

/* Doubles the ring (an access outlives it), keeping every live slot. 0; -1 at CM_RING_MAX or
 * out of memory. */
int cm_timeline_widen(cm_timeline *tl);

/* Sweeps cycles up to (not including) frontier, as far as the pending accesses allow, and
 * makes final every access whose last cycle is swept. No access added later may start before
 * frontier. */
void cm_timeline_advance(cm_timeline *tl, uint64_t frontier);

/* After the last advance: the per-access counts of total (sums over the objects), and of the
 * one region when regions == 1. */
void cm_timeline_totals(cm_timeline *tl);

#endif
