/* The counts the C-AMAT model keeps per level (camat.h): one record for all accesses, one per
 * object, one per code region. Part of the public interface (camat.h includes it). */
#ifndef OBJTIER_CAMAT_COUNTS_H
#define OBJTIER_CAMAT_COUNTS_H

#include <stdint.h>

/* The counts behind every C-AMAT term of one level, for all accesses or one object/region. */
typedef struct camat_counts {
    uint64_t accesses;
    uint64_t misses;
    uint64_t pure_misses;
    uint64_t hit_phase;        /* hit-phase cycles summed over accesses */
    uint64_t miss_phase;       /* miss-phase cycles summed over misses */
    uint64_t pure_phase;       /* pure-miss cycles summed over misses (pMC accumulated) */
    uint64_t hit_cycles;       /* totals only: cycles with a hit phase */
    uint64_t miss_cycles;      /* totals only: cycles with a miss phase */
    uint64_t pure_cycles;      /* totals only: pure-miss cycles */
    uint64_t active_cycles;    /* totals only: hit or miss cycles */
    double hit_share;          /* this access set's share of the hit cycles */
    double miss_share;         /* ... of the miss cycles */
    double pure_share;         /* ... of the pure-miss cycles */
    uint64_t coherence_misses; /* private-cache misses on lines another core invalidated */
    uint64_t false_sharing;    /* of those, on bytes the invalidating stores did not write */
    uint64_t invalidations;    /* other cores' copies this set's stores invalidated */
} camat_counts;

#endif
