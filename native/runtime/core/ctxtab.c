/* Context interning table; see ctxtab.h. */
#define _GNU_SOURCE
#include "ctxtab.h"
#include "rt.h"

#include <errno.h>
#include <string.h>

#define ARENA_CHUNK (1u << 20)

static uint64_t hash_frames(const ot_frame *f, uint32_t depth)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ depth;
    for (uint32_t i = 0; i < depth; i++) {
        h ^= ((uint64_t)f[i].module << 48) ^ f[i].offset;
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    return h ? h : 1;
}

int rt_ctxtab_init(rt_ctxtab *t)
{
    memset(t, 0, sizeof *t);
    t->capacity = 1024;
    t->slots = rt_sys_mmap(t->capacity * sizeof(rt_ctx_slot));
    return t->slots ? 0 : -ENOMEM;
}

static const ot_frame *arena_copy(rt_ctxtab *t, const ot_frame *f, uint32_t depth)
{
    uint64_t bytes = (uint64_t)depth * sizeof(ot_frame);
    if (t->arena_used + bytes > t->arena_cap) {
        /* old chunks stay mapped: slots point into them */
        unsigned char *a = rt_sys_mmap(ARENA_CHUNK);
        if (!a)
            return NULL;
        t->arena = a;
        t->arena_used = 0;
        t->arena_cap = ARENA_CHUNK;
    }
    ot_frame *d = (ot_frame *)(t->arena + t->arena_used);
    memcpy(d, f, bytes);
    t->arena_used += bytes;
    return d;
}

static rt_ctx_slot *probe(rt_ctx_slot *slots, uint64_t cap, uint64_t h, const ot_frame *f,
                          uint32_t depth)
{
    uint64_t i = h & (cap - 1);
    for (;;) {
        rt_ctx_slot *s = &slots[i];
        if (s->hash == 0)
            return s;
        if (s->hash == h && s->depth == depth &&
            (depth == 0 || memcmp(s->frames, f, depth * sizeof(ot_frame)) == 0))
            return s;
        i = (i + 1) & (cap - 1);
    }
}

static int grow(rt_ctxtab *t)
{
    uint64_t cap = t->capacity * 2;
    rt_ctx_slot *slots = rt_sys_mmap(cap * sizeof(rt_ctx_slot));
    if (!slots)
        return -ENOMEM;
    for (uint64_t i = 0; i < t->capacity; i++)
        if (t->slots[i].hash)
            *probe(slots, cap, t->slots[i].hash, t->slots[i].frames, t->slots[i].depth) =
                t->slots[i];
    rt_sys_munmap(t->slots, t->capacity * sizeof(rt_ctx_slot));
    t->slots = slots;
    t->capacity = cap;
    return 0;
}

uint32_t rt_ctxtab_intern(rt_ctxtab *t, const ot_frame *frames, uint32_t depth, int *is_new)
{
    *is_new = 0;
    uint64_t h = hash_frames(frames, depth);
    rt_ctx_slot *s = probe(t->slots, t->capacity, h, frames, depth);
    if (s->hash)
        return s->id;
    if ((t->count + 1) * 2 > t->capacity) {
        if (grow(t) != 0)
            return 0;
        s = probe(t->slots, t->capacity, h, frames, depth);
    }
    if (t->count == t->by_id_cap) {
        uint64_t cap = t->by_id_cap ? t->by_id_cap * 2 : 1024;
        rt_ctx_ref *refs = rt_sys_mmap(cap * sizeof *refs);
        if (!refs)
            return 0;
        if (t->by_id) {
            memcpy(refs, t->by_id, t->by_id_cap * sizeof *refs);
            rt_sys_munmap(t->by_id, t->by_id_cap * sizeof *refs);
        }
        t->by_id = refs;
        t->by_id_cap = cap;
    }
    const ot_frame *copy = arena_copy(t, frames, depth);
    if (!copy && depth)
        return 0;
    t->by_id[t->count] = (rt_ctx_ref){.frames = copy, .depth = depth};
    s->hash = h;
    s->depth = depth;
    s->frames = copy;
    s->id = (uint32_t)++t->count;
    *is_new = 1;
    return s->id;
}

int rt_ctxtab_frames(const rt_ctxtab *t, uint32_t id, const ot_frame **frames, uint32_t *depth)
{
    if (id == 0 || id > t->count)
        return -1;
    *frames = t->by_id[id - 1].frames;
    *depth = t->by_id[id - 1].depth;
    return 0;
}

void rt_ctxtab_destroy(rt_ctxtab *t)
{
    rt_sys_munmap(t->slots, t->capacity * sizeof(rt_ctx_slot));
    if (t->by_id)
        rt_sys_munmap(t->by_id, t->by_id_cap * sizeof *t->by_id);
    t->slots = NULL; /* arena chunks are left mapped: tests only */
    t->by_id = NULL;
}
