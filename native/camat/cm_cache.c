/* Set-associative caches with true LRU (cm_cache.h). */
#include "cm_cache.h"

#include "cm_alloc.h"

#include <stdlib.h>
#include <string.h>

int cm_cache_init(cm_cache *c, uint64_t size_bytes, uint32_t ways, uint32_t line_bytes)
{
    memset(c, 0, sizeof *c);
    uint64_t sets = size_bytes / ((uint64_t)ways * line_bytes);
    if (sets == 0)
        sets = 1;
    c->sets = sets;
    c->set_mask = (sets & (sets - 1)) == 0 ? sets - 1 : 0;
    c->ways = ways;
    c->fp_stride = (ways + 7) / 8 * 8;
    c->tag = cm_zalloc(sets * ways, sizeof *c->tag);
    c->state = cm_zalloc(sets * ways, 1);
    c->fp = cm_zalloc(sets * c->fp_stride + 8, 1);
    if (ways <= 16)
        c->order = cm_zalloc(sets, sizeof *c->order);
    else
        c->rank = cm_zalloc(sets * c->fp_stride + 8, 1);
    if (!c->tag || !c->state || !c->fp || (!c->order && !c->rank))
        return -1;
    uint64_t first = 0; /* way r at rank r; 15 past the last way */
    for (uint32_t r = 0; r < 16; r++)
        first |= (uint64_t)(r < ways ? r : 15) << (4 * r);
    for (uint64_t s = 0; s < sets; s++) { /* the bytes past the last way never match */
        memset(c->fp + s * c->fp_stride + ways, FP_PAD, c->fp_stride - ways);
        if (c->order)
            c->order[s] = first;
        else
            for (uint32_t r = 0; r < c->fp_stride; r++)
                c->rank[s * c->fp_stride + r] = (uint8_t)(r < ways ? r : 0xFF);
    }
    return 0;
}

void cm_cache_free(cm_cache *c)
{
    free(c->tag);
    free(c->state);
    free(c->fp);
    free(c->order);
    free(c->rank);
    memset(c, 0, sizeof *c);
}

void cm_cache_rank_touch(cm_cache *c, uint64_t set, uint32_t way)
{
    uint8_t *r = c->rank + set * c->fp_stride;
    uint32_t at = 0;
    while (r[at] != way) /* way is at some rank below ways */
        at++;
    memmove(r + 1, r, at);
    r[0] = (uint8_t)way;
}

int64_t cm_cache_fill(cm_cache *c, uint64_t line, uint8_t state)
{
    uint64_t victim = 0;
    int64_t s = cm_cache_lookup(c, line, &victim);
    if (s >= 0)
        return s;
    cm_cache_put(c, victim, line, state);
    return (int64_t)victim;
}
