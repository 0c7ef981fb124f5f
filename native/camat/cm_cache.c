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
    c->meta = cm_zalloc(sets * ways, sizeof *c->meta);
    c->fp = cm_zalloc(sets * c->fp_stride + 8, 1);
    if (!c->tag || !c->meta || !c->fp)
        return -1;
    for (uint64_t s = 0; s < sets; s++) /* the bytes past the last way never match */
        memset(c->fp + s * c->fp_stride + ways, FP_PAD, c->fp_stride - ways);
    return 0;
}

void cm_cache_free(cm_cache *c)
{
    free(c->tag);
    free(c->meta);
    free(c->fp);
    memset(c, 0, sizeof *c);
}

uint64_t cm_cache_lru_of(const cm_cache *c, uint64_t base)
{
    const uint64_t *m = c->meta + base;
    uint64_t least = m[0];
    uint32_t lru = 0;
    for (uint32_t w = 1; w < c->ways; w++) { /* selects, not branches: stamps are random */
        uint64_t v = m[w];
        int lt = v < least;
        lru = lt ? w : lru;
        least = lt ? v : least;
    }
    return base + lru;
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
