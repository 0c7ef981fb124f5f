/*
 * C++ operator new/new[]/delete/delete[], every standard overload, by mangled name
 * (no libstdc++ dependency). new calls the C++ runtime's own operator (so new_handler
 * and bad_alloc behave as without objtier) with recording suppressed, then records
 * the object as kind NEW. delete goes through free(), which untracks.
 * Without a C++ runtime in the process nothing calls these; the fallbacks use malloc.
 */
#define _GNU_SOURCE
#include "arena.h"
#include "real.h"
#include "rt.h"
#include "track.h"

#include <stdlib.h>
#include <sys/mman.h>

#define RW (PROT_READ | PROT_WRITE)

static inline void note(void *p, size_t n)
{
    if (!p || rt_guard != 0)
        return;
    if (RT_UNLIKELY(n >= atomic_load_explicit(&rt_min_size, memory_order_relaxed)))
        rt_on_alloc(p, n, OT_ALLOC_NEW, RW, 0);
    else if (rt_site_hit(p))
        rt_on_site_alloc(p, n, OT_ALLOC_NEW);
}

static void *fallback(size_t n, size_t align, int nothrow)
{
    void *p = NULL;
    if (align > 16) {
        if (posix_memalign(&p, align, n ? n : 1) != 0)
            p = NULL;
    } else
        p = malloc(n ? n : 1);
    if (!p && !nothrow)
        abort(); /* no C++ runtime to throw std::bad_alloc */
    return p;
}

#define NEW_BODY(fn, call, n, align, nothrow)                                                      \
    rt_real_init();                                                                                \
    void *p;                                                                                       \
    if (RT_UNLIKELY(atomic_load_explicit(&rt_sarena_serving, memory_order_relaxed)) &&             \
        rt_guard == 0 && (p = rt_sarena_alloc(n, align, __builtin_return_address(0), 0))) {        \
        note(p, n); /* an arena block of a served site (arena.h) */                                \
        return p;                                                                                  \
    }                                                                                              \
    rt_guard++;                                                                                    \
    p = rt_real.fn ? call : fallback(n, align, nothrow);                                           \
    rt_guard--;                                                                                    \
    note(p, n);                                                                                    \
    return p;

void *_Znwm(size_t n)
{
    NEW_BODY(op_new, rt_real.op_new(n), n, 0, 0)
}
void *_Znam(size_t n)
{
    NEW_BODY(op_new_array, rt_real.op_new_array(n), n, 0, 0)
}
void *_ZnwmRKSt9nothrow_t(size_t n, const void *t)
{
    NEW_BODY(op_new_nothrow, rt_real.op_new_nothrow(n, t), n, 0, 1)
}
void *_ZnamRKSt9nothrow_t(size_t n, const void *t)
{
    NEW_BODY(op_new_array_nothrow, rt_real.op_new_array_nothrow(n, t), n, 0, 1)
}
void *_ZnwmSt11align_val_t(size_t n, size_t a)
{
    NEW_BODY(op_new_aligned, rt_real.op_new_aligned(n, a), n, a, 0)
}
void *_ZnamSt11align_val_t(size_t n, size_t a)
{
    NEW_BODY(op_new_array_aligned, rt_real.op_new_array_aligned(n, a), n, a, 0)
}
void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const void *t)
{
    NEW_BODY(op_new_aligned_nothrow, rt_real.op_new_aligned_nothrow(n, a, t), n, a, 1)
}
void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const void *t)
{
    NEW_BODY(op_new_array_aligned_nothrow, rt_real.op_new_array_aligned_nothrow(n, a, t), n, a, 1)
}

/* Every delete overload releases with free(); sizes, alignments and nothrow tags are
 * not needed by glibc's free. */
void _ZdlPv(void *p)
{
    free(p);
}
void _ZdaPv(void *p)
{
    free(p);
}
void _ZdlPvm(void *p, size_t n)
{
    (void)n;
    free(p);
}
void _ZdaPvm(void *p, size_t n)
{
    (void)n;
    free(p);
}
void _ZdlPvRKSt9nothrow_t(void *p, const void *t)
{
    (void)t;
    free(p);
}
void _ZdaPvRKSt9nothrow_t(void *p, const void *t)
{
    (void)t;
    free(p);
}
void _ZdlPvSt11align_val_t(void *p, size_t a)
{
    (void)a;
    free(p);
}
void _ZdaPvSt11align_val_t(void *p, size_t a)
{
    (void)a;
    free(p);
}
void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t a)
{
    (void)n;
    (void)a;
    free(p);
}
void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t a)
{
    (void)n;
    (void)a;
    free(p);
}
void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const void *t)
{
    (void)a;
    (void)t;
    free(p);
}
void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const void *t)
{
    (void)a;
    (void)t;
    free(p);
}
