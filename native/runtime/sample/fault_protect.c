/*
 * What the program does to its protections and signal masks, as the fault sampler must
 * know it to stay invisible; see fault_guard.h (the interposers' side) and
 * fault_internal.h (the scanner's side).
 *
 * Invariants
 *   - prots (prottab.h) is read and written only under the arm lock. It holds the
 *     protection of every range the program mapped or protected through an interposed
 *     call since recording started; other pages have their object's protection.
 *   - A program change to [a, b) runs as: lock, disarm an overlapping window, the real
 *     call, record the result, unlock. So the scanner never arms a page between the
 *     change and its record, and a window is never restored over a changed page.
 *   - SIGSEGV: a thread about to block it raises pending_blockers, disarms, blocks, then
 *     lowers it; the scanner arms only with pending_blockers == 0 and no thread showing
 *     SIGSEGV in its SigBlk (read under the arm lock, so a blocker either is pending or
 *     shows it). mask_events counts interposed blocking calls and thread creations, each
 *     twice (before and after the real call): a window may be armed without a new SigBlk
 *     read only when the last read found no blocker and no event happened since it began,
 *     so every blocker made through an interposed call is either in that read or forces
 *     a new one. Threads that block SIGSEGV by other ways (siglongjmp, setcontext, raw
 *     system calls) are seen at the next read.
 *   - stdio gate: a call raises gates, then waits while `arming` is set; the scanner
 *     sets `arming`, then reads gates (both sequentially consistent): either the scanner
 *     sees the call and does not arm, or the call waits until the window is armed and
 *     its user-mode read of the buffer restores the pages it will pass to the kernel.
 */
#define _GNU_SOURCE
#include "fault_guard.h"
#include "fault_internal.h"
#include "prottab.h"
#include "rt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define RW (PROT_READ | PROT_WRITE)

static _Atomic int tracking;
static rt_prottab prots;       /* under the arm lock */
static int prots_broken;       /* a change could not be recorded: arm nothing more */
static _Atomic int pkeys_used; /* protection keys in use: arm nothing more */
static _Atomic int pending_blockers;
static _Atomic uint64_t mask_events;
static _Atomic int gates;
static _Atomic int arming;
static const char *refusal; /* under the arm lock */

static inline uint64_t pg_down(uint64_t a)
{
    return a & ~(uint64_t)(rt_page_bytes - 1);
}
static inline uint64_t pg_up(uint64_t a)
{
    uint64_t b = a + rt_page_bytes - 1;
    return b < a ? pg_down(UINT64_MAX) : pg_down(b);
}
static inline uint64_t end_of(uint64_t addr, uint64_t len)
{
    return addr + len < addr ? UINT64_MAX : addr + len;
}

/* The arm lock; see fault_internal.h. */
static pthread_mutex_t arm_lock = PTHREAD_MUTEX_INITIALIZER;
/* 1 while this thread takes or holds arm_lock: raised before taking it, so a signal handler
 * that interrupts the thread anywhere in between never waits for the lock itself. */
static RT_TLS int lock_depth;
static void (*disarm_overlap_locked)(uint64_t lo, uint64_t hi);

void rt_fault_lock(void)
{
    lock_depth++;
    pthread_mutex_lock(&arm_lock);
}

void rt_fault_unlock(void)
{
    pthread_mutex_unlock(&arm_lock);
    lock_depth--;
}

int rt_fault_lock_held_here(void)
{
    return lock_depth != 0;
}

void rt_fault_lock_fork_prepare(void)
{
    pthread_mutex_lock(&arm_lock);
}

void rt_fault_lock_fork_parent(void)
{
    pthread_mutex_unlock(&arm_lock);
}

void rt_fault_protect_init(void (*disarm)(uint64_t lo, uint64_t hi))
{
    disarm_overlap_locked = disarm;
    atomic_store(&tracking, 1);
}
int rt_fault_protect_tracking(void)
{
    return atomic_load_explicit(&tracking, memory_order_acquire);
}

/* ---- protections ---------------------------------------------------------------- */

int rt_fault_prot_begin(uint64_t addr, uint64_t len)
{
    if (!rt_fault_protect_tracking() || rt_guard || rt_fault_lock_held_here())
        return 0;
    rt_fault_lock();
    disarm_overlap_locked(pg_down(addr), pg_up(end_of(addr, len)));
    return 1;
}

static void record_locked(int r)
{
    if (r != 0 && !prots_broken) {
        prots_broken = 1;
        rt_log(1, "fault sampler: out of memory for the protection record; arming stops");
    }
}

void rt_fault_prot_end(int token, uint64_t addr, uint64_t len, uint32_t prot, int ok)
{
    if (!token)
        return;
    if (ok && len) {
        uint64_t a = pg_down(addr), b = pg_up(end_of(addr, len));
        record_locked(prot == RT_PROT_FORGET ? rt_prottab_clear(&prots, a, b - a)
                                             : rt_prottab_set(&prots, a, b - a, prot));
    }
    rt_fault_unlock();
}

void rt_fault_prot_moved(int token, uint64_t old, uint64_t old_len, uint64_t new_addr,
                         uint64_t new_len, int keep_old, int ok)
{
    if (!token)
        return;
    if (ok) {
        uint64_t a = pg_down(old), b = pg_up(end_of(old, old_len));
        /* mremap works within one mapping: one protection over the old range */
        uint32_t p = rt_prottab_at(&prots, a, RT_PROT_FORGET);
        if (!keep_old && b > a)
            record_locked(rt_prottab_clear(&prots, a, b - a));
        uint64_t c = pg_down(new_addr), d = pg_up(end_of(new_addr, new_len));
        if (d > c)
            record_locked(p == RT_PROT_FORGET ? rt_prottab_clear(&prots, c, d - c)
                                              : rt_prottab_set(&prots, c, d - c, p));
    }
    rt_fault_unlock();
}

void rt_fault_pkeys_used(void)
{
    if (rt_fault_protect_tracking() && !atomic_exchange(&pkeys_used, 1))
        rt_log(0, "fault sampler: the program uses protection keys; arming stops");
}

void rt_fault_never_arm(uint64_t addr, uint64_t len)
{
    uint64_t a = pg_up(addr), b = pg_down(end_of(addr, len));
    int t = b > a ? rt_fault_prot_begin(a, b - a) : 0;
    if (!t)
        return;
    record_locked(rt_prottab_set(&prots, a, b - a, RT_PROT_NOARM | RW));
    rt_fault_unlock();
}

uint64_t rt_fault_rw_run_locked(uint64_t start, uint64_t end, uint32_t dflt, int *armable)
{
    uint32_t p;
    uint64_t e = rt_prottab_run(&prots, start, end, dflt, &p);
    *armable = p == RW;
    return e;
}

/* ---- SIGSEGV masks ---------------------------------------------------------------- */

int rt_fault_segv_block_begin(void)
{
    if (!rt_fault_protect_tracking())
        return 0;
    atomic_fetch_add(&pending_blockers, 1);
    atomic_fetch_add(&mask_events, 1);
    if (!rt_fault_lock_held_here()) {
        rt_fault_lock();
        disarm_overlap_locked(0, UINT64_MAX);
        rt_fault_unlock();
    }
    return 1;
}

void rt_fault_segv_block_done(int token)
{
    if (token) {
        atomic_fetch_add(&mask_events, 1);
        atomic_fetch_sub(&pending_blockers, 1);
    }
}

struct linux_dirent64_ {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

/* 1 if the SigBlk line of /proc/self/task/<name>/status has SIGSEGV; 0 otherwise (also
 * when the thread is gone). */
static int task_blocks_segv(int dirfd, const char *name)
{
    char path[64], buf[4096];
    size_t k = strlen(name);
    if (k > 32)
        return 0;
    memcpy(path, name, k);
    memcpy(path + k, "/status", 8);
    int fd = (int)syscall(SYS_openat, dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return 0;
    long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
    syscall(SYS_close, fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    const char *at = strstr(buf, "\nSigBlk:");
    if (!at)
        return 0;
    at += 8;
    while (*at == ' ' || *at == '\t')
        at++;
    uint64_t mask = 0;
    for (; *at; at++) {
        int d = *at >= '0' && *at <= '9'   ? *at - '0'
                : *at >= 'a' && *at <= 'f' ? *at - 'a' + 10
                                           : -1;
        if (d < 0)
            break;
        mask = mask << 4 | (uint64_t)d;
    }
    return (mask >> (SIGSEGV - 1)) & 1;
}

/* 1 if a thread other than the caller has SIGSEGV blocked now. */
static int a_thread_blocks_segv(void)
{
    int dirfd =
        (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
        return 1; /* cannot tell: assume the worst */
    char buf[4096], self[24];
    uint32_t me = rt_tid();
    int k = 0;
    char rev[24];
    do
        rev[k++] = (char)('0' + me % 10);
    while ((me /= 10) != 0);
    for (int i = 0; i < k; i++)
        self[i] = rev[k - 1 - i];
    self[k] = 0;
    int found = 0;
    long n;
    while (!found && (n = syscall(SYS_getdents64, dirfd, buf, sizeof buf)) > 0)
        for (long off = 0; off < n && !found;) {
            struct linux_dirent64_ *d = (struct linux_dirent64_ *)(buf + off);
            off += d->d_reclen;
            if (d->d_name[0] >= '0' && d->d_name[0] <= '9' && strcmp(d->d_name, self) != 0)
                found = task_blocks_segv(dirfd, d->d_name);
        }
    syscall(SYS_close, dirfd);
    return found;
}

/* Reading every thread's status costs time in proportion to the threads (10-80 µs each):
 * after a read that took d ns of the scanner's CPU time (not wall time, which a loaded
 * machine stretches), the next read waits until SCAN_SHARE * d ns have passed, so the
 * reads take at most 1/SCAN_SHARE of a core whatever the thread count. In between, a
 * window is armed only when the last read was clean and mask_events has not moved since
 * it began (no interposed blocker, no new thread). */
#define SCAN_SHARE 50
static uint64_t next_scan_ns; /* under the arm lock */

static uint64_t scanned_events; /* mask_events when the last SigBlk read began */
static int scan_blocked = 1;    /* the last read found a blocker (or there was none yet) */

void rt_fault_thread_event(void)
{
    if (rt_fault_protect_tracking())
        atomic_fetch_add(&mask_events, 1);
}

int rt_fault_arming_allowed_locked(void)
{
    uint64_t t0 = rt_now_ns();
    int blocked = 0;
    if (t0 >= next_scan_ns) {
        /* SigBlk first, while stdio calls still run: a blocker through an interposed call
         * needs the arm lock to finish, so it shows in pending_blockers below if not here */
        uint64_t events = atomic_load(&mask_events);
        uint64_t cpu0 = rt_clock_ns(CLOCK_THREAD_CPUTIME_ID);
        blocked = a_thread_blocks_segv();
        next_scan_ns = t0 + (rt_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0) * SCAN_SHARE;
        scanned_events = events;
        scan_blocked = blocked;
    } else if (scan_blocked || atomic_load(&mask_events) != scanned_events) {
        return 0; /* something changed since the last read: wait for the next one */
    }
    atomic_store(&arming, 1);
    if (prots_broken || atomic_load(&pkeys_used))
        refusal = "its protections could not be followed";
    else if (blocked || atomic_load(&pending_blockers) != 0) {
        scan_blocked = 1; /* read again before the next window */
        refusal = "a thread blocked SIGSEGV (a PROT_NONE fault there would kill the process)";
    } else if (atomic_load(&gates) != 0)
        return 0; /* transient: a stdio call is in flight */
    else
        return 1;
    return 0;
}

void rt_fault_arming_end(void)
{
    atomic_store(&arming, 0);
}

const char *rt_fault_refusal(void)
{
    return refusal;
}

/* ---- stdio gate ------------------------------------------------------------------- */

int rt_fault_gate_enter(void)
{
    if (!rt_fault_protect_tracking())
        return 0;
    atomic_fetch_add(&gates, 1);
    while (atomic_load(&arming))
        sched_yield();
    return 1;
}

void rt_fault_gate_leave(int token)
{
    if (token)
        atomic_fetch_sub(&gates, 1);
}

void rt_fault_protect_fork_child(void)
{
    pthread_mutex_init(&arm_lock, NULL);
    lock_depth = 0;
    /* the other threads' calls in flight did not come along */
    atomic_store(&pending_blockers, 0);
    atomic_store(&gates, 0);
    atomic_store(&arming, 0);
    next_scan_ns = 0;
    scan_blocked = 1;
}
