/*
 * malloc family. Fast path: one compare of the size against rt_min_size (UINT64_MAX
 * when not recording) and, below it, the site-sampling test of the returned address (one
 * multiply and compare, track.h rt_site_hit); free() of untracked memory costs a load of
 * rt_reg_live and, only when objects are tracked, malloc_usable_size() < min size, then
 * the same site test of the pointer. Segregated arenas (arena.h) add one load of
 * rt_sarena_serving to each allocation and one of rt_sarena_nregions to each release while
 * off; while on, arena blocks are recognised by address and never reach the real allocator.
 */
#define _GNU_SOURCE
#include "arena.h"
#include "placement.h"
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

/* An arena block for the program's call of n bytes returning to ip, or NULL (arena.h). */
#define SERVE_AT(n, align, zero, ip)                                                               \
    (RT_UNLIKELY(atomic_load_explicit(&rt_sarena_serving, memory_order_relaxed)) && rt_guard == 0  \
         ? rt_sarena_alloc((n), (align), (ip), (zero))                                             \
         : NULL)
#define SERVE(n, align, zero) SERVE_AT(n, align, zero, __builtin_return_address(0))
#define POW2(a)               ((a) != 0 && ((a) & ((a)-1)) == 0)

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

/* A block the program got: an object (size at least min size) or a sampled small block. */
static inline void note(void *p, size_t n, uint16_t kind)
{
    if (!p)
        return;
    if (want(n))
        rt_on_alloc(p, n, kind, RW, 0);
    else if (rt_site_hit(p) && rt_guard == 0)
        rt_on_site_alloc(p, n, kind);
}

/* The program allocator's usable size of p (an arena block's own where p is one), through the
 * pointer rt_real_init resolved: never a lazy dlsym, which would free() its error string and
 * recurse here (libomp's dlopen at start-up did). */
static inline size_t real_usable(void *p)
{
    if (RT_UNLIKELY(rt_sarena_owns(p)))
        return rt_sarena_usable(p);
    return rt_real.malloc_usable_size ? rt_real.malloc_usable_size(p) : 0;
}

/* A pointer the program is releasing: 1 if it was tracked (FREE written); else a SITE_FREE
 * when its address is one the site sampling picks (written for any such address: the reader
 * drops those that close no SITE_ALLOC). */
static inline int release(void *p, uint16_t kind)
{
    if (rt_guard)
        return 0;
    if (RT_UNLIKELY(atomic_load_explicit(&rt_reg_live, memory_order_relaxed) != 0) &&
        real_usable(p) >= atomic_load_explicit(&rt_min_size, memory_order_relaxed) &&
        rt_on_free(p, kind))
        return 1;
    if (rt_site_hit_free(p))
        rt_on_site_free(p, kind);
    return 0;
}

void *malloc(size_t n)
{
    if (RT_UNLIKELY(rt_resolving))
        return rt_arena_alloc(n, 16);
    resolve();
    void *p = SERVE(n, 0, 0);
    if (!p)
        p = rt_real.malloc(n);
    note(p, n, OT_ALLOC_MALLOC);
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
    void *p = n && k > SIZE_MAX / n ? NULL : SERVE(k * n, 0, 1);
    if (!p)
        p = rt_real.calloc(k, n);
    if (!n || k <= SIZE_MAX / n)
        note(p, k * n, OT_ALLOC_CALLOC);
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
    if (RT_UNLIKELY(rt_sarena_owns(p)))
        rt_sarena_free(p);
    else
        rt_real.free(p);
}


/* realloc of an arena block (arena.h): in place or moved, with its site records. */
static void *realloc_arena(void *p, size_t bytes)
{
    int site_old = !rt_guard && rt_site_hit_free(p);
    if (site_old)
        rt_on_site_free(p, OT_FREE_REALLOC);
    void *q = rt_sarena_realloc(p, bytes, rt_real.malloc);
    if (site_old && !q && bytes != 0 && rt_site_hit(p)) /* failed: sampled again as it is now */
        rt_on_site_alloc(p, rt_sarena_usable(p), OT_ALLOC_REALLOC);
    note(q, bytes, OT_ALLOC_REALLOC);
    return q;
}

size_t malloc_usable_size(void *p)
{
    if (!p)
        return 0;
    if (RT_UNLIKELY(rt_in_arena(p)))
        return rt_arena_size(p);
    resolve();
    return real_usable(p);
}

static void *realloc_common(void *p, size_t n, int array, size_t k, const void *ip)
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
    if (RT_UNLIKELY(p && rt_sarena_owns(p)))
        return realloc_arena(p, bytes);
    if (!p) { /* realloc(NULL, n) is malloc(n): an arena block when its site is served */
        void *q = SERVE_AT(bytes, 0, 0, ip);
        if (q) {
            note(q, bytes, OT_ALLOC_REALLOC);
            return q;
        }
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
        }
        rt_guard--;
    }
    /* a sampled small block: its SITE_FREE goes before the real realloc can hand the
     * address to another thread, whose SITE_ALLOC must come after it */
    int site_old = p && !tracked && !rt_guard && rt_site_hit_free(p);
    if (site_old)
        rt_on_site_free(p, OT_FREE_REALLOC);
    void *q = array ? rt_real.reallocarray(p, k, n) : rt_real.realloc(p, n);
    /* failed: the old block is still the program's, sampled again as its address is now */
    if (site_old && !q && bytes != 0 && rt_site_hit(p))
        rt_on_site_alloc(p, malloc_usable_size(p), OT_ALLOC_REALLOC);
    if (tracked) {
        if (!q && bytes != 0) {
            rt_reinsert(&old); /* failed: the old object is still the program's */
            return q;
        }
        rt_guard++;
        rt_on_unmap_free_record(old.addr, OT_FREE_REALLOC);
        rt_guard--;
    }
    note(q, bytes, OT_ALLOC_REALLOC);
    return q;
}

void *realloc(void *p, size_t n)
{
    return realloc_common(p, n, 0, 0, __builtin_return_address(0));
}

void *reallocarray(void *p, size_t k, size_t n)
{
    return realloc_common(p, n, 1, k, __builtin_return_address(0));
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (RT_UNLIKELY(rt_resolving)) {
        *out = rt_arena_alloc(n, align);
        return *out ? 0 : ENOMEM;
    }
    resolve();
    void *q = POW2(align) && align >= sizeof(void *) ? SERVE(n, align, 0) : NULL;
    if (q) {
        *out = q;
        note(q, n, OT_ALLOC_POSIX_MEMALIGN);
        return 0;
    }
    int r = rt_real.posix_memalign(out, align, n);
    if (r == 0)
        note(*out, n, OT_ALLOC_POSIX_MEMALIGN);
    return r;
}

void *aligned_alloc(size_t align, size_t n)
{
    if (RT_UNLIKELY(rt_resolving))
        return rt_arena_alloc(n, align);
    resolve();
    void *p = POW2(align) ? SERVE(n, align, 0) : NULL;
    if (!p)
        p = rt_real.aligned_alloc(align, n);
    note(p, n, OT_ALLOC_ALIGNED_ALLOC);
    return p;
}

void *memalign(size_t align, size_t n)
{
    if (RT_UNLIKELY(rt_resolving))
        return rt_arena_alloc(n, align);
    resolve();
    void *p = POW2(align) ? SERVE(n, align, 0) : NULL;
    if (!p)
        p = rt_real.memalign(align, n);
    note(p, n, OT_ALLOC_MEMALIGN);
    return p;
}

void *valloc(size_t n)
{
    if (RT_UNLIKELY(rt_resolving))
        return rt_arena_alloc(n, 4096);
    resolve();
    void *p = SERVE(n, rt_page_bytes, 0);
    if (!p)
        p = rt_real.valloc(n);
    note(p, n, OT_ALLOC_VALLOC);
    return p;
}

void *pvalloc(size_t n)
{
    if (RT_UNLIKELY(rt_resolving))
        return rt_arena_alloc(n, 4096);
    resolve();
    void *p = rt_real.pvalloc(n);
    note(p, n, OT_ALLOC_PVALLOC);
    return p;
}
