/*
 * Live ranges of tracked anonymous mappings, sorted by start, non-overlapping.
 * A partial munmap trims or splits a range; every piece keeps the seq of the mapping's
 * ALLOC record. Guarded by one mutex (program munmap/mremap calls are rare next to
 * malloc/free); rt_maps_live == 0 lets munmap skip the lock entirely.
 */
#ifndef OBJTIER_MAPS_H
#define OBJTIER_MAPS_H

#include <stdatomic.h>
#include <stdint.h>

#include "registry.h"

extern _Atomic uint64_t rt_maps_live;

int rt_maps_add(const rt_obj *o); /* o->addr .. o->addr + o->size; 0 or -ENOMEM */

/* Removes [addr, addr+len) from every range; for each removed piece calls
 * fn(piece_start, piece_len, seq of its mapping, its prot, ctx). Returns the number of pieces. */
int rt_maps_remove(uint64_t addr, uint64_t len,
                   void (*fn)(uint64_t start, uint64_t len, uint64_t seq, uint32_t prot, void *ctx),
                   void *ctx);

/* 1 if [addr, addr+len) lies inside one live range of the mapping with this seq. */
int rt_maps_contains(uint64_t addr, uint64_t len, uint64_t seq);

size_t rt_maps_snapshot(rt_obj *out, size_t cap);

void rt_maps_lock(void);
void rt_maps_unlock(void);
void rt_maps_reset(void); /* forget everything (forked child) */

#endif
