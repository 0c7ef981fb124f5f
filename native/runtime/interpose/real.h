/*
 * The real (next) definitions of every interposed function, from dlsym(RTLD_NEXT).
 * While dlsym itself runs (it may allocate), allocations are served from a small
 * static bootstrap arena; pointers into it are recognized by rt_in_arena and never
 * passed to the real allocator.
 */
#ifndef OBJTIER_REAL_H
#define OBJTIER_REAL_H

#include <signal.h>
#include <stdio.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

typedef struct rt_real_fns {
    void *(*malloc)(size_t);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*reallocarray)(void *, size_t, size_t);
    void (*free)(void *);
    size_t (*malloc_usable_size)(void *); /* resolved with the rest: free() needs it */
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    void *(*mmap)(void *, size_t, int, int, int, off_t);
    int (*munmap)(void *, size_t);
    void *(*mremap)(void *, size_t, size_t, int, ...);
    int (*sigaction)(int, const struct sigaction *, struct sigaction *);
    sighandler_t (*signal)(int, sighandler_t);
    ssize_t (*read)(int, void *, size_t);
    ssize_t (*pread64)(int, void *, size_t, off_t);
    ssize_t (*readv)(int, const struct iovec *, int);
    ssize_t (*write)(int, const void *, size_t);
    ssize_t (*pwrite64)(int, const void *, size_t, off_t);
    ssize_t (*writev)(int, const struct iovec *, int);
    size_t (*fread)(void *, size_t, size_t, FILE *);
    size_t (*fwrite)(const void *, size_t, size_t, FILE *);
    ssize_t (*recv)(int, void *, size_t, int);
    ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
    ssize_t (*send)(int, const void *, size_t, int);
    ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
    /* C++ operators, when libstdc++ (or another C++ runtime) is loaded; else NULL */
    void *(*op_new)(size_t);
    void *(*op_new_array)(size_t);
    void *(*op_new_nothrow)(size_t, const void *);
    void *(*op_new_array_nothrow)(size_t, const void *);
    void *(*op_new_aligned)(size_t, size_t);
    void *(*op_new_array_aligned)(size_t, size_t);
    void *(*op_new_aligned_nothrow)(size_t, size_t, const void *);
    void *(*op_new_array_aligned_nothrow)(size_t, size_t, const void *);
} rt_real_fns;

extern rt_real_fns rt_real;

/* Resolves everything once (idempotent, thread-safe enough: every writer stores the
 * same values). Safe to call from inside malloc. */
void rt_real_init(void);

/* Bootstrap arena used while dlsym runs on this thread. */
extern __thread int rt_resolving __attribute__((tls_model("initial-exec")));
void *rt_arena_alloc(size_t bytes, size_t align);

/* dlsym(RTLD_NEXT, name) with allocations made meanwhile served by the bootstrap arena. */
void *rt_resolve_next(const char *name);

/* In a wrapper's body: declares fn_<name>, the next definition of `name` (type ret(*)args),
 * resolved on first use and cached (a race resolves twice to the same pointer). NULL when no
 * later library defines it. */
#define RT_REAL_LAZY(ret, name, args)                                                              \
    typedef ret(*name##_fn) args;                                                                  \
    static name##_fn real_##name;                                                                  \
    name##_fn fn_##name = __atomic_load_n(&real_##name, __ATOMIC_ACQUIRE);                         \
    if (!fn_##name) {                                                                              \
        fn_##name = (name##_fn)rt_resolve_next(#name);                                             \
        __atomic_store_n(&real_##name, fn_##name, __ATOMIC_RELEASE);                               \
    }
int rt_in_arena(const void *p);
size_t rt_arena_size(const void *p); /* bytes requested for an arena pointer */

#endif
