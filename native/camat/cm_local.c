/* The page-LRU local buffer (cm_local.h). */
#include "cm_local.h"

#include "cm_alloc.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

int cm_local_init(cm_local *b, uint64_t capacity)
{
    memset(b, 0, sizeof *b);
    b->capacity = capacity;
    b->head = b->tail = NONE;
    uint64_t h = 16;
    while (h < capacity * 2)
        h *= 2;
    b->hmask = h - 1;
    b->keys = cm_zalloc(h, sizeof *b->keys);
    b->vals = cm_zalloc(h, sizeof *b->vals);
    uint64_t n = capacity ? capacity : 1;
    b->page = cm_zalloc(n, sizeof *b->page);
    b->prev = cm_zalloc(n, sizeof *b->prev);
    b->next = cm_zalloc(n, sizeof *b->next);
    return b->keys && b->vals && b->page && b->prev && b->next && capacity < NONE ? 0 : -1;
}

void cm_local_free(cm_local *b)
{
    free(b->keys);
    free(b->vals);
    free(b->page);
    free(b->prev);
    free(b->next);
    memset(b, 0, sizeof *b);
}

static uint64_t hash_page(uint64_t p)
{
    return (p * 0x9E3779B97F4A7C15ULL) >> 17;
}

static void unlink_node(cm_local *b, uint32_t n)
{
    if (b->prev[n] != NONE)
        b->next[b->prev[n]] = b->next[n];
    else
        b->head = b->next[n];
    if (b->next[n] != NONE)
        b->prev[b->next[n]] = b->prev[n];
    else
        b->tail = b->prev[n];
}

static void push_front(cm_local *b, uint32_t n)
{
    b->prev[n] = NONE;
    b->next[n] = b->head;
    if (b->head != NONE)
        b->prev[b->head] = n;
    b->head = n;
    if (b->tail == NONE)
        b->tail = n;
}

/* Removes key page from the table (linear probing, backward-shift deletion). */
static void table_remove(cm_local *b, uint64_t page)
{
    uint64_t i = hash_page(page) & b->hmask;
    while (b->keys[i] != page + 1)
        i = (i + 1) & b->hmask;
    for (;;) {
        b->keys[i] = 0;
        uint64_t j = i;
        for (;;) {
            j = (j + 1) & b->hmask;
            if (b->keys[j] == 0)
                return;
            uint64_t home = hash_page(b->keys[j] - 1) & b->hmask;
            /* move j back to i when its home is not in (i, j] (cyclically) */
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
                break;
        }
        b->keys[i] = b->keys[j];
        b->vals[i] = b->vals[j];
        i = j;
    }
}

int cm_local_access(cm_local *b, uint64_t page)
{
    if (b->capacity == 0)
        return 0;
    uint64_t i = hash_page(page) & b->hmask;
    while (b->keys[i]) {
        if (b->keys[i] == page + 1) {
            uint32_t n = b->vals[i];
            if (b->head != n) {
                unlink_node(b, n);
                push_front(b, n);
            }
            return 1;
        }
        i = (i + 1) & b->hmask;
    }
    uint32_t n;
    if (b->used < b->capacity) {
        n = (uint32_t)b->used++;
    } else {
        n = b->tail;
        unlink_node(b, n);
        table_remove(b, b->page[n]);
        i = hash_page(page) & b->hmask; /* the removal may have moved keys */
        while (b->keys[i])
            i = (i + 1) & b->hmask;
    }
    b->page[n] = page;
    b->keys[i] = page + 1;
    b->vals[i] = n;
    push_front(b, n);
    return 0;
}
