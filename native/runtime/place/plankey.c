/*
 * Stable context keys of allocation contexts, for plan matching (trace_format.h, bottom).
 *
 * The key of context id c is computed from the frames the context table holds for c — the
 * frames of its CONTEXT record (context.c) — the first time an allocation with context c is
 * matched; later allocations of c cost one array load.
 *
 * Invariants
 *   - cache[c] is the key of context id c, or 0 when not computed yet (a real key of 0 is
 *     recomputed each time, which is only slower).
 *   - Callers serialize (placement.c holds its lock); the cache grows by remapping.
 */
#define _GNU_SOURCE
#include "plankey.h"
#include "context.h"
#include "rt.h"

#include <string.h>

static uint64_t *cache;
static uint64_t cache_cap; /* entries */

void rt_plankey_reset(void)
{
    if (cache)
        memset(cache, 0, cache_cap * sizeof *cache);
}

static uint64_t *slot(uint32_t ctx)
{
    if (ctx >= cache_cap) {
        uint64_t cap = cache_cap ? cache_cap : 4096;
        while (cap <= ctx)
            cap *= 2;
        uint64_t *c = rt_sys_mmap(cap * sizeof *c);
        if (!c)
            return NULL;
        if (cache) {
            memcpy(c, cache, cache_cap * sizeof *c);
            rt_sys_munmap(cache, cache_cap * sizeof *c);
        }
        cache = c;
        cache_cap = cap;
    }
    return &cache[ctx];
}

uint64_t rt_plankey_of(uint32_t ctx)
{
    uint64_t *s = ctx ? slot(ctx) : NULL;
    if (s && *s)
        return *s;
    uint64_t key = rt_context_key(ctx);
    if (s)
        *s = key;
    return key;
}
