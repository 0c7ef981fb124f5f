/* Sharded open-addressing hash of live heap objects; see registry.h. */
#define _GNU_SOURCE
#include "registry.h"
#include "rt.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#define SHARDS        64
#define INITIAL_SLOTS 256 /* power of two */
#define EMPTY         0
#define DELETED       1

typedef struct {
    pthread_mutex_t lock;
    rt_obj *slots;   /* capacity entries, from mmap */
    size_t capacity; /* power of two */
    size_t used;     /* live + deleted */
    size_t live;
    char pad[64];
} shard;

static shard shards[SHARDS];
_Atomic uint64_t rt_reg_live;
_Atomic uint64_t rt_newest_tracked_seq;
static const rt_track_observer *_Atomic observer;

void rt_track_set_observer(const rt_track_observer *obs)
{
    atomic_store_explicit(&observer, obs, memory_order_release);
}

const rt_track_observer *rt_track_observer_now(void)
{
    return atomic_load_explicit(&observer, memory_order_acquire);
}

void rt_reg_note_tracked(uint64_t seq)
{
    uint64_t seen = atomic_load(&rt_newest_tracked_seq);
    while (seen < seq && !atomic_compare_exchange_weak(&rt_newest_tracked_seq, &seen, seq))
        ;
}

static inline uint64_t mix(uint64_t a)
{
    a ^= a >> 33;
    a *= 0xff51afd7ed558ccdULL;
    a ^= a >> 33;
    return a;
}

static inline shard *shard_of(uint64_t addr, uint64_t *h)
{
    *h = mix(addr >> 4);
    return &shards[*h & (SHARDS - 1)];
}

int rt_reg_init(void)
{
    for (int i = 0; i < SHARDS; i++) {
        pthread_mutex_init(&shards[i].lock, NULL);
        shards[i].slots = rt_sys_mmap(INITIAL_SLOTS * sizeof(rt_obj));
        if (!shards[i].slots)
            return -ENOMEM;
        shards[i].capacity = INITIAL_SLOTS;
        shards[i].used = shards[i].live = 0;
    }
    atomic_store(&rt_reg_live, 0);
    return 0;
}

static rt_obj *find_slot(shard *s, uint64_t h, uint64_t addr, int for_insert)
{
    size_t mask = s->capacity - 1;
    size_t i = (h >> 6) & mask;
    rt_obj *tomb = NULL;
    for (;;) {
        rt_obj *o = &s->slots[i];
        if (o->addr == addr)
            return o;
        if (o->addr == EMPTY)
            return for_insert && tomb ? tomb : (for_insert ? o : NULL);
        if (o->addr == DELETED && !tomb)
            tomb = o;
        i = (i + 1) & mask;
    }
}

static int grow(shard *s)
{
    size_t cap = s->capacity * 2;
    if (s->live * 4 < s->capacity)
        cap = s->capacity; /* mostly tombstones: rehash in place size */
    rt_obj *slots = rt_sys_mmap(cap * sizeof(rt_obj));
    if (!slots)
        return -ENOMEM;
    rt_obj *old = s->slots;
    size_t old_cap = s->capacity;
    s->slots = slots;
    s->capacity = cap;
    s->used = s->live = 0;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].addr > DELETED) {
            rt_obj *d = find_slot(s, mix(old[i].addr >> 4), old[i].addr, 1);
            *d = old[i];
            s->used++;
            s->live++;
        }
    }
    rt_sys_munmap(old, old_cap * sizeof(rt_obj));
    return 0;
}

int rt_reg_insert(const rt_obj *o)
{
    uint64_t h;
    shard *s = shard_of(o->addr, &h);
    pthread_mutex_lock(&s->lock);
    if ((s->used + 1) * 2 > s->capacity && grow(s) != 0) {
        pthread_mutex_unlock(&s->lock);
        return -ENOMEM;
    }
    rt_obj *d = find_slot(s, h, o->addr, 1);
    if (d->addr != o->addr) {
        if (d->addr == EMPTY)
            s->used++;
        s->live++;
        atomic_fetch_add_explicit(&rt_reg_live, 1, memory_order_relaxed);
    }
    *d = *o;
    pthread_mutex_unlock(&s->lock);
    const rt_track_observer *obs = rt_track_observer_now();
    if (obs)
        obs->added(o->addr, o->size ? o->size : 1, o->seq);
    return 0;
}

int rt_reg_remove(uint64_t addr, rt_obj *out)
{
    uint64_t h;
    shard *s = shard_of(addr, &h);
    pthread_mutex_lock(&s->lock);
    rt_obj *d = find_slot(s, h, addr, 0);
    int found = d != NULL;
    rt_obj o;
    if (found) {
        o = *d;
        d->addr = DELETED;
        s->live--;
        atomic_fetch_sub_explicit(&rt_reg_live, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&s->lock);
    if (!found)
        return 0;
    if (out)
        *out = o;
    const rt_track_observer *obs = rt_track_observer_now();
    if (obs)
        obs->removed(o.addr, o.size ? o.size : 1);
    return 1;
}

int rt_reg_lookup(uint64_t addr, rt_obj *out)
{
    uint64_t h;
    shard *s = shard_of(addr, &h);
    pthread_mutex_lock(&s->lock);
    rt_obj *d = find_slot(s, h, addr, 0);
    if (d && out)
        *out = *d;
    pthread_mutex_unlock(&s->lock);
    return d != NULL;
}

size_t rt_reg_snapshot(rt_obj *out, size_t cap)
{
    size_t n = 0;
    for (int i = 0; i < SHARDS && n < cap; i++) {
        shard *s = &shards[i];
        pthread_mutex_lock(&s->lock);
        for (size_t j = 0; j < s->capacity && n < cap; j++)
            if (s->slots[j].addr > DELETED)
                out[n++] = s->slots[j];
        pthread_mutex_unlock(&s->lock);
    }
    return n;
}

void rt_reg_lock_all(void)
{
    for (int i = 0; i < SHARDS; i++)
        pthread_mutex_lock(&shards[i].lock);
}

void rt_reg_unlock_all(void)
{
    for (int i = 0; i < SHARDS; i++)
        pthread_mutex_unlock(&shards[i].lock);
}

void rt_reg_reinit_locks(void)
{
    for (int i = 0; i < SHARDS; i++)
        pthread_mutex_init(&shards[i].lock, NULL);
}
