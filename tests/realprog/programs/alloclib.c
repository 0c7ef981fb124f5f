/*
 * A shared library the dlopen program loads at run time: it allocates a large table with
 * malloc and another with mmap, fills both, and hands back their checksum.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

uint64_t table_checksum(size_t entries, uint64_t seed)
{
    uint64_t *heap = malloc(entries * sizeof *heap);
    uint64_t *mapped = mmap(NULL, entries * sizeof *mapped, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!heap || mapped == MAP_FAILED)
        return 0;
    uint64_t x = seed, sum = 0;
    for (size_t i = 0; i < entries; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        heap[i] = x;
        mapped[(i * 7919) % entries] = x >> 7;
    }
    for (size_t i = 0; i < entries; i++)
        sum += heap[i] ^ mapped[i];
    free(heap);
    munmap(mapped, entries * sizeof *mapped);
    return sum;
}
