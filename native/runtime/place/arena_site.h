/*
 * Segregated arenas: which site an allocator call belongs to, what the tier does to a site's
 * chunks, and the counts written at exit. Internal to arena.c and arena_site.c; see arena.h.
 */
#ifndef OBJTIER_ARENA_SITE_H
#define OBJTIER_ARENA_SITE_H

#include <stddef.h>
#include <stdint.h>

#define RT_SARENA_MAX_SITES   256
#define RT_SARENA_CHUNK_BYTES (1u << 20) /* bytes made read-write for a site at a time */

/* Per site, under the site's lock (arena.c). */
typedef struct rt_sarena_counts {
    uint64_t blocks;                    /* blocks served */
    uint64_t reused;                    /* of which from a free list */
    uint64_t frees;                     /* blocks freed */
    uint64_t live_blocks;               /* served - freed */
    uint64_t live_bytes;                /* bytes requested by the live blocks */
    uint64_t carved_bytes;              /* bytes of chunks given to blocks (headers and capacity) */
    uint64_t waste_bytes;               /* alignment gaps and chunk tails left unused */
    uint64_t chunks;                    /* chunks of CHUNK_BYTES made read-write for the site */
    uint64_t no_memory;                 /* calls given back to the program's allocator: no chunk */
    uint64_t locked_bytes, lock_failed; /* swap tier, fast site: mlock of its chunks */
    uint64_t cold_bytes;                /* swap tier, slow site: MADV_COLD of full chunks */
    uint64_t bound_bytes, bind_failed;  /* NUMA tier: mbind of its chunks */
} rt_sarena_counts;

/* The site index of a call for n bytes returning to ip, or -1 when not served. */
int rt_sarena_site_of(size_t n, const void *ip);

/* Site s got chunk [c, c + len) (read-write, untouched): the tier's action at growth. */
void rt_sarena_site_chunk(uint32_t s, void *c, size_t len, rt_sarena_counts *k);

/* Site s's chunk [c, c + len) is full (its blocks may still be live). */
void rt_sarena_site_chunk_full(uint32_t s, void *c, size_t len, rt_sarena_counts *k);

/* arena.c */
void rt_sarena_alloc_init(void);
void rt_sarena_read_counts(uint32_t s, rt_sarena_counts *out);

/* fork(): called from arena.c's handlers (the site table's lock, the caches). */
void rt_sarena_site_fork_prepare(void);
void rt_sarena_site_fork_parent(void);
void rt_sarena_site_fork_child(void);

#endif
