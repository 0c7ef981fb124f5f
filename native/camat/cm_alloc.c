/* Zeroed tables (cm_alloc.h). */
#define _GNU_SOURCE
#include "cm_alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_BYTES (2u << 20)

void *cm_zalloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    size_t bytes = n * size;
    if (bytes < HUGE_BYTES / 2)
        return calloc(n ? n : 1, size ? size : 1);
    /* large tables are looked up at random: huge pages save a TLB miss per look-up */
    size_t rounded = (bytes + HUGE_BYTES - 1) / HUGE_BYTES * HUGE_BYTES;
    void *p = NULL;
    if (posix_memalign(&p, HUGE_BYTES, rounded) != 0)
        return NULL;
    madvise(p, rounded, MADV_HUGEPAGE); /* advice only: base pages when refused */
    memset(p, 0, bytes);
    return p;
}
