/* The local buffer in front of the C-AMAT model's FAR level: a page-granular LRU. */
#ifndef OBJTIER_CM_LOCAL_H
#define OBJTIER_CM_LOCAL_H

#include <stdint.h>

typedef struct cm_local {
    uint64_t capacity, used;
    uint64_t *keys; /* hash table: page + 1, 0 = empty */
    uint32_t *vals; /* node index of the key */
    uint64_t hmask;
    uint64_t *page;        /* node -> page */
    uint32_t *prev, *next; /* LRU list, head = most recent; UINT32_MAX = none */
    uint32_t head, tail;
} cm_local;

int cm_local_init(cm_local *b, uint64_t capacity);
void cm_local_free(cm_local *b);
/* 1 when page was local (now most recent), 0 when it was brought in (evicting the LRU). */
int cm_local_access(cm_local *b, uint64_t page);

#endif
