/* A growable array of ranges in memory of its own; see range_array.h. */
#include "range_array.h"
#include "rt.h"

#include <errno.h>
#include <string.h>

int rt_range_array_reserve(rt_range_array *a, size_t need)
{
    if (need <= a->cap)
        return 0;
    size_t cap = a->cap ? a->cap * 2 : a->first_cap;
    while (cap < need)
        cap *= 2;
    void *p = rt_sys_mmap(cap * a->elem);
    if (!p)
        return -ENOMEM;
    if (a->items) {
        memcpy(p, a->items, a->n * a->elem);
        rt_sys_munmap(a->items, a->cap * a->elem);
    }
    a->items = p;
    a->cap = cap;
    return 0;
}

void rt_range_array_insert(rt_range_array *a, size_t i, const void *e)
{
    unsigned char *items = a->items;
    memmove(items + (i + 1) * a->elem, items + i * a->elem, (a->n - i) * a->elem);
    memcpy(items + i * a->elem, e, a->elem);
    a->n++;
}

void rt_range_array_erase(rt_range_array *a, size_t i)
{
    unsigned char *items = a->items;
    memmove(items + i * a->elem, items + (i + 1) * a->elem, (a->n - i - 1) * a->elem);
    a->n--;
}
