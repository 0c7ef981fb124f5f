/*
 * mprotect, pkey_mprotect, madvise and mlock made by the program. The fault sampler
 * must see every protection change (fault_guard.h): each call disarms an overlapping
 * scan window, runs with the arm lock held, and records the protection the pages have
 * afterwards, so the sampler arms only read-write pages and restores a window to what
 * the program set last. madvise and mlock change no protection; they run with the range
 * disarmed so the kernel never meets an armed page in them (MADV_POPULATE_*, mlock's
 * population). Runtime threads (rt_guard) pass straight through.
 */
#define _GNU_SOURCE
#include "fault_guard.h"
#include "prottab.h"
#include "real.h"
#include "rt.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

#define REAL(ret, name, args) RT_REAL_LAZY(ret, name, args)

int mprotect(void *addr, size_t len, int prot)
{
    REAL(int, mprotect, (void *, size_t, int))
    int t = rt_fault_prot_begin((uint64_t)(uintptr_t)addr, len);
    int r = fn_mprotect(addr, len, prot);
    int saved = errno;
    rt_fault_prot_end(t, (uint64_t)(uintptr_t)addr, len, (uint32_t)prot, r == 0);
    errno = saved;
    return r;
}

int pkey_mprotect(void *addr, size_t len, int prot, int pkey)
{
    REAL(int, pkey_mprotect, (void *, size_t, int, int))
    if (!fn_pkey_mprotect) {
        errno = ENOSYS;
        return -1;
    }
    if (pkey != -1 && pkey != 0)
        rt_fault_pkeys_used();
    int t = rt_fault_prot_begin((uint64_t)(uintptr_t)addr, len);
    int r = fn_pkey_mprotect(addr, len, prot, pkey);
    int saved = errno;
    uint32_t word = (uint32_t)prot | (pkey != -1 && pkey != 0 ? RT_PROT_PKEY : 0);
    rt_fault_prot_end(t, (uint64_t)(uintptr_t)addr, len, word, r == 0);
    errno = saved;
    return r;
}

/* Runs a call that changes no protection with [addr, addr+len) disarmed. */
#define DISARMED(call)                                                                             \
    int t = rt_fault_prot_begin((uint64_t)(uintptr_t)addr, len);                                   \
    int r = call;                                                                                  \
    int saved = errno;                                                                             \
    rt_fault_prot_end(t, 0, 0, 0, 0);                                                              \
    errno = saved;                                                                                 \
    return r;

int madvise(void *addr, size_t len, int advice)
{
    REAL(int, madvise, (void *, size_t, int))
    DISARMED(fn_madvise(addr, len, advice))
}

int mlock(const void *addr, size_t len)
{
    REAL(int, mlock, (const void *, size_t))
    DISARMED(fn_mlock(addr, len))
}

int mlock2(const void *addr, size_t len, unsigned int flags)
{
    REAL(int, mlock2, (const void *, size_t, unsigned int))
    if (!fn_mlock2) {
        errno = ENOSYS;
        return -1;
    }
    DISARMED(fn_mlock2(addr, len, flags))
}
