/*
 * Segregated arenas: small heap blocks of chosen allocation sites served from pages that hold
 * only that site's blocks, so that a tier can act on the site's memory as a whole (mlock or
 * MADV_COLD on the swap tier, mbind on the NUMA tier). docs/runtime.md, "Arenas".
 *
 * Which blocks: a malloc-family or operator new call below OBJTIER_MIN_SIZE (and at most
 * RT_SARENA_MAX_BLOCK bytes) made by the program (rt_guard == 0) whose calling context is a
 * `site` record of the plan (its stable key, trace_format.h), or, with OBJTIER_ARENA=all,
 * every such call, one arena per calling address (the return address of the allocator call).
 * Everything else stays with the program's allocator.
 *
 * Invariants
 *   - Arena memory lies in a few large reservations (regions), appended to a table that is
 *     never shrunk; a pointer is an arena block iff it lies in one (rt_sarena_owns), so
 *     blocks of the program's allocator and arena blocks never mix: free, realloc and
 *     malloc_usable_size of an arena block never reach the program's allocator, and those of
 *     its blocks never reach the arena.
 *   - A block is preceded by a 16-byte header (magic, site, size class, requested bytes);
 *     user pointers are aligned to at least 16 bytes and to the requested alignment
 *     (posix_memalign, aligned_alloc, memalign, valloc, aligned new; at most
 *     RT_SARENA_MAX_ALIGN, larger alignments go to the program's allocator).
 *   - Each site's chunks, bump pointer and free lists are guarded by the site's mutex; the
 *     site table and the region table by one global mutex; all are held across fork()
 *     (pthread_atfork), so a child inherits consistent arenas and frees its inherited blocks.
 *   - Arena memory is never returned to the system; freed blocks are reused by blocks of the
 *     same site and size class.
 */
#ifndef OBJTIER_ARENA_H
#define OBJTIER_ARENA_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "rt.h"

#define RT_SARENA_MAX_BLOCK   (128u << 10) /* bytes: the largest block an arena serves */
#define RT_SARENA_MAX_ALIGN   (64u << 10)  /* bytes: the largest alignment an arena serves */
#define RT_SARENA_MAX_REGIONS 16

typedef struct rt_sarena_region {
    uintptr_t start, len;
} rt_sarena_region;

/* 1 while new blocks may be served from arenas (a plan names sites, or OBJTIER_ARENA=all);
 * 0 otherwise, so the malloc path costs one load of it. */
extern _Atomic int rt_sarena_serving;
/* Regions in rt_sarena_regions[0..n): written before n is raised (release), never removed. */
extern _Atomic uint32_t rt_sarena_nregions;
extern rt_sarena_region rt_sarena_regions[RT_SARENA_MAX_REGIONS];

/* 1 when p lies in an arena region: one load when no arena was ever made. */
static inline int rt_sarena_owns(const void *p)
{
    uint32_t n = atomic_load_explicit(&rt_sarena_nregions, memory_order_acquire);
    for (uint32_t i = 0; RT_UNLIKELY(i < n); i++)
        if ((uintptr_t)p - rt_sarena_regions[i].start < rt_sarena_regions[i].len)
            return 1;
    return 0;
}

/* Start-up, after the runtime became ACTIVE (and after rt_place_init): reads OBJTIER_ARENA
 * and the plan's `site` records (when a plan is enforced) and turns serving on when there is
 * anything to serve. tier: OBJTIER_TIER (the tier acting on planned sites' chunks). */
void rt_sarena_init(const rt_config *cfg);

/* A block of n bytes aligned to align (a power of two; 0 = 16) for the allocator call that
 * returns to ip: an arena block when its site is served (zeroed when zero), else NULL (the
 * caller uses the program's allocator). Caller checked rt_sarena_serving and rt_guard == 0. */
void *rt_sarena_alloc(size_t n, size_t align, const void *ip, int zero);

/* For p with rt_sarena_owns(p): */
size_t rt_sarena_usable(const void *p); /* the block's capacity (>= the bytes requested) */
void rt_sarena_free(void *p);
/* realloc: in place when n fits the block's capacity; else a new block of the same site
 * (or of the program's allocator, through real_malloc, when n is too large for an arena)
 * with min(capacity, n) bytes copied, and p freed. n == 0 frees p and returns NULL. NULL with
 * p untouched when no memory. */
void *rt_sarena_realloc(void *p, size_t n, void *(*real_malloc)(size_t));

#endif
