/* Calibration kernels for the C-AMAT tests: a dependent pointer chase over a shuffled ring of
 * 64-byte nodes (one miss at a time) and independent streaming loads over another array (as
 * many misses at a time as the model's registers allow). Each on its own allocation and in its
 * own function, so the report can name both. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NODES  (1 << 16) /* 4 MiB of 64-byte nodes: beyond the small preset's caches */
#define STREAM (1 << 19) /* 4 MiB of uint64_t */

struct node {
    struct node *next;
    char pad[56];
};

__attribute__((noinline)) static uintptr_t chase(struct node *p, long steps)
{
    for (long i = 0; i < steps; i++)
        p = p->next;
    return (uintptr_t)p;
}

__attribute__((noinline)) static uint64_t stream(const uint64_t *a, long n)
{
    uint64_t s = 0;
    for (long i = 0; i < n; i += 8) /* one load per 64-byte line */
        s += a[i];
    return s;
}

int main(void)
{
    struct node *nodes = malloc(sizeof(struct node) * NODES);
    uint64_t *array = malloc(sizeof(uint64_t) * STREAM);
    uint32_t *perm = malloc(sizeof(uint32_t) * NODES);
    if (!nodes || !array || !perm)
        return 1;
    uint64_t x = 88172645463325252ULL;
    for (uint32_t i = 0; i < NODES; i++)
        perm[i] = i;
    for (uint32_t i = NODES - 1; i > 0; i--) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint32_t j = (uint32_t)(x % (i + 1)), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    for (uint32_t i = 0; i < NODES; i++)
        nodes[perm[i]].next = &nodes[perm[(i + 1) % NODES]];
    for (long i = 0; i < STREAM; i++)
        array[i] = (uint64_t)i;
    uintptr_t end = chase(&nodes[perm[0]], 40000);
    uint64_t sum = stream(array, STREAM);
    printf("%lu %lu\n", (unsigned long)(end != 0), (unsigned long)sum);
    free(perm);
    free(nodes);
    free(array);
    return 0;
}
