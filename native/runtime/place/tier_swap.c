/*
 * The swap tier (OBJTIER_TIER=swap); see tier.h. Under a memory cgroup limit the fast part of
 * a planned object is mlocked (it cannot be reclaimed) and the planned-slow part is advised
 * MADV_COLD (and MADV_PAGEOUT with OBJTIER_PAGEOUT) every OBJTIER_ADVISE_MS, and, while the
 * cgroup is at its limit, every OBJTIER_PRESSURE_MS (the pressure guard). Readahead through
 * the swap cache (swapahead.c) and large folios for the slow runs are options of this tier.
 * Geometry of fast parts, splits and "pages" entries: placement.c.
 *
 * Invariants (under rt_planned_lock): [lo, locked_end) of each object is mlocked by us, and
 * so are the first locked_n ranges of plan entry locked_entry (RT_PLAN_NONE: none), clipped;
 * locked_total is the sum of all those lengths [bytes]; locked_total <= lock_limit.
 */
#define _GNU_SOURCE
#include "tier.h"
#include "memcg.h"
#include "rt.h"
#include "swapahead.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define RECORD_EVERY_NS 1000000000ull /* pressure passes leave records at most once a second */
#define MIN_ROOM        (8ull << 20)  /* evictable room the guard keeps in the cgroup, at least */
#define ROOM_PER_THREAD (2ull << 20)  /* and per thread of the program (a THP charge each) */

static int pageout;
static uint32_t advise_ms, pressure_ms, inactive_pct;
static uint64_t readahead_bytes;         /* OBJTIER_READAHEAD_KB, bytes; 0 = none */
static int large_folios;                 /* OBJTIER_LARGE_FOLIOS: honour `folio` records */
static rt_memcg memcg;                   /* the cgroup whose limit makes the fast tier */
static uint64_t lock_limit = UINT64_MAX; /* bytes we may mlock in all */
static uint64_t locked_total;
static int warned_limit;
static uint64_t pressure_passes; /* advice passes made because the cgroup was at its limit */
static uint64_t pressure_bytes;  /* bytes those passes advised */
static uint64_t relieved_bytes;  /* bytes of our locks given up to keep reclaim room */

/* ---- settings -------------------------------------------------------------------- */

static int swap_init(const rt_config *cfg)
{
    pageout = cfg->pageout;
    advise_ms = cfg->advise_ms;
    pressure_ms = cfg->pressure_ms;
    readahead_bytes = (uint64_t)cfg->readahead_kb << 10;
    large_folios = cfg->large_folios;
    inactive_pct = cfg->inactive_pct;
    memcg = *rt_memcg_self();
    lock_limit = rt_memcg_lock_room(memcg.limit, cfg->mlock_limit);
    return 0;
}

/* ---- locking the fast part --------------------------------------------------------- */

/* The planned-slow run of o that starts at or after address `at`: [*start, *end), page
 * aligned; 0 when none is left. For a split object [max(at, split), hi); for a "pages" object
 * the first gap between its ranges (locked or not) at or after `at`. */
static int slow_run(const rt_pobj *o, uint64_t at, uint64_t *start, uint64_t *end)
{
    if (!o->planned || at >= o->hi)
        return 0;
    if (at < o->lo)
        at = o->lo;
    if (o->pages == RT_PLAN_NONE) {
        *start = at > o->split ? at : o->split;
        *end = o->hi;
        return *start < o->hi;
    }
    const rt_plan_entry *e = &rt_plan_in_force.entries[o->pages];
    const rt_plan_range *r = &rt_plan_in_force.ranges[e->range0];
    uint64_t off = at - o->lo, lo = 0, hi = e->n_ranges;
    while (lo < hi) { /* first range ending after off */
        uint64_t mid = lo + (hi - lo) / 2;
        if (r[mid].off + r[mid].len <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (uint64_t i = lo; i < e->n_ranges && off < o->hi - o->lo; i++) {
        if (r[i].off > off) {
            *start = o->lo + off;
            *end = r[i].off < o->hi - o->lo ? o->lo + r[i].off : o->hi;
            return 1;
        }
        off = r[i].off + r[i].len; /* inside range i: skip it */
    }
    if (off >= o->hi - o->lo)
        return 0;
    *start = o->lo + off;
    *end = o->hi;
    return 1;
}

/* The locks of o no longer match the plan in force (they must go before new ones come). */
static int swap_stale(const rt_pobj *o)
{
    uint64_t want = o->planned ? o->split : o->lo;
    return o->locked_end != want ||
           (o->locked_entry != RT_PLAN_NONE && o->locked_entry != o->pages);
}

static void swap_unlock(rt_pobj *o)
{
    for (uint64_t i = 0; o->locked_entry != RT_PLAN_NONE && i < o->locked_n; i++) {
        uint64_t a, b;
        if (!rt_planned_pages_range(o, o->locked_entry, i, &a, &b))
            continue;
        long r = syscall(SYS_munlock, (void *)(uintptr_t)a, b - a);
        rt_planned_record(o, a, b, OT_PLACE_MUNLOCK, rt_place_result(r), 0);
        locked_total -= b - a;
    }
    o->locked_entry = RT_PLAN_NONE;
    o->locked_n = 0;
    if (o->locked_end <= o->lo)
        return;
    long r = syscall(SYS_munlock, (void *)(uintptr_t)o->lo, o->locked_end - o->lo);
    rt_planned_record(o, o->lo, o->locked_end, OT_PLACE_MUNLOCK, rt_place_result(r), 0);
    locked_total -= o->locked_end - o->lo;
    o->locked_end = o->lo;
}

static void warn_limit(void)
{
    if (!warned_limit) {
        warned_limit = 1;
        rt_log(1,
               "the plan asks to mlock more than the limit of %llu MiB "
               "(OBJTIER_MLOCK_LIMIT, memory cgroup limit minus margin); locking less",
               (unsigned long long)(lock_limit >> 20));
    }
}

/* Set while a phase change locks the new phase's fast set (under rt_planned_lock). */
static int locking_at_phase_change;

/* mlock [a, a + len). At a phase change with MLOCK_ONFAULT: the pages of the new fast set
 * that are swapped out are locked when the program next touches them instead of all swapped
 * in by the change itself — a burst that made Kronecker BFS with one plan per phase 14 %
 * slower than with one plan for the run (docs/benchmarks.md). Pages already present are
 * locked at once either way. At allocation, plain mlock (the pages are populated: the measured
 * behaviour of every whole-run plan). Falls back to mlock where mlock2 is missing (< 4.4). */
static long lock_range(uint64_t a, uint64_t len)
{
#ifdef SYS_mlock2
    if (locking_at_phase_change) {
        long r = syscall(SYS_mlock2, (void *)(uintptr_t)a, len, MLOCK_ONFAULT);
        if (r == 0 || (errno != ENOSYS && errno != EINVAL))
            return r;
    }
#endif
    return syscall(SYS_mlock, (void *)(uintptr_t)a, len);
}

/* mlock the ranges of o's "pages" entry not yet locked, in order, while they fit whole. */
static void swap_lock_pages(rt_pobj *o)
{
    if (o->locked_entry != RT_PLAN_NONE && o->locked_entry != o->pages)
        return; /* the caller unlocks stale ranges first */
    o->locked_entry = o->pages;
    const rt_plan_entry *e = &rt_plan_in_force.entries[o->pages];
    for (uint64_t i = o->locked_n; i < e->n_ranges; i++) {
        uint64_t a, b;
        if (!rt_planned_pages_range(o, o->pages, i, &a, &b)) {
            o->locked_n = i + 1;
            continue;
        }
        if (b - a > (lock_limit > locked_total ? lock_limit - locked_total : 0)) {
            warn_limit();
            return;
        }
        long r = lock_range(a, b - a);
        int res = rt_place_result(r);
        rt_planned_record(o, a, b, OT_PLACE_MLOCK, res, 0);
        if (res != 0)
            return;
        locked_total += b - a;
        o->locked_n = i + 1;
    }
}

static void swap_lock(rt_pobj *o)
{
    if (o->planned && o->pages != RT_PLAN_NONE) {
        swap_lock_pages(o);
        return;
    }
    uint64_t want = o->planned ? o->split : o->lo;
    if (want <= o->lo || o->locked_end == want)
        return;
    uint64_t room = lock_limit > locked_total ? lock_limit - locked_total : 0;
    if (want - o->lo > room) {
        warn_limit();
        want = o->lo + (room & ~(uint64_t)(rt_page_bytes - 1));
        if (want <= o->lo)
            return;
    }
    long r = lock_range(o->lo, want - o->lo);
    int res = rt_place_result(r);
    rt_planned_record(o, o->lo, want, OT_PLACE_MLOCK, res, 0);
    if (res == 0) {
        o->locked_end = want;
        locked_total += want - o->lo;
    }
}

/* MADV_HUGEPAGE on every planned-slow run of o, at allocation: after the fast part is locked
 * (populated with base pages) and before the program touches the rest, so the slow runs are
 * faulted in, swapped out and swapped back in as folios of the large sizes the machine
 * enables for madvised memory (transparent_hugepage/hugepages-<size>kB/enabled). Pages that
 * only a later phase's plan leaves slow keep base pages. One HUGEPAGE record per run. */
static void advise_large_folios(rt_pobj *o)
{
    uint64_t s, e;
    for (uint64_t at = o->lo; slow_run(o, at, &s, &e); at = e)
        rt_planned_record(
            o, s, e, OT_PLACE_HUGEPAGE,
            rt_place_result(syscall(SYS_madvise, (void *)(uintptr_t)s, e - s, MADV_HUGEPAGE)), 0);
}

/* ---- advice on the planned-slow runs ------------------------------------------------ */

#define ADVISE_VEC 256 /* slow runs per process_madvise call */

/* A pidfd of this process for process_madvise (-1: not opened yet or unusable), and the pid
 * it was opened for (a forked child opens its own). Background thread only. */
static int self_pidfd = -1, vec_unusable;
static pid_t self_pidfd_pid;

static int pidfd_self(void)
{
    pid_t pid = getpid();
    if (self_pidfd >= 0 && self_pidfd_pid == pid)
        return self_pidfd;
    /* A parent's pidfd inherited across fork is left open, not closed: the program may have
     * closed it and reused the number. pidfd_open sets O_CLOEXEC, so exec drops it. */
    self_pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    self_pidfd_pid = pid;
    if (self_pidfd < 0)
        vec_unusable = 1;
    return self_pidfd;
}

/* `advice` on the next planned-slow runs of o from address *at on: up to ADVISE_VEC runs and
 * about `bytes` (whole pages; UINT64_MAX: no bound) in one process_madvise call. A "pages"
 * object's slow part is the many gaps between its locked ranges, and one madvise per gap
 * costs a system call each (BFS at scale 20 made 443k calls in 24 s). Falls back to one
 * madvise per run where process_madvise is missing (Linux < 5.10) or refused. Leaves one
 * record per run when keep_records, and for every run that failed; *at becomes the end of
 * the last run taken. Returns the bytes taken (0: no slow run left). Called with
 * rt_planned_lock held. */
static uint64_t advise_runs(const rt_pobj *o, uint64_t *at, uint64_t bytes, int advice,
                            uint16_t action, int keep_records)
{
    struct iovec iov[ADVISE_VEC];
    uint64_t done = 0, pg = rt_page_bytes, s, e;
    size_t n = 0;
    while (n < ADVISE_VEC && done < bytes && slow_run(o, *at, &s, &e)) {
        uint64_t want = bytes == UINT64_MAX ? e - s : (bytes - done + pg - 1) & ~(pg - 1);
        if (e - s > want)
            e = s + want;
        iov[n].iov_base = (void *)(uintptr_t)s;
        iov[n].iov_len = e - s;
        done += e - s;
        *at = e;
        n++;
    }
    if (n > 0) {
        int fd = vec_unusable ? -1 : pidfd_self();
        long r = fd < 0 ? -1 : syscall(SYS_process_madvise, fd, iov, n, advice, 0u);
        int one_by_one = fd < 0;
        if (fd >= 0 && r < 0 && (errno == ENOSYS || errno == EPERM || errno == EINVAL))
            vec_unusable = one_by_one = 1;
        else if (fd >= 0 && r < 0 && errno == EBADF) /* the program closed our pidfd */
            self_pidfd = -1, one_by_one = 1;
        if (one_by_one) {
            for (size_t i = 0; i < n; i++) {
                int ri =
                    rt_place_result(syscall(SYS_madvise, iov[i].iov_base, iov[i].iov_len, advice));
                uintptr_t b = (uintptr_t)iov[i].iov_base;
                if (keep_records || ri != 0)
                    rt_planned_record(o, b, b + iov[i].iov_len, action, ri, 0);
            }
        } else {
            /* the call advises its runs in order and stops at the first it cannot: the runs
             * within the r bytes it returns were advised, the rest failed (errno when r < 0,
             * else unknown: -EAGAIN) */
            int failed = r < 0 ? -errno : -EAGAIN;
            uint64_t advised = r < 0 ? 0 : (uint64_t)r, upto = 0;
            for (size_t i = 0; i < n; i++) {
                uintptr_t b = (uintptr_t)iov[i].iov_base;
                upto += iov[i].iov_len;
                int ri = upto <= advised ? 0 : failed;
                if (keep_records || ri != 0)
                    rt_planned_record(o, b, b + iov[i].iov_len, action, ri, 0);
            }
        }
    }
    if (rt_planned_pending() > RT_PLANNED_BATCH / 2)
        rt_planned_flush();
    return done;
}

/* `advice` on the whole planned-slow part of o, one record a run. Called with
 * rt_planned_lock held. */
static void advise_all(const rt_pobj *o, int advice, uint16_t action)
{
    for (uint64_t at = 0; advise_runs(o, &at, UINT64_MAX, advice, action, 1);)
        ;
}

/* MADV_COLD (and MADV_PAGEOUT with OBJTIER_PAGEOUT) on the planned-slow part of every
 * planned object. The lock is held per object only, so a free() waits for at most one
 * object's advice. */
static void advise_pass(void)
{
    for (uint64_t i = 0;; i++) {
        pthread_mutex_lock(&rt_planned_lock);
        if (i >= rt_planned_slots()) {
            pthread_mutex_unlock(&rt_planned_lock);
            break;
        }
        rt_pobj *o = rt_planned_slot(i);
        if (o->addr > RT_POBJ_DELETED) {
            advise_all(o, MADV_COLD, OT_PLACE_COLD);
            if (pageout)
                advise_all(o, MADV_PAGEOUT, OT_PLACE_PAGEOUT);
        }
        if (rt_planned_pending() > RT_PLANNED_BATCH / 2 || i + 1 >= rt_planned_slots())
            rt_planned_flush();
        pthread_mutex_unlock(&rt_planned_lock);
    }
}

/* Where the next pressure advice starts: a slot of objs and an address in that object (its
 * first whole page when outside it). Background thread only. */
static uint64_t cold_slot, cold_at;

/* MADV_COLD on about `bytes` of planned-slow ranges, continuing where the previous call
 * stopped and wrapping around, so that successive calls age every slow page in turn (a clock
 * hand over the slow ranges). Returns the bytes advised. */
static uint64_t advise_some(uint64_t bytes, int keep_records)
{
    uint64_t done = 0;
    for (uint64_t visited = 0; done < bytes && visited <= rt_planned_slots();) {
        pthread_mutex_lock(&rt_planned_lock);
        if (cold_slot >= rt_planned_slots())
            cold_slot = cold_at = 0;
        rt_pobj *o = rt_planned_slot(cold_slot);
        uint64_t taken =
            o->addr > RT_POBJ_DELETED
                ? advise_runs(o, &cold_at, bytes - done, MADV_COLD, OT_PLACE_COLD, keep_records)
                : 0;
        if (taken) {
            done += taken;
            if (rt_planned_pending())
                rt_planned_flush();
            pthread_mutex_unlock(&rt_planned_lock);
            continue;
        }
        cold_slot++;
        cold_at = 0;
        visited++;
        if (rt_planned_pending() > RT_PLANNED_BATCH / 2)
            rt_planned_flush();
        pthread_mutex_unlock(&rt_planned_lock);
    }
    pthread_mutex_lock(&rt_planned_lock);
    rt_planned_flush();
    pthread_mutex_unlock(&rt_planned_lock);
    return done;
}

/* ---- the tier's ops ---------------------------------------------------------------- */

static void swap_place(rt_pobj *o)
{
    swap_lock(o);
    if (large_folios && rt_plan_large_folio(&rt_plan_in_force, o->key, o->occurrence, o->size))
        advise_large_folios(o);
}

/* Phase change, first pass: unlock what is no longer fast first, so that the new fast set
 * has the room; and advise the unlocked pages cold, so that they are the first that reclaim
 * takes when the faults of the mlock that follows charge the cgroup. Without the advice a
 * phase change that swapped one locked 26 MiB array for another under a 40 MiB cgroup v1
 * limit ended in the cgroup's OOM killer in 2 of 2 runs (kernel 6.18; with it, 0 of 6) —
 * presumably reclaim found the just-unlocked pages still active and too few inactive ones
 * (see the pressure guard). */
static void swap_phase_leave(rt_pobj *o)
{
    if (!swap_stale(o))
        return;
    swap_unlock(o);
    advise_all(o, MADV_COLD, OT_PLACE_COLD);
}

/* Phase change, second pass: lock the new fast set (on fault, see lock_range). */
static void swap_phase_enter(rt_pobj *o)
{
    locking_at_phase_change = 1;
    swap_lock(o);
    locking_at_phase_change = 0;
}

static const rt_ahead_source ahead_source = {.generation = &rt_planned_generation,
                                             .slow_objects = rt_planned_slow_extents};

static int swap_start(int planned)
{
    /* under a memory limit only: without one nothing is swapped, and sampling every fault
     * would cost for nothing */
    if (planned && readahead_bytes && memcg.limit != UINT64_MAX)
        rt_ahead_start(readahead_bytes, &ahead_source);
    return planned && (advise_ms > 0 || (pressure_ms > 0 && memcg.limit != UINT64_MAX));
}

/* The background thread's state (that thread only). */
static int advise, watch;
static uint64_t next_advise, next_watch, last_record;

static void swap_thread_begin(uint64_t now, int planned)
{
    advise = planned && advise_ms > 0;
    watch = planned && pressure_ms > 0 && memcg.limit != UINT64_MAX;
    last_record = 0;
    next_advise = now + (uint64_t)advise_ms * 1000000ull;
    next_watch = now + (uint64_t)pressure_ms * 1000000ull;
}

static uint64_t swap_next_wake(void)
{
    uint64_t wake = UINT64_MAX;
    if (advise)
        wake = next_advise;
    if (watch && next_watch < wake)
        wake = next_watch;
    return wake;
}

/* Threads of this process (/proc/self/stat, field 20), at least 1. */
static uint64_t thread_count(void)
{
    char buf[1024];
    if (rt_sys_read_small("/proc/self/stat", buf, sizeof buf) <= 0)
        return 1;
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces and ')' */
    for (int field = 2; p && field < 20; field++)
        p = strchr(p + 1, ' ');
    uint64_t n = 0;
    for (p = p ? p + 1 : ""; *p >= '0' && *p <= '9'; p++)
        n = n * 10 + (uint64_t)(*p - '0');
    return n ? n : 1;
}

/* Bytes of our locks to give up so that the cgroup keeps `need` bytes it can reclaim from:
 * need = max(MIN_ROOM, ROOM_PER_THREAD x this process's threads), at most a quarter of the
 * limit; the room is the limit less the cgroup's mlocked memory (memory.stat unevictable).
 *
 * Why: every thread that faults while the cgroup is full reclaims for its own charge (a whole
 * transparent huge page when THP is on), and concurrent reclaimers take each other's freed
 * pages; when the evictable part of the cgroup is about the size of what its threads charge
 * at once, one of them can fail its retries and the cgroup's OOM killer ends the program
 * although swap has room. The lock limit's margin is chosen before the run and does not know
 * how many threads will burst. */
static uint64_t room_shortfall(void)
{
    uint64_t unevictable = rt_memcg_stat(&memcg, "unevictable");
    if (unevictable == UINT64_MAX || memcg.limit == UINT64_MAX)
        return 0;
    uint64_t need = thread_count() * ROOM_PER_THREAD;
    need = need > MIN_ROOM ? need : MIN_ROOM;
    need = need < memcg.limit / 4 ? need : memcg.limit / 4;
    uint64_t room = memcg.limit > unevictable ? memcg.limit - unevictable : 0;
    return room < need ? need - room : 0;
}

/* Unlocks about `bytes` (page multiples) from the ends of the locked prefixes [lo,
 * locked_end) of our objects, advises them cold, and lowers the lock limit to what stays
 * locked so that nothing locks them again: from here on the run leaves that room. Returns
 * the bytes unlocked. Background thread only. */
static uint64_t relieve_locks(uint64_t bytes)
{
    uint64_t done = 0, pg = rt_page_bytes;
    pthread_mutex_lock(&rt_planned_lock);
    for (uint64_t i = rt_planned_slots(); i-- > 0 && done < bytes;) {
        rt_pobj *o = rt_planned_slot(i);
        if (rt_pobj_free(o) || o->locked_end <= o->lo)
            continue;
        uint64_t want = (bytes - done + pg - 1) & ~(pg - 1);
        uint64_t take = o->locked_end - o->lo < want ? o->locked_end - o->lo : want;
        uint64_t a = o->locked_end - take;
        long r = syscall(SYS_munlock, (void *)(uintptr_t)a, take);
        rt_planned_record(o, a, o->locked_end, OT_PLACE_MUNLOCK, rt_place_result(r), 0);
        if (r != 0)
            continue;
        r = syscall(SYS_madvise, (void *)(uintptr_t)a, take, MADV_COLD);
        rt_planned_record(o, a, o->locked_end, OT_PLACE_COLD, rt_place_result(r), 0);
        o->locked_end = a;
        locked_total -= take;
        done += take;
    }
    if (done) {
        lock_limit = locked_total < lock_limit ? locked_total : lock_limit;
        relieved_bytes += done;
    }
    rt_planned_flush();
    pthread_mutex_unlock(&rt_planned_lock);
    return done;
}

static void swap_tick(uint64_t now)
{
    if (advise && now >= next_advise) {
        advise_pass();
        last_record = now;
        next_advise = now + (uint64_t)advise_ms * 1000000ull;
    } else if (watch && now >= next_watch) {
        int near = rt_memcg_near_limit(&memcg); /* one usage read for both */
        uint64_t shortfall = rt_memcg_inactive_shortfall(&memcg, near, inactive_pct);
        uint64_t room = near ? room_shortfall() : 0;
        if (room)
            relieve_locks(room);
        if (shortfall) {
            int keep = now - last_record >= RECORD_EVERY_NS;
            uint64_t advised = advise_some(shortfall, keep);
            pressure_bytes += advised;
            if (keep && advised) /* a pass that advised nothing left no records */
                last_record = now;
            pressure_passes++;
        }
    }
    if (watch && now >= next_watch)
        next_watch = rt_now_ns() + (uint64_t)pressure_ms * 1000000ull;
}

static void swap_stop(void)
{
    rt_ahead_stop();
}

static void swap_finish(void)
{
    if (pressure_passes)
        rt_log(0,
               "memory cgroup at its limit: %llu MiB of slow ranges advised cold in %llu "
               "passes",
               (unsigned long long)(pressure_bytes >> 20), (unsigned long long)pressure_passes);
    if (relieved_bytes)
        rt_log(1,
               "the memory cgroup was nearly full of locked memory: %llu MiB of planned-fast "
               "memory unlocked to leave reclaim room for this program's threads",
               (unsigned long long)(relieved_bytes >> 20));
}

static void swap_fork_child(int follow)
{
    (void)follow;
    rt_ahead_fork_child();
    /* mlocks are not inherited: the child starts with none */
    locked_total = pressure_passes = pressure_bytes = cold_slot = cold_at = relieved_bytes = 0;
}

const rt_tier_ops rt_tier_swap_ops = {
    .name = "swap",
    .init = swap_init,
    .place = swap_place,
    .forget = swap_unlock,
    .phase_leave = swap_phase_leave,
    .phase_enter = swap_phase_enter,
    .start = swap_start,
    .thread_begin = swap_thread_begin,
    .next_wake = swap_next_wake,
    .tick = swap_tick,
    .stop = swap_stop,
    .finish = swap_finish,
    .fork_child = swap_fork_child,
};
