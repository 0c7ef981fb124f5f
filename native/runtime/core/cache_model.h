/*
 * Last-level-cache model for the trace sampler: set-associative, true LRU, physically
 * unaware (indexed by virtual line number).
 *
 * Geometry
 *   - line_bytes is a power of two; line = addr >> line_shift.
 *   - sets = size_bytes / (ways * line_bytes), at least 1. When sets is a power of two
 *     the set is line & (sets - 1) (conventional index bits); otherwise line % sets, so a
 *     contiguous array still spreads evenly over the sets.
 *
 * Invariants
 *   - tags[set * ways .. set * ways + ways) holds that set's resident lines, most recently
 *     used first; a slot holds line + 1 (0 = invalid), so line 0 is representable.
 *   - last_line is the line of the most recent access (it is MRU in its set); an access to
 *     it is a hit without touching the set (the common case of a run of accesses within one
 *     line). UINT64_MAX = none.
 *   - One model belongs to one thread: no locking.
 */
#ifndef OBJTIER_CACHE_MODEL_H
#define OBJTIER_CACHE_MODEL_H

#include <stdint.h>

typedef struct rt_llc {
    uint64_t *tags; /* sets * ways slots, from rt_sys_mmap */
    uint64_t sets;
    uint64_t set_mask; /* sets - 1 when sets is a power of two, else 0 */
    uint64_t last_line;
    uint64_t accesses; /* line accesses modelled */
    uint64_t misses;   /* of which missed */
    uint32_t ways;
    uint32_t line_shift; /* log2(line_bytes) */
    uint64_t map_bytes;  /* bytes mapped for tags */
} rt_llc;

/* Geometry defaults of the machine: /sys/devices/system/cpu/cpu0/cache/index3/{size,
 * ways_of_associativity,coherency_line_size}; 32 MiB, 16 ways, 64 B when absent.
 * Any pointer may be NULL. */
void rt_llc_machine(uint64_t *size_bytes, uint32_t *ways, uint32_t *line_bytes);

/* 0, -EINVAL (line not a power of two, ways 0 or > 64, size < one line) or -ENOMEM. */
int rt_llc_init(rt_llc *c, uint64_t size_bytes, uint32_t ways, uint32_t line_bytes);
void rt_llc_destroy(rt_llc *c);

/* Slow path of an access to a line other than last_line: 1 = miss (the line is then
 * filled, evicting its set's LRU line), 0 = hit. */
int rt_llc_access_slow(rt_llc *c, uint64_t line);

/* One access to `line`: 1 = miss, 0 = hit. */
static inline int rt_llc_access(rt_llc *c, uint64_t line)
{
    if (line == c->last_line)
        return 0;
    return rt_llc_access_slow(c, line);
}

#endif
