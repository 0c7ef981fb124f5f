/*
 * malloc family. Fast path: one compare of the size against rt_min_size (UINT64_MAX
 * when not recording); free() of untracked memory costs a load of rt_reg_live and,
 * only when objects are tracked, malloc_usable_size() < min size.
 */
#define _GNU_SOURCE
#include "placement.h"
#include "dynamic.h"
#include "online.h"
#include "real.h"
#include "registry.h"
#include "rt.h"
#include "track.h"
#include "sampler.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define RW (PROT_READ | PROT_WRITE)

static inline int want(size_t n)
{
    return RT_UNLIKELY(n >= atomic_load_explicit(&rt_min_size, memory_order_relaxed)) &&
           rt_guard == 0;
}

static inline void resolve(void)
{
    if (RT_UNLIKELY(!rt_real.free))
        rt_real_init();
}

/* A pointer the program is releasing: 1 if it was tracked (FREE written). */
static inline int release(void *p, uint16_t kind)
{
    if (RT_LIKELY(atomic_load_explicit(&rt_reg_live, memory_order_relaxed) == 0) || rt_guard)
        return 0;
    if (malloc_usable_size(p) < atomic_load_explicit(&rt_min_size, memory_order_relaxed))
        return 0;
    return rt_on_free(p, kind);
}

void *malloc(size_t n)
{
    if (RT_UNLIKELY(rt_resolving))
        return rt_arena_alloc(n, 16);
    resolve();
    void *p = rt_real.malloc(n);
    if (want(n) && p)
        rt_on_alloc(p, n, OT_ALLOC_MALLOC, RW, 0);
    return p;
}

void *calloc(size_t k, size_t n)
{
    if (RT_UNLIKELY(rt_resolving)) {
        if (n && k > SIZE_MAX / n)
            return NULL;
        return rt_arena_alloc(k * n, 16);
    }
    resolve();
    void *p = rt_real.calloc(k, n);
    if (p && (!n || k <= SIZE_MAX / n) && want(k * n))
        rt_on_alloc(p, k * n, OT_ALLOC_CALLOC, RW, 0);
    return p;
}

void free(void *p)
{
    if (!p)
        return;
    if (RT_UNLIKELY(rt_in_arena(p)))
        return;
    resolve();
    release(p, OT_FREE_FREE);
    rt_real.free(p);
}


static void *realloc_common(void *p, size_t n, int array, size_t k)
{
    if (RT_UNLIKELY(rt_resolving || rt_in_arena(p))) {
        if (array && n && k > SIZE_MAX / n)
            return NULL;
        size_t want_bytes = array ? k * n : n;
        void *q = rt_resolving ? rt_arena_alloc(want_bytes, 16) : malloc(want_bytes);
        if (q && p) {
            size_t old = rt_arena_size(p);
            memcpy(q, p, old < want_bytes ? old : want_bytes);
        }
        return q;
    }
    resolve();
    size_t bytes = n;
    if (array) {
        if (n && k > SIZE_MAX / n) {
            errno = ENOMEM;
            return NULL;
        }
        bytes = k * n;
    }
    rt_obj old;
    int tracked = 0;
    if (p && atomic_load_explicit(&rt_reg_live, memory_order_relaxed) && !rt_guard &&
        malloc_usable_size(p) >= atomic_load_explicit(&rt_min_size, memory_order_relaxed)) {
        /* take it out (and disarm) before the real realloc reads or moves it */
        rt_guard++;
        tracked = rt_reg_remove((uint64_t)(uintptr_t)p, &old);
        if (tracked) {
            rt_fault_disarm(old.addr, old.size);
            rt_place_release(old.addr); /* munlock before the real realloc moves it */
            rt_dyn_release(old.addr);
            rt_online_release(old.addr);
        }
        rt_guard--;
    }
    void *q = array ? rt_real.reallocarray(p, k, n) : rt_real.realloc(p, n);
    if (tracked) {
        if (!q && bytes != 0) {
            rt_reinsert(&old); /* failed: the old object is still the program's */
            return q;
        }
        rt_guard++;
        rt_on_unmap_free_record(old.addr, OT_FREE_REALLOC);
        rt_guard--;
    }
    if (q && want(bytes))
        rt_on_alloc(q, bytes, OT_ALLOC_REALLOC, RW, 0);
    return q;
}

void *realloc(void *p, size_t n)
{
    return realloc_common(p, n, 0, 0);
}

void *reallocarray(void *p, size_t k, size_t n)
{
    return realloc_common(p, n, 1, k);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (RT_UNLIKELY(rt_resolving)) {
        *out = rt_arena_alloc(n, align);
        return *out ? 0 : ENOMEM;
    }
    resolve();
    int r = rt_real.posix_memalign(out, align, n);
    if (r == 0 && want(n))
        rt_on_alloc(*out, n, OT_ALLOC_POSIX_MEMALIGN, RW, 0);
    return r;
}

void *aligned_alloc(size_t align, size_t n)
{
    if (RT_UNLIKELY(rt_resolving))
        return rt_arena_alloc(n, align);
    resolve();
    void *p = rt_real.aligned_alloc(align, n);
    if (p && want(n))
        rt_on_alloc(p, n, OT_ALLOC_ALIGNED_ALLOC, RW, 0);
    return p;
}

void *memalign(size_t align, size_t n)
{
    if (RT_UNLIKELY(rt_resolving))
        return rt_arena_alloc(n, align);
    resolve();
    void *p = rt_real.memalign(align, n);
    if (p && want(n))
        rt_on_alloc(p, n, OT_ALLOC_MEMALIGN, RW, 0);
    return p;
}

void *valloc(size_t n)
{
    if (RT_UNLIKELY(rt_resolving))
        return rt_arena_alloc(n, 4096);
    resolve();
    void *p = rt_real.valloc(n);
    if (p && want(n))
        rt_on_alloc(p, n, OT_ALLOC_VALLOC, RW, 0);
    return p;
}

void *pvalloc(size_t n)
{
    if (RT_UNLIKELY(rt_resolving))
        return rt_arena_alloc(n, 4096);
    resolve();
    void *p = rt_real.pvalloc(n);
    if (p && want(n))
        rt_on_alloc(p, n, OT_ALLOC_PVALLOC, RW, 0);
    return p;
}
