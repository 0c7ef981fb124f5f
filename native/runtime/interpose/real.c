/* dlsym(RTLD_NEXT) resolution and the bootstrap arena; see real.h. */
#define _GNU_SOURCE
#include "real.h"
#include "rt.h"

#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

rt_real_fns rt_real;
__thread int rt_resolving __attribute__((tls_model("initial-exec")));
static _Atomic int resolved;

/* 256 KiB, bump allocated, never freed; each block is preceded by its size (8 bytes). */
#define ARENA_BYTES (256 * 1024)
static unsigned char arena[ARENA_BYTES] __attribute__((aligned(64)));
static _Atomic size_t arena_used;

void *rt_arena_alloc(size_t bytes, size_t align)
{
    if (align < 16)
        align = 16;
    for (;;) {
        size_t used = atomic_load(&arena_used);
        size_t at = (used + 8 + align - 1) & ~(align - 1);
        if (at + bytes > ARENA_BYTES)
            return NULL;
        if (atomic_compare_exchange_weak(&arena_used, &used, at + bytes)) {
            uint64_t n = bytes;
            memcpy(arena + at - 8, &n, 8);
            return arena + at; /* static storage: already zero */
        }
    }
}

int rt_in_arena(const void *p)
{
    return (const unsigned char *)p >= arena && (const unsigned char *)p < arena + ARENA_BYTES;
}

size_t rt_arena_size(const void *p)
{
    uint64_t n;
    memcpy(&n, (const unsigned char *)p - 8, 8);
    return (size_t)n;
}

#define GET(field, name) rt_real.field = (__typeof__(rt_real.field))dlsym(RTLD_NEXT, name)

void rt_real_init(void)
{
    if (RT_LIKELY(atomic_load_explicit(&resolved, memory_order_acquire)))
        return;
    rt_resolving++;
    GET(malloc, "malloc");
    GET(calloc, "calloc");
    GET(realloc, "realloc");
    GET(reallocarray, "reallocarray");
    GET(free, "free");
    GET(malloc_usable_size, "malloc_usable_size");
    GET(posix_memalign, "posix_memalign");
    GET(aligned_alloc, "aligned_alloc");
    GET(memalign, "memalign");
    GET(valloc, "valloc");
    GET(pvalloc, "pvalloc");
    GET(mmap, "mmap");
    GET(munmap, "munmap");
    GET(mremap, "mremap");
    GET(sigaction, "sigaction");
    GET(signal, "signal");
    GET(read, "read");
    GET(pread64, "pread64");
    GET(readv, "readv");
    GET(write, "write");
    GET(pwrite64, "pwrite64");
    GET(writev, "writev");
    GET(fread, "fread");
    GET(fwrite, "fwrite");
    GET(recv, "recv");
    GET(recvfrom, "recvfrom");
    GET(send, "send");
    GET(sendto, "sendto");
    GET(op_new, "_Znwm");
    GET(op_new_array, "_Znam");
    GET(op_new_nothrow, "_ZnwmRKSt9nothrow_t");
    GET(op_new_array_nothrow, "_ZnamRKSt9nothrow_t");
    GET(op_new_aligned, "_ZnwmSt11align_val_t");
    GET(op_new_array_aligned, "_ZnamSt11align_val_t");
    GET(op_new_aligned_nothrow, "_ZnwmSt11align_val_tRKSt9nothrow_t");
    GET(op_new_array_aligned_nothrow, "_ZnamSt11align_val_tRKSt9nothrow_t");
    rt_resolving--;
    atomic_store_explicit(&resolved, 1, memory_order_release);
}

void *rt_resolve_next(const char *name)
{
    rt_resolving++;
    void *p = dlsym(RTLD_NEXT, name);
    rt_resolving--;
    return p;
}
