/* Last-level-cache model: geometry, LRU order, streaming and reuse behaviour. */
#define _GNU_SOURCE
#include "cache_model.h"
#include "check.h"

#include <errno.h>

/* Misses of one sequential pass over `bytes` starting at `base`, one access per 8 bytes. */
static uint64_t pass(rt_llc *c, uint64_t base, uint64_t bytes)
{
    uint64_t misses = 0;
    for (uint64_t a = base; a < base + bytes; a += 8)
        misses += (uint64_t)rt_llc_access(c, a >> c->line_shift);
    return misses;
}

int main(void)
{
    rt_llc c;
    CHECK(rt_llc_init(&c, 1 << 20, 0, 64) == -EINVAL);
    CHECK(rt_llc_init(&c, 1 << 20, 16, 48) == -EINVAL);
    CHECK(rt_llc_init(&c, 32, 16, 64) == -EINVAL);

    /* 1 MiB, 16 ways, 64 B lines: 1024 sets (power of two, mask indexing) */
    CHECK(rt_llc_init(&c, 1 << 20, 16, 64) == 0);
    CHECK(c.sets == 1024 && c.set_mask == 1023 && c.line_shift == 6);
    /* a stream over 4x the cache misses once per line, on both passes */
    uint64_t lines = (4u << 20) / 64;
    CHECK(pass(&c, 0x10000000, 4u << 20) == lines);
    CHECK(pass(&c, 0x10000000, 4u << 20) == lines);
    rt_llc_destroy(&c);

    /* an array of half the cache: the first pass misses every line, the second none */
    CHECK(rt_llc_init(&c, 1 << 20, 16, 64) == 0);
    CHECK(pass(&c, 0x20000040, 1u << 19) == (1u << 19) / 64);
    CHECK(pass(&c, 0x20000040, 1u << 19) == 0);
    /* an array of exactly the cache size also fits (every set holds 16 of its lines) */
    CHECK(pass(&c, 0x40000000, 1u << 20) == (1u << 20) / 64);
    CHECK(pass(&c, 0x40000000, 1u << 20) == 0);
    rt_llc_destroy(&c);

    /* LRU within one set: 2 sets, 2 ways, lines 0, 2, 4 all map to set 0 */
    CHECK(rt_llc_init(&c, 256, 2, 64) == 0);
    CHECK(c.sets == 2);
    CHECK(rt_llc_access(&c, 0) == 1 && rt_llc_access(&c, 2) == 1);
    CHECK(rt_llc_access(&c, 0) == 0); /* 0 is MRU, 2 is LRU */
    CHECK(rt_llc_access(&c, 4) == 1); /* evicts 2 */
    CHECK(rt_llc_access(&c, 0) == 0 && rt_llc_access(&c, 2) == 1);
    CHECK(rt_llc_access(&c, 1) == 1 && rt_llc_access(&c, 0) == 0); /* set 1 is separate */
    CHECK(c.misses == 5);
    rt_llc_destroy(&c);

    /* non-power-of-two set count (modulo indexing): 3 sets x 4 ways; 12 lines fit */
    CHECK(rt_llc_init(&c, 3 * 4 * 64, 4, 64) == 0);
    CHECK(c.sets == 3 && c.set_mask == 0);
    CHECK(pass(&c, 0, 12 * 64) == 12 && pass(&c, 0, 12 * 64) == 0);
    CHECK(pass(&c, 0, 13 * 64) == 1); /* line 12 evicts line 0 (LRU of set 0) */
    CHECK(pass(&c, 0, 64) == 1);      /* which now misses */
    rt_llc_destroy(&c);

    uint64_t size;
    uint32_t ways, line;
    rt_llc_machine(&size, &ways, &line);
    CHECK(size >= line && ways >= 1 && line >= 8 && (line & (line - 1)) == 0);
    return 0;
}
