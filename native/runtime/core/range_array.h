/*
 * A growable array of fixed-size elements in memory of its own (rt_sys_mmap, never the
 * program's malloc), and the binary search of such an array when it holds ranges sorted by
 * start that do not overlap (the map list, maps.c; the trace sampler's object index).
 *
 * Invariants
 *   - items holds cap elements of elem bytes, the first n in use; NULL while cap == 0.
 *   - Capacity only grows: doubling from first_cap, so n insertions copy O(n) elements.
 *   - Not thread-safe: the owner serializes every call (its own lock). Memory is never
 *     given back while the owner lives (a forked child keeps it and sets n = 0).
 */
#ifndef OBJTIER_RANGE_ARRAY_H
#define OBJTIER_RANGE_ARRAY_H

#include <stddef.h>
#include <stdint.h>

typedef struct rt_range_array {
    void *items;
    size_t n, cap;    /* elements in use, room [elements] */
    size_t elem;      /* bytes per element */
    size_t first_cap; /* room of the first allocation [elements], > 0 */
} rt_range_array;

#define RT_RANGE_ARRAY_INIT(type, first)                                                           \
    {                                                                                              \
        .elem = sizeof(type), .first_cap = (first)                                                 \
    }

/* Room for at least `need` elements, the n in use kept: 0, or -ENOMEM with a unchanged. */
int rt_range_array_reserve(rt_range_array *a, size_t need);

/* Puts a copy of *e at index i (0 <= i <= n), shifting the rest up; room must be reserved
 * and e must not point into the array. */
void rt_range_array_insert(rt_range_array *a, size_t i, const void *e);

/* Removes the element at index i (< n), shifting the rest down. */
void rt_range_array_erase(rt_range_array *a, size_t i);

/* First index whose range ends after addr (end_of(element) > addr), n when none does: every
 * range before it lies wholly below addr. The array is sorted by start and non-overlapping,
 * so the ends are sorted too. Inline, so that a constant end_of is inlined with it (and
 * never instrumented: the trace sampler's callbacks search with it). */
__attribute__((no_instrument_function)) static inline size_t
rt_range_array_first_after(const rt_range_array *a, uint64_t addr,
                           uint64_t (*end_of)(const void *e))
{
    const unsigned char *items = a->items;
    size_t lo = 0, hi = a->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (end_of(items + mid * a->elem) <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

#endif
