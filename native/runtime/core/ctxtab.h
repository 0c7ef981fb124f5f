/*
 * Interning of calling contexts: a frame array -> a dense id (1, 2, 3, ...).
 * Open addressing on a 64-bit hash of the frames; frames are copied into an mmap'd
 * arena that only grows (contexts live as long as the process). Not thread-safe by
 * itself: the caller serializes (context.c holds its mutex).
 */
#ifndef OBJTIER_CTXTAB_H
#define OBJTIER_CTXTAB_H

#include <stdint.h>

#include "objtier/trace_format.h"

typedef struct rt_ctx_slot {
    uint64_t hash; /* 0 = empty slot */
    uint32_t id;   /* >= 1 */
    uint32_t depth;
    const ot_frame *frames; /* in the arena */
} rt_ctx_slot;

typedef struct rt_ctx_ref {
    const ot_frame *frames; /* in the arena */
    uint32_t depth;
    uint32_t reserved;
} rt_ctx_ref;

typedef struct rt_ctxtab {
    rt_ctx_slot *slots;
    uint64_t capacity; /* power of two; load kept below 1/2 */
    uint64_t count;    /* ids handed out */
    rt_ctx_ref *by_id; /* by_id[id - 1] for id 1..count */
    uint64_t by_id_cap;
    unsigned char *arena; /* current arena chunk */
    uint64_t arena_used, arena_cap;
} rt_ctxtab;

int rt_ctxtab_init(rt_ctxtab *t);
/* The id of this frame sequence; *is_new = 1 the first time. 0 when out of memory. */
uint32_t rt_ctxtab_intern(rt_ctxtab *t, const ot_frame *frames, uint32_t depth, int *is_new);
/* The frames of context id (1..count) in *frames, their number in *depth; 0, or -1 when id
 * is unknown. */
int rt_ctxtab_frames(const rt_ctxtab *t, uint32_t id, const ot_frame **frames, uint32_t *depth);
void rt_ctxtab_destroy(rt_ctxtab *t);

#endif
