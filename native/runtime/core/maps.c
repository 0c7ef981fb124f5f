/* Sorted range list of tracked mappings; see maps.h. */
#define _GNU_SOURCE
#include "maps.h"
#include "range_array.h"
#include "rt.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* sorted by addr; an element's size = its range's length in bytes */
static rt_range_array ranges = RT_RANGE_ARRAY_INIT(rt_obj, 256);
_Atomic uint64_t rt_maps_live;

static uint64_t end_of(const void *e)
{
    const rt_obj *o = e;
    return o->addr + o->size;
}

/* First index whose range ends after addr. */
static size_t first_after(uint64_t addr)
{
    return rt_range_array_first_after(&ranges, addr, end_of);
}

static rt_obj *at(size_t i)
{
    return (rt_obj *)ranges.items + i;
}

int rt_maps_add(const rt_obj *o)
{
    pthread_mutex_lock(&lock);
    if (rt_range_array_reserve(&ranges, ranges.n + 2) != 0) {
        pthread_mutex_unlock(&lock);
        return -ENOMEM;
    }
    /* a new mapping replaces whatever it overlaps (MAP_FIXED over a tracked range) */
    size_t i = first_after(o->addr);
    while (i < ranges.n && at(i)->addr < o->addr + o->size) {
        rt_obj r = *at(i);
        rt_range_array_erase(&ranges, i);
        if (r.addr < o->addr) {
            rt_obj left = r;
            left.size = o->addr - r.addr;
            rt_range_array_insert(&ranges, i++, &left);
        }
        if (r.addr + r.size > o->addr + o->size) {
            rt_obj right = r;
            right.addr = o->addr + o->size;
            right.size = r.addr + r.size - right.addr;
            rt_range_array_insert(&ranges, i, &right);
            break;
        }
    }
    rt_range_array_insert(&ranges, first_after(o->addr), o);
    atomic_store(&rt_maps_live, ranges.n);
    pthread_mutex_unlock(&lock);
    const rt_track_observer *obs = rt_track_observer_now();
    if (obs)
        obs->added(o->addr, o->size, o->seq);
    return 0;
}

int rt_maps_remove(uint64_t addr, uint64_t len,
                   void (*fn)(uint64_t, uint64_t, uint64_t, uint32_t, void *), void *ctx)
{
    uint64_t end = addr + len;
    int pieces = 0;
    pthread_mutex_lock(&lock);
    size_t i = first_after(addr);
    while (i < ranges.n && at(i)->addr < end) {
        rt_obj r = *at(i);
        uint64_t cut_lo = r.addr > addr ? r.addr : addr;
        uint64_t cut_hi = r.addr + r.size < end ? r.addr + r.size : end;
        if (fn)
            fn(cut_lo, cut_hi - cut_lo, r.seq, r.prot, ctx);
        pieces++;
        rt_range_array_erase(&ranges, i);
        if (r.addr < cut_lo) {
            rt_obj left = r;
            left.size = cut_lo - r.addr;
            rt_range_array_insert(&ranges, i++, &left);
        }
        if (r.addr + r.size > cut_hi) {
            if (rt_range_array_reserve(&ranges, ranges.n + 1) != 0)
                break; /* cannot split: forget the right part */
            rt_obj right = r;
            right.addr = cut_hi;
            right.size = r.addr + r.size - cut_hi;
            rt_range_array_insert(&ranges, i++, &right);
        }
    }
    atomic_store(&rt_maps_live, ranges.n);
    pthread_mutex_unlock(&lock);
    const rt_track_observer *obs = pieces ? rt_track_observer_now() : NULL;
    if (obs)
        obs->removed(addr, len);
    return pieces;
}

int rt_maps_contains(uint64_t addr, uint64_t len, uint64_t seq)
{
    pthread_mutex_lock(&lock);
    size_t i = first_after(addr);
    int yes = i < ranges.n && at(i)->addr <= addr && addr + len <= at(i)->addr + at(i)->size &&
              at(i)->seq == seq;
    pthread_mutex_unlock(&lock);
    return yes;
}

size_t rt_maps_snapshot(rt_obj *out, size_t cap)
{
    pthread_mutex_lock(&lock);
    size_t n = ranges.n < cap ? ranges.n : cap;
    if (n)
        memcpy(out, ranges.items, n * sizeof(rt_obj));
    pthread_mutex_unlock(&lock);
    return n;
}

void rt_maps_lock(void)
{
    pthread_mutex_lock(&lock);
}
void rt_maps_unlock(void)
{
    pthread_mutex_unlock(&lock);
}

void rt_maps_reset(void)
{
    pthread_mutex_init(&lock, NULL);
    ranges.n = 0;
    atomic_store(&rt_maps_live, 0);
}
