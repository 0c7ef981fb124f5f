/* Per-level cycle accounting of the C-AMAT model: which cycles are hit, miss and pure-miss
 * cycles, and the running sums from which each access's share of them is read.
 *
 * A difference array of hit and miss phases over a ring of cycles, with a bitmap of the
 * cycles where some phase starts or ends (events). The sweep jumps from event to event (the
 * counts are constant in between) and writes, at each event cycle, the running sums before
 * it (prefixes); an access's shares are differences of the prefixes at its phase bounds, read
 * once the sweep has passed its last cycle (cm_pending.h keeps the accesses until then, for
 * all levels at once, and bounds the sweep so that the prefixes they need stay in the ring).
 * All levels are swept together to the same cycle, so they share t and the ring size. */
#ifndef OBJTIER_CM_TIMELINE_H
#define OBJTIER_CM_TIMELINE_H

#include "camat_counts.h"

#include <stdint.h>

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
    camat_counts *total, *by_object, *by_region;
    uint32_t objects, regions;
    double rcp[CM_RCP];
} cm_timeline;

/* The level's counts: total (its cycle counts are the timeline's; its per-access counts are
 * summed from by_object by cm_timeline_totals), by_object[objects], by_region[regions]. */
int cm_timeline_init(cm_timeline *tl, uint64_t ring, camat_counts *total, camat_counts *by_object,
                     uint32_t objects, camat_counts *by_region, uint32_t regions);
void cm_timeline_free(cm_timeline *tl);

static inline void cm_mark(cm_timeline *tl, uint64_t i)
{
    tl->events[i >> 6] |= 1ULL << (i & 63);
}

/* Adds one access's phases: hit [start, hit_end), miss [hit_end, done) when missed. The
 * caller has checked that start is not swept and done lies inside the ring. */
static inline void cm_timeline_add(cm_timeline *tl, uint64_t start, uint64_t hit_end, uint64_t done,
                                   int missed)
{
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
}

#define CM_RING_MAX (1ULL << 23) /* cycles */

/* Doubles the ring (an access outlives it), keeping the prefixes of [lo, t) (those a pending
 * access may still read) and every phase change and event of [t, t + ring). 0; -1 at
 * CM_RING_MAX or out of memory. */
int cm_timeline_widen(cm_timeline *tl, uint64_t lo);

/* Sweeps cycles [t, limit); none_pending: no phase ends at or after t (no events left). No
 * access added later may start before limit. */
void cm_timeline_sweep(cm_timeline *tl, uint64_t limit, int none_pending);

/* Adds c's per-access counts (accesses, misses, phases, shares; not the level's cycle counts
 * nor the coherence counts) to to. */
void cm_counts_add(camat_counts *to, const camat_counts *c);

/* After the last advance: the per-access counts of total (sums over the objects), and of the
 * one region when regions == 1. */
void cm_timeline_totals(cm_timeline *tl);

#endif
