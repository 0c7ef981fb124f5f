/*
 * mmap/munmap/mremap. Only anonymous mappings made by the program are objects; the
 * runtime's own mappings use raw syscalls (rt_sys_mmap) and glibc's malloc maps memory
 * through internal calls that never come here. Each real call runs between
 * rt_fault_prot_begin and its end (fault_guard.h), which records the protection of every
 * mapping the program makes, moves or removes.
 */
#define _GNU_SOURCE
#include "fault_guard.h"
#include "maps.h"
#include "real.h"
#include "rt.h"
#include "track.h"
#include "sampler.h"

#include <errno.h>
#include <stdarg.h>
#include <sys/mman.h>

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    rt_real_init();
    if ((flags & MAP_FIXED) && rt_guard == 0 && rt_active())
        rt_on_unmap((uint64_t)(uintptr_t)addr, len, OT_FREE_MUNMAP, NULL);
    /* only MAP_FIXED can land on memory in use (and on an armed window) */
    int t = rt_fault_prot_begin((uint64_t)(uintptr_t)addr, (flags & MAP_FIXED) ? len : 0);
    void *p = rt_real.mmap(addr, len, prot, flags, fd, off);
    int saved = errno;
    rt_fault_prot_end(t, (uint64_t)(uintptr_t)p, len, (uint32_t)prot, p != MAP_FAILED);
    errno = saved;
    if (p != MAP_FAILED && (flags & MAP_ANONYMOUS) &&
        RT_UNLIKELY(len >= atomic_load_explicit(&rt_min_size, memory_order_relaxed)) &&
        rt_guard == 0)
        rt_on_alloc(p, len, OT_ALLOC_MMAP, (uint32_t)prot, 1);
    return p;
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
    __attribute__((alias("mmap")));

int munmap(void *addr, size_t len)
{
    rt_real_init();
    if (rt_guard == 0 && rt_active())
        rt_on_unmap((uint64_t)(uintptr_t)addr, len, OT_FREE_MUNMAP, NULL);
    int t = rt_fault_prot_begin((uint64_t)(uintptr_t)addr, len);
    int r = rt_real.munmap(addr, len);
    int saved = errno;
    rt_fault_prot_end(t, (uint64_t)(uintptr_t)addr, len, RT_PROT_FORGET, r == 0);
    errno = saved;
    return r;
}

void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
    rt_real_init();
    void *want_addr = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        want_addr = va_arg(ap, void *);
        va_end(ap);
    }
    int track = rt_guard == 0 && rt_active();
    if (track) {
        rt_fault_disarm((uint64_t)(uintptr_t)old, old_len);
        if (want_addr)
            rt_fault_disarm((uint64_t)(uintptr_t)want_addr, new_len);
    }
    /* the hull of both ranges: a window between them is disarmed too, which is harmless */
    uint64_t lo = (uint64_t)(uintptr_t)old, hi = lo + old_len;
    if (want_addr) {
        uint64_t w = (uint64_t)(uintptr_t)want_addr;
        lo = w < lo ? w : lo;
        hi = w + new_len > hi ? w + new_len : hi;
    }
    int t = rt_fault_prot_begin(lo, hi - lo);
    void *p = rt_real.mremap(old, old_len, new_len, flags, want_addr);
    int saved = errno;
    rt_fault_prot_moved(t, (uint64_t)(uintptr_t)old, old_len, (uint64_t)(uintptr_t)p, new_len,
                        (flags & MREMAP_DONTUNMAP) != 0, p != MAP_FAILED);
    errno = saved;
    if (p == MAP_FAILED || !track)
        return p;
    uint32_t prot = 0;
    if (want_addr)
        rt_on_unmap((uint64_t)(uintptr_t)want_addr, new_len, OT_FREE_MUNMAP, NULL);
    int pieces = rt_on_unmap((uint64_t)(uintptr_t)old, old_len, OT_FREE_MREMAP, &prot);
    if (pieces > 0)
        rt_on_alloc(p, new_len, OT_ALLOC_MREMAP, prot, 1);
    return p;
}
