/*
 * Internal interfaces shared by the objtier runtime's translation units.
 *
 * Invariants
 *   - rt_guard > 0 on a thread means "inside the runtime": every allocation or mapping
 *     made then is passed straight to the real function and never recorded. Runtime
 *     threads (flusher, scanner, perf reader) keep it > 0 for their whole life.
 *   - rt_state only moves forward within one process image:
 *     UNINIT -> INITIALIZING -> PASSIVE or ACTIVE -> CLOSED. A forked child that does not
 *     follow forks drops to PASSIVE. Records are written only in ACTIVE.
 *   - All times are CLOCK_MONOTONIC nanoseconds.
 */
#ifndef OBJTIER_RT_H
#define OBJTIER_RT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define RT_TLS         __thread __attribute__((tls_model("initial-exec")))
#define RT_HIDDEN      __attribute__((visibility("hidden")))
#define RT_LIKELY(x)   __builtin_expect(!!(x), 1)
#define RT_UNLIKELY(x) __builtin_expect(!!(x), 0)

enum rt_state_value {
    RT_UNINIT = 0,
    RT_INITIALIZING = 1,
    RT_PASSIVE = 2,
    RT_ACTIVE = 3,
    RT_CLOSED = 4,
};

extern RT_HIDDEN _Atomic int rt_state;
extern RT_HIDDEN RT_TLS int rt_guard;

static inline int rt_active(void)
{
    return atomic_load_explicit(&rt_state, memory_order_acquire) == RT_ACTIVE;
}

/* clock_gettime(clock) in ns; 0 if the clock cannot be read. */
static inline uint64_t rt_clock_ns(clockid_t clock)
{
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline uint64_t rt_now_ns(void)
{
    return rt_clock_ns(CLOCK_MONOTONIC);
}

/* gettid() of the calling thread, cached per thread (reset in a forked child). */
RT_HIDDEN uint32_t rt_tid(void);
RT_HIDDEN void rt_tid_reset(void);

/* Page size in bytes, set at start-up. */
extern RT_HIDDEN size_t rt_page_bytes;

/* Raw system calls that bypass every interposed wrapper (async-signal-safe). */
RT_HIDDEN void *rt_sys_mmap(size_t bytes); /* anonymous RW, NULL on failure */
RT_HIDDEN void rt_sys_munmap(void *p, size_t bytes);
RT_HIDDEN long rt_sys_write_all(int fd, const void *buf, size_t bytes); /* bytes or -errno */
RT_HIDDEN int rt_sys_mprotect(void *addr, size_t bytes, int prot);      /* 0 or -errno */
/* Reads up to cap - 1 bytes of a small file (sysfs, procfs, cgroup files) into buf,
 * NUL-terminated; bytes read, or -1 when it cannot be opened or read. */
RT_HIDDEN int rt_sys_read_small(const char *path, char *buf, size_t cap);

/* The CPU the runtime's background threads keep to, -1 for none (set at start-up when the
 * process runs under a memory limit: the CPU its first thread was on). Why: reclaim under the
 * limit flushes the TLBs of every CPU in the process's CPU mask that is busy, with an IPI
 * each; a background thread that once ran on another CPU puts that CPU in the mask for the
 * rest of the run (ptrchase, one thread, 19 MiB cgroup: 1.47 s with the runtime's thread free
 * to move, 1.18 s with it kept on the program's CPU, 1.14-1.17 s without the runtime). */
extern RT_HIDDEN int rt_home_cpu;

/* Called first thing in every background thread: keep to rt_home_cpu, if set. */
RT_HIDDEN void rt_thread_stay_home(void);

/* Stops one of the runtime's background threads, which waits on `cond` under `lock` and ends
 * once *stop is set: sets *stop under the lock, wakes the thread, joins it and clears
 * *started. Nothing when *started is 0 (never started, or stopped already). */
RT_HIDDEN void rt_thread_stop(pthread_t t, pthread_mutex_t *lock, pthread_cond_t *cond, int *stop,
                              int *started);

/* Warning on stderr prefixed "objtier: " when OBJTIER_LOG=1 (or always when force). */
RT_HIDDEN void rt_log(int force, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
