/* The accesses of the C-AMAT model whose shares are not yet final, for all levels at once.
 *
 * An access visits levels 0..deepest; at level l its hit phase is [start_l, he_l) and, when it
 * missed there, its miss phase [he_l, done) (every level it visits ends when its data
 * returns). One FIFO entry per access (not per level) holds the bounds; once every timeline
 * has swept past done, its shares are read from each level's prefixes into that level's
 * object and region counts. The sweeps of all levels are bounded so that the prefixes at the
 * FIFO head's first cycle stay in the rings until it is final. */
#ifndef OBJTIER_CM_PENDING_H
#define OBJTIER_CM_PENDING_H

#include "cm_timeline.h"

#include <stdint.h>

#define CM_LEVELS 5

typedef struct cm_pending {
    uint64_t start;               /* level 0's start, the access's first cycle */
    uint32_t life;                /* done - start */
    uint32_t back;                /* the sweeps stood at start - back when it was added */
    uint32_t hit_from[CM_LEVELS]; /* start_l - start (l > 0) */
    uint32_t hit_to[CM_LEVELS];   /* he_l - start */
    uint32_t object, region;
    uint8_t levels; /* deepest + 1 */
    uint8_t missed; /* bit l: a miss phase at level l */
} cm_pending;

typedef struct cm_queue {
    cm_timeline *tl; /* the levels' timelines, all swept to the same cycle */
    uint32_t levels;
    cm_pending *q;
    uint64_t head, len, cap;
} cm_queue;

int cm_queue_init(cm_queue *q, cm_timeline *tl, uint32_t levels);
void cm_queue_free(cm_queue *q);

/* Doubles the FIFO; 0, or -1 out of memory. */
int cm_queue_grow(cm_queue *q);

/* Adds an access of n levels: start[l], he[l] (he <= done), missed[l] (a miss phase
 * [he[l], done), non-empty). 0; 1 when done lies beyond the rings (advance, then add again);
 * -1 when start[0] is already swept or out of memory. Inlined: it is on every access's path. */
static inline __attribute__((always_inline)) int
cm_queue_add(cm_queue *q, uint32_t n, const uint64_t *start, const uint64_t *he, uint64_t done,
             const int *missed, uint32_t object, uint32_t region)
{
    cm_timeline *tl = q->tl;
    uint64_t t = tl[0].t; /* every level's */
    if (start[0] < t)
        return -1;
    if (done - t >= tl[0].ring - 1)
        return 1;
    if (q->len == q->cap && cm_queue_grow(q) != 0)
        return -1;
    cm_pending *p = &q->q[(q->head + q->len++) & (q->cap - 1)];
    p->start = start[0];
    p->life = (uint32_t)(done - start[0]);
    p->back = (uint32_t)(start[0] - t);
    p->object = object;
    p->region = region;
    p->levels = (uint8_t)n;
    cm_timeline_add(&tl[0], start[0], he[0], done, missed[0]);
    p->hit_to[0] = (uint32_t)(he[0] - start[0]); /* hit_from[0] is 0, never read */
    uint8_t bits = missed[0] != 0;
    for (uint32_t l = 1; l < n; l++) {
        cm_timeline_add(&tl[l], start[l], he[l], done, missed[l]);
        p->hit_from[l] = (uint32_t)(start[l] - start[0]);
        p->hit_to[l] = (uint32_t)(he[l] - start[0]);
        bits |= (uint8_t)((missed[l] != 0) << l);
    }
    p->missed = bits;
    return 0;
}

/* Sweeps every level up to (not including) frontier, as far as the pending accesses allow,
 * and makes final every access whose last cycle is swept. */
void cm_queue_advance(cm_queue *q, uint64_t frontier);

/* Doubles every level's ring. 0; -1 at CM_RING_MAX or out of memory. */
int cm_queue_widen(cm_queue *q);

#endif
