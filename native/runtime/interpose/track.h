/* The record paths used by the interposers (and the statics scan); see track.c. */
#ifndef OBJTIER_TRACK_H
#define OBJTIER_TRACK_H

#include <stdatomic.h>
#include <stdint.h>

#include "objtier/trace_format.h" /* kind: enum ot_alloc_kind, enum ot_free_kind */
#include "rt.h"
#include "site_pace.h" /* rt_site_threshold, rt_site_free_threshold */

/* OBJTIER_MIN_SIZE while recording, UINT64_MAX otherwise: the one compare on the
 * malloc fast path. */
extern _Atomic uint64_t rt_min_size;

/* Sampled small blocks (allocation sites, trace_format.h "Allocation sites"): a block is
 * sampled iff ot_site_hash(addr) < rt_site_threshold, which pacing may lower (site_pace.h); a
 * SITE_FREE is written iff the address hashes below rt_site_free_threshold, the recording's
 * first threshold. Both 0 while not recording or with OBJTIER_SITE_PERIOD=0, so each test
 * costs one multiply and one compare per call. */
static inline int rt_site_hit(const void *p)
{
    return RT_UNLIKELY(ot_site_hash((uint64_t)(uintptr_t)p) <
                       atomic_load_explicit(&rt_site_threshold, memory_order_relaxed));
}

static inline int rt_site_hit_free(const void *p)
{
    return RT_UNLIKELY(ot_site_hash((uint64_t)(uintptr_t)p) <
                       atomic_load_explicit(&rt_site_free_threshold, memory_order_relaxed));
}

/* A sampled small block [addr, addr+size) the program got: captures its context and writes
 * SITE_ALLOC(kind). Caller checked rt_site_hit(addr) and rt_guard == 0. */
void rt_on_site_alloc(void *addr, uint64_t size, uint16_t kind);

/* A small block the program is about to release whose address may be sampled: writes
 * SITE_FREE(kind). Caller checked rt_site_hit_free(addr) and rt_guard == 0; the block is still
 * the program's. */
void rt_on_site_free(void *addr, uint16_t kind);

/* A new object [addr, addr+size) with the caller's context. is_map: an anonymous
 * mapping (tracked in the map list) rather than a heap block. Caller checked size and
 * rt_guard == 0. */
void rt_on_alloc(void *addr, uint64_t size, uint16_t kind, uint32_t prot, int is_map);

/* A static data object [addr, addr+size) (a .data/.bss symbol, statics.c): tracked in the
 * registry like a heap block (never freed) with a one-frame context naming its address. */
void rt_on_static(uint64_t addr, uint64_t size);

/* A heap object may be released: if tracked, disarm it, write FREE(kind) and return 1.
 * The memory is still owned by the program when this returns. */
int rt_on_free(void *addr, uint16_t kind);

/* Program-requested unmap of [addr, addr+len) (munmap, mremap's old range, MAP_FIXED):
 * disarm and write FREE(kind) for each tracked piece; returns the prot of the first
 * piece in *prot when any piece was tracked (returns pieces). */
int rt_on_unmap(uint64_t addr, uint64_t len, uint16_t kind, uint32_t *prot);

/* FREE(kind) for an object already taken out of the registry (realloc). */
void rt_on_unmap_free_record(uint64_t addr, uint16_t kind);

/* Re-inserts a heap object whose release failed (realloc returning NULL). */
void rt_reinsert(const void *obj);

#endif
