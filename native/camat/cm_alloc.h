/* Zeroed tables for the C-AMAT model's parts. */
#ifndef OBJTIER_CM_ALLOC_H
#define OBJTIER_CM_ALLOC_H

#include <stddef.h>

/* Zeroed memory for n items of size bytes (huge-page aligned and advised when large); free()
 * releases it. NULL when out of memory or when n * size overflows. */
void *cm_zalloc(size_t n, size_t size);

#endif
