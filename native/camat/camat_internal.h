/* Internal parts of the C-AMAT model: caches, the per-level cycle timeline, the local buffer. */
#ifndef OBJTIER_CAMAT_INTERNAL_H
#define OBJTIER_CAMAT_INTERNAL_H

#include "camat.h"

/* Zeroed memory for n items of size bytes (huge-page aligned and advised when large); free()
 * releases it. NULL when out of memory. */
void *cm_zalloc(size_t n, size_t size);

/* MESI states of a line in a private cache (shared caches use VALID only). */
enum { ST_I = 0, ST_S = 1, ST_E = 2, ST_M = 3 };

/* One way of a set: tag = line number + 1, 0 = empty slot; stamp = last use (the smallest
 * stamp in a set is the LRU way). Side by side, so a look-up and the fill after it touch the
 * same host cache lines. */
typedef struct cm_way {
    uint64_t tag, stamp;
} cm_way;

/* Set-associative cache with true LRU. */
typedef struct cm_cache {
    cm_way *way;
    uint8_t *state;          /* ST_* */
    uint64_t sets, set_mask; /* set_mask = sets - 1 when sets is a power of two, else 0 */
    uint32_t ways;
    uint64_t clock;
} cm_cache;

int cm_cache_init(cm_cache *c, uint64_t size_bytes, uint32_t ways, uint32_t line_bytes);
void cm_cache_free(cm_cache *c);

static inline uint64_t cm_set_of(const cm_cache *c, uint64_t line)
{
    return c->set_mask ? (line & c->set_mask) : (line % c->sets);
}

/* Slot index of line, or -1. */
static inline int64_t cm_cache_find(const cm_cache *c, uint64_t line)
{
    uint64_t base = cm_set_of(c, line) * c->ways, t = line + 1;
    for (uint32_t w = 0; w < c->ways; w++)
        if (c->way[base + w].tag == t)
            return (int64_t)(base + w);
    return -1;
}

static inline void cm_cache_touch(cm_cache *c, int64_t slot)
{
    c->way[slot].stamp = ++c->clock;
}

/* Puts line in (evicting the LRU way when the set is full); returns its slot. */
int64_t cm_cache_fill(cm_cache *c, uint64_t line, uint8_t state);

/* Per-level cycle accounting: a difference array of hit and miss phases over a ring of
 * cycles, swept forward as the model's frontier advances, and the accesses waiting for the
 * sweep to pass their last cycle (then their shares are final). */
typedef struct cm_pending {
    uint64_t start, hit_end, done; /* hit phase [start, hit_end), miss phase [hit_end, done) */
    uint64_t floor;                /* sweep position when added: start >= floor */
    uint32_t object, region;
    uint32_t missed, reserved;
} cm_pending;

/* Running sums before one cycle (prefixes), kept together so a look-up is one cache line. */
typedef struct cm_prefix {
    uint64_t pure;     /* pure-miss cycles */
    double qh, qm, qp; /* sum of 1/hits over hit cycles, 1/misses over miss cycles and
                             over pure-miss cycles */
} cm_prefix;

typedef struct cm_delta {
    int32_t dh, dm; /* +1/-1 at hit-phase and miss-phase starts/ends */
} cm_delta;

typedef struct cm_timeline {
    uint64_t ring, mask;  /* cycles held: ring (a power of two) */
    cm_delta *delta;      /* indexed cycle & mask */
    uint64_t *events;     /* bitmap over the ring: a phase starts or ends at that cycle.
                             Between events the counts are constant, so the sweep jumps
                             from event to event; prefixes are written at events only (every
                             later look-up is at some phase's start or end, an event). */
    cm_prefix *prefix;    /* before cycle t, indexed t & mask (written at events only) */
    uint64_t t;           /* cycles < t are swept (final) */
    int64_t hits, misses; /* phases open at cycle t */
    uint64_t pure_now;
    double qh_now, qm_now, qp_now;
    cm_pending *q;
    uint64_t qhead, qlen, qcap; /* FIFO of accesses not yet final */
    camat_counts *total, *by_object, *by_region;
    uint32_t objects, regions;
} cm_timeline;

int cm_timeline_init(cm_timeline *tl, uint64_t ring, camat_counts *total, camat_counts *by_object,
                     uint32_t objects, camat_counts *by_region, uint32_t regions);
void cm_timeline_free(cm_timeline *tl);
/* 0, or -1 when the phases reach beyond the ring (the caller reports an overrun). */
int cm_timeline_add(cm_timeline *tl, uint64_t start, uint64_t hit_end, uint64_t done, int missed,
                    uint32_t object, uint32_t region);
/* Sweeps cycles up to (not including) frontier, as far as the pending accesses allow. */
void cm_timeline_advance(cm_timeline *tl, uint64_t frontier);

/* The local buffer in front of FAR: page-granular LRU of `capacity` pages. */
typedef struct cm_local {
    uint64_t capacity, used;
    uint64_t *keys; /* hash table: page + 1, 0 = empty */
    uint32_t *vals; /* node index of the key */
    uint64_t hmask;
    uint64_t *page;        /* node -> page */
    uint32_t *prev, *next; /* LRU list, head = most recent; UINT32_MAX = none */
    uint32_t head, tail;
} cm_local;

int cm_local_init(cm_local *b, uint64_t capacity);
void cm_local_free(cm_local *b);
/* 1 when page was local (now most recent), 0 when it was brought in (evicting the LRU). */
int cm_local_access(cm_local *b, uint64_t page);

#endif
