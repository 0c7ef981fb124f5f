/* Sorted range list of tracked mappings; see maps.h. */
#define _GNU_SOURCE
#include "maps.h"
#include "rt.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static rt_obj *ranges; /* sorted by addr; size = range length in bytes */
static size_t count, capacity;
_Atomic uint64_t rt_maps_live;

static int reserve(size_t need)
{
    if (need <= capacity)
        return 0;
    size_t cap = capacity ? capacity * 2 : 256;
    while (cap < need)
        cap *= 2;
    rt_obj *r = rt_sys_mmap(cap * sizeof(rt_obj));
    if (!r)
        return -ENOMEM;
    if (ranges) {
        memcpy(r, ranges, count * sizeof(rt_obj));
        rt_sys_munmap(ranges, capacity * sizeof(rt_obj));
    }
    ranges = r;
    capacity = cap;
    return 0;
}

/* First index whose range ends after addr. */
static size_t first_after(uint64_t addr)
{
    size_t lo = 0, hi = count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ranges[mid].addr + ranges[mid].size <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void insert_at(size_t i, const rt_obj *o)
{
    memmove(&ranges[i + 1], &ranges[i], (count - i) * sizeof(rt_obj));
    ranges[i] = *o;
    count++;
}

static void erase_at(size_t i)
{
    memmove(&ranges[i], &ranges[i + 1], (count - i - 1) * sizeof(rt_obj));
    count--;
}

int rt_maps_add(const rt_obj *o)
{
    pthread_mutex_lock(&lock);
    if (reserve(count + 2) != 0) {
        pthread_mutex_unlock(&lock);
        return -ENOMEM;
    }
    /* a new mapping replaces whatever it overlaps (MAP_FIXED over a tracked range) */
    size_t i = first_after(o->addr);
    while (i < count && ranges[i].addr < o->addr + o->size) {
        rt_obj r = ranges[i];
        erase_at(i);
        if (r.addr < o->addr) {
            rt_obj left = r;
            left.size = o->addr - r.addr;
            insert_at(i++, &left);
        }
        if (r.addr + r.size > o->addr + o->size) {
            rt_obj right = r;
            right.addr = o->addr + o->size;
            right.size = r.addr + r.size - right.addr;
            insert_at(i, &right);
            break;
        }
    }
    insert_at(first_after(o->addr), o);
    atomic_store(&rt_maps_live, count);
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
    while (i < count && ranges[i].addr < end) {
        rt_obj r = ranges[i];
        uint64_t cut_lo = r.addr > addr ? r.addr : addr;
        uint64_t cut_hi = r.addr + r.size < end ? r.addr + r.size : end;
        if (fn)
            fn(cut_lo, cut_hi - cut_lo, r.seq, r.prot, ctx);
        pieces++;
        erase_at(i);
        if (r.addr < cut_lo) {
            rt_obj left = r;
            left.size = cut_lo - r.addr;
            insert_at(i++, &left);
        }
        if (r.addr + r.size > cut_hi) {
            if (reserve(count + 1) != 0)
                break; /* cannot split: forget the right part */
            rt_obj right = r;
            right.addr = cut_hi;
            right.size = r.addr + r.size - cut_hi;
            insert_at(i++, &right);
        }
    }
    atomic_store(&rt_maps_live, count);
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
    int yes = i < count && ranges[i].addr <= addr &&
              addr + len <= ranges[i].addr + ranges[i].size && ranges[i].seq == seq;
    pthread_mutex_unlock(&lock);
    return yes;
}

size_t rt_maps_snapshot(rt_obj *out, size_t cap)
{
    pthread_mutex_lock(&lock);
    size_t n = count < cap ? count : cap;
    memcpy(out, ranges, n * sizeof(rt_obj));
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
    count = 0;
    atomic_store(&rt_maps_live, 0);
}
