/* Dependences through indices: a walk where each load's index is the value the previous load
 * returned (p = next[p], as in CSR neighbour lists, hash chains and permutation walks), and
 * independent streaming loads over the same array. The walk follows one cycle through all the
 * entries (Sattolo's shuffle), so each step lands on a line the caches do not hold; the stream
 * loads one entry per 64-byte line. Each kernel is its own function, so the report names both. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ENTRIES (1 << 18) /* 1 MiB of uint32_t: four times the small preset's LLC */

__attribute__((noinline)) static uint32_t walk(const uint32_t *next, long steps)
{
    uint32_t p = 0;
    for (long i = 0; i < steps; i++)
        p = next[p];
    return p;
}

__attribute__((noinline)) static uint64_t stream(const uint32_t *next, long n)
{
    uint64_t s = 0;
    for (long i = 0; i < n; i += 16) /* one load per 64-byte line */
        s += next[i];
    return s;
}

int main(void)
{
    uint32_t *next = malloc(sizeof(uint32_t) * ENTRIES);
    if (!next)
        return 1;
    for (uint32_t i = 0; i < ENTRIES; i++)
        next[i] = i;
    uint64_t x = 88172645463325252ULL;
    for (uint32_t i = ENTRIES - 1; i > 0; i--) { /* Sattolo: one cycle through every entry */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint32_t j = (uint32_t)(x % i), t = next[i];
        next[i] = next[j], next[j] = t;
    }
    uint32_t end = walk(next, 30000);
    uint64_t sum = stream(next, ENTRIES);
    printf("%u %lu\n", end, (unsigned long)sum);
    free(next);
    return 0;
}
