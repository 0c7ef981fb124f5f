/*
 * fault sampler: AutoNUMA's hint faults in user space.
 *
 * A scanner thread walks the tracked objects window by window. Arming a window makes
 * its armed pages PROT_NONE; the first touch of each raises SIGSEGV, the handler
 * records a SAMPLE (latency = touch - arm time, in microseconds), restores that page
 * and returns so the access is retried. Moving on, the scanner restores the whole
 * window with one mprotect, so at most one window's worth of split VMAs exists, and
 * writes a WINDOW record: the pages it watched, for how long, and how many were touched
 * after how long in all — the exposure that turns first touches into a touch rate.
 *
 * Sparse arming: a touched armed page costs one fault, so faults per second bound how
 * much memory a contiguous scan can cover, and an armed window dwells up to DWELL_NS. Instead,
 * each pass over the tracked memory arms one 1/S of it, S = max(1, tracked pages /
 * min(OBJTIER_RATE, PASS_WINDOWS * window pages)): clusters of CLUSTER_PAGES
 * consecutive pages, one every period P = S * CLUSTER_PAGES pages, at a random phase that
 * changes each pass (a page p is armed when (p - phase) mod P < CLUSTER_PAGES). About
 * OBJTIER_RATE pages per pass, spread evenly over every object, so a pass takes about a
 * second of the fault budget however large the footprint is, and every object (small
 * ones in proportion to their size) is sampled in every pass. Clusters keep mprotect
 * calls — and the TLB shootdowns each one sends to the program's other CPUs — to one per
 * CLUSTER_PAGES armed pages. With S = 1 a window is one contiguous range.
 *
 * Order: a pass visits objects smallest first, and objects allocated during a pass are put
 * next in it (take_fresh); a phase change (objtier_phase) starts a new pass unless the pass
 * under way was itself started by one. So the small arrays a phase works on are sampled
 * within a few dwells of its start, and an array that lives for one short phase while it
 * lives; every object is still armed once per pass.
 *
 * Invariants
 *   - At most one window is armed. Its description (win_*) is written only under
 *     arm_lock (rt_fault_lock, fault_protect.c); win_start != 0 is published last when
 *     arming and cleared when disarming only after the range was added to the history
 *     ring and restored.
 *   - Only whole pages inside a live object are armed, and the object is re-validated
 *     under arm_lock; every release path (free, realloc, munmap, mremap, MAP_FIXED)
 *     calls rt_fault_disarm under the same lock before the memory goes back, so a
 *     PROT_NONE page never outlives its object.
 *   - disarm waits until no handler is between "read win_start" and "restore the page"
 *     (handlers_active == 0), so a late handler never changes memory that was reused.
 *   - Rate: arming n pages takes n tokens, untouched pages are refunded at disarm;
 *     tokens accrue at OBJTIER_RATE per second (rt_scan_budget, sampler_scan.h; every
 *     refill, take and refund under arm_lock, since disarm runs on any thread that
 *     releases memory), so faults per second <= OBJTIER_RATE
 *     on average (bursts bounded by one window).
 *   - The handler is async-signal-safe: atomics, clock_gettime, mprotect, the writer's
 *     try-once append. It saves and restores errno.
 *   - Transparency (fault_protect.c): only pages whose protection is exactly
 *     PROT_READ|PROT_WRITE now (as the program last set it) are armed, so a whole window
 *     span is read-write and restoring it to PROT_READ|PROT_WRITE gives back what the
 *     program set; every program change to protections or mappings disarms an overlapping
 *     window first, under arm_lock. No window is armed while any thread blocks SIGSEGV
 *     or is about to, or while a stdio call that may pass a buffer to the kernel runs.
 *     A fault is the sampler's only on an armed page of the armed window (or a just
 *     restored one, retried at most RETRY_LIMIT times); every other fault goes to the
 *     program's handler or kills the process exactly as it would without the runtime.
 */
#define _GNU_SOURCE
#include "sampler.h"
#include "fault_internal.h"
#include "sampler_scan.h"
#include "window_log.h"
#include "maps.h"
#include "registry.h"
#include "rt.h"
#include "writer.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define TICK_NS     5000000ULL  /* scanner wake-up, 5 ms */
#define DWELL_NS    50000000ULL /* a window stays armed at most 50 ms */
#define HISTORY     16          /* recently disarmed windows remembered for late faults */
#define RETRY_LIMIT 3           /* same address faulting this often is not ours */

static const rt_config *cfg;
static const rt_signal_ops *signal_ops; /* set by runtime.c before init; never NULL once armed */

void rt_fault_set_signal_ops(const rt_signal_ops *ops)
{
    signal_ops = ops;
}
static _Atomic int running;
static _Atomic int stop_flag;
static pthread_t scanner;
static int scanner_started;

static _Atomic uint64_t win_start, win_end; /* armed window [start, end), page aligned */
static _Atomic uint64_t win_period = 1;     /* armed: (page - start) / pg mod period < cluster */
static _Atomic uint64_t win_cluster = 1;
static _Atomic uint64_t win_arm_ns;
static _Atomic uint32_t win_prot;
static _Atomic uint64_t win_touched[RT_MAX_WINDOW_PAGES / 64]; /* bit per page: touched */
static _Atomic uint64_t win_faults;
static uint64_t win_seq; /* alloc seq of the object the window lies in */
/* samples, counts and WINDOW records not yet written (begin, end, flush under arm_lock) */
static rt_window_log wlog = {.source = OT_SRC_FAULT};
static _Atomic int handlers_active;
static _Atomic uint64_t hist_start[HISTORY], hist_end[HISTORY];
static _Atomic unsigned hist_next;

/* Buffers of system calls in flight: [io_lo, io_hi); io_hi == 0 marks a free slot. A
 * claimed slot may briefly show io_lo == 0, which only makes the scanner more careful. */
#define IO_SLOTS 64
static _Atomic uint64_t io_lo[IO_SLOTS], io_hi[IO_SLOTS];

static rt_scan_budget budget; /* under arm_lock: refilled by the scanner, refunded by disarm */
static uint64_t armed_pages_now;

static RT_TLS uint64_t retry_addr;
static RT_TLS unsigned retry_count;
static _Atomic uint64_t n_refused; /* arm attempts refused by fault_protect.c */

static inline uint64_t page_down(uint64_t a)
{
    return a & ~(uint64_t)(rt_page_bytes - 1);
}
static inline uint64_t page_up(uint64_t a)
{
    return page_down(a + rt_page_bytes - 1);
}

static void emit(uint64_t addr, uint64_t now, uint64_t arm_ns, int in_signal)
{
    rt_window_log_touch(&wlog, addr, rt_tid(), 0, now, arm_ns, in_signal);
}

/* 1 if `page` (inside the armed window starting at `start`) is one of its armed pages. */
static int armed_page(uint64_t start, uint64_t page)
{
    return ((page - start) / rt_page_bytes) % atomic_load(&win_period) < atomic_load(&win_cluster);
}

/* Marks armed page `page` of the window touched; 1 if this call was the first. The bit
 * index counts armed pages only: cluster k, page j -> k * cluster + j. */
static int claim_page(uint64_t start, uint64_t page)
{
    uint64_t off = (page - start) / rt_page_bytes, period = atomic_load(&win_period);
    uint64_t i = off / period * atomic_load(&win_cluster) + off % period;
    uint64_t bit = 1ULL << (i & 63);
    return !(atomic_fetch_or(&win_touched[i / 64], bit) & bit);
}

static int in_history(uint64_t a)
{
    for (int i = 0; i < HISTORY; i++)
        if (a >= atomic_load(&hist_start[i]) && a < atomic_load(&hist_end[i]))
            return 1;
    return 0;
}

static void on_segv(int sig, siginfo_t *info, void *uctx)
{
    int saved = errno;
    if (info->si_code == SEGV_ACCERR && atomic_load(&running)) {
        uint64_t a = page_down((uint64_t)(uintptr_t)info->si_addr);
        int ours = 0;
        atomic_fetch_add(&handlers_active, 1);
        uint64_t s = atomic_load(&win_start);
        if (s && a >= s && a < atomic_load(&win_end) && armed_page(s, a)) {
            ours = 1;
            if (claim_page(s, a)) {
                atomic_fetch_add(&win_faults, 1);
                emit((uint64_t)(uintptr_t)info->si_addr, rt_now_ns(), atomic_load(&win_arm_ns), 1);
            }
            rt_sys_mprotect((void *)(uintptr_t)a, rt_page_bytes, (int)atomic_load(&win_prot));
            retry_count = 0;
        } else if (in_history(a)) {
            /* the scanner restored this window after the fault was raised: retry,
             * unless the same address keeps faulting (then it is the program's) */
            if (retry_addr == a && ++retry_count >= RETRY_LIMIT)
                retry_count = 0;
            else {
                if (retry_addr != a)
                    retry_count = 1;
                retry_addr = a;
                ours = 1;
            }
        }
        atomic_fetch_sub(&handlers_active, 1);
        if (ours) {
            errno = saved;
            return;
        }
    }
    errno = saved;
    signal_ops->chain(sig, info, uctx);
}

/* Caller holds arm_lock, the window [start, end) was restored and no handler is inside it. */
static void record_window_locked(uint64_t start, uint64_t end, uint64_t now)
{
    uint64_t faults = atomic_load(&win_faults);
    uint32_t touched = (uint32_t)(faults < armed_pages_now ? faults : armed_pages_now);
    rt_window_log_end(&wlog, win_seq, start, atomic_load(&win_arm_ns), now,
                      (uint32_t)armed_pages_now, touched);
}

/* Caller holds arm_lock. */
static void disarm_locked(void)
{
    uint64_t s = atomic_load(&win_start);
    if (!s)
        return;
    uint64_t e = atomic_load(&win_end);
    unsigned h = atomic_fetch_add(&hist_next, 1) % HISTORY;
    atomic_store(&hist_start[h], 0);
    atomic_store(&hist_end[h], e);
    atomic_store(&hist_start[h], s);
    /* restore first, then retire: a handler that sees win_start == 0 knows the whole
     * window is accessible again, so its retry cannot fault on this window */
    rt_sys_mprotect((void *)(uintptr_t)s, e - s, (int)atomic_load(&win_prot));
    atomic_store(&win_start, 0);
    uint64_t now = rt_now_ns();
    while (atomic_load(&handlers_active) != 0)
        sched_yield();
    record_window_locked(s, e, now);
    uint64_t faults = atomic_load(&win_faults);
    if (faults < armed_pages_now)
        budget.tokens += (double)(armed_pages_now - faults);
    armed_pages_now = 0;
}

/* Caller holds the arm lock: restores the armed window if it overlaps [lo, hi). */
static void disarm_overlap_locked(uint64_t lo, uint64_t hi)
{
    uint64_t s = atomic_load(&win_start);
    if (s && lo < atomic_load(&win_end) && s < hi)
        disarm_locked();
}

void rt_fault_disarm(uint64_t addr, uint64_t len)
{
    if (!atomic_load_explicit(&running, memory_order_acquire) || rt_fault_lock_held_here())
        return;
    rt_fault_lock();
    disarm_overlap_locked(addr, addr + len < addr ? UINT64_MAX : addr + len);
    rt_fault_unlock();
}

void rt_fault_touch(const void *buf, uint64_t len)
{
    if (!atomic_load_explicit(&running, memory_order_relaxed) || len == 0 ||
        !atomic_load_explicit(&win_start, memory_order_relaxed))
        return;
    uint64_t lo = (uint64_t)(uintptr_t)buf, hi = lo + len;
    if (rt_fault_lock_held_here()) /* a signal handler on a thread inside the runtime */
        return;
    rt_fault_lock();
    uint64_t s = atomic_load(&win_start), e = atomic_load(&win_end);
    if (s && lo < e && s < hi) {
        uint64_t a = page_down(lo > s ? lo : s), b = hi < e ? page_up(hi) : e;
        uint64_t now = rt_now_ns(), arm = atomic_load(&win_arm_ns);
        for (uint64_t p = a; p < b; p += rt_page_bytes)
            if (armed_page(s, p) && claim_page(s, p)) {
                atomic_fetch_add(&win_faults, 1);
                emit(p > lo ? p : lo, now, arm, 0);
            }
        rt_sys_mprotect((void *)(uintptr_t)a, b - a, (int)atomic_load(&win_prot));
    }
    rt_fault_unlock();
}

int rt_fault_io_begin(const void *buf, uint64_t len)
{
    if (!atomic_load_explicit(&running, memory_order_relaxed) || len == 0)
        return -1;
    uint64_t lo = (uint64_t)(uintptr_t)buf, hi = lo + len;
    int slot = -1;
    for (int i = 0; i < IO_SLOTS && slot < 0; i++) {
        uint64_t expect = 0;
        if (atomic_load_explicit(&io_hi[i], memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong(&io_hi[i], &expect, hi))
            slot = i;
    }
    if (slot >= 0)
        atomic_store(&io_lo[slot], lo);
    /* published before looking at the window: the scanner either sees this slot and
     * skips the range, or armed it first and rt_fault_touch restores it (seq_cst) */
    rt_fault_touch(buf, len);
    return slot;
}

void rt_fault_io_end(int slot)
{
    if (slot < 0)
        return;
    atomic_store(&io_lo[slot], 0);
    atomic_store(&io_hi[slot], 0);
}

static int io_in_flight(uint64_t lo, uint64_t hi)
{
    for (int i = 0; i < IO_SLOTS; i++) {
        uint64_t h = atomic_load(&io_hi[i]);
        if (h && lo < h && atomic_load(&io_lo[i]) < hi)
            return 1;
    }
    return 0;
}

int rt_fault_recently_armed(const void *buf, uint64_t len)
{
    if (!atomic_load(&running))
        return 0;
    uint64_t lo = (uint64_t)(uintptr_t)buf, hi = lo + len;
    uint64_t s = atomic_load(&win_start);
    if (s && lo < atomic_load(&win_end) && s < hi)
        return 1;
    for (int i = 0; i < HISTORY; i++)
        if (lo < atomic_load(&hist_end[i]) && atomic_load(&hist_start[i]) < hi)
            return 1;
    return 0;
}

/* ---- scanner ---------------------------------------------------------------- */

static rt_obj *snap;
static size_t snap_cap, snap_n, snap_i;
static uint64_t cursor;      /* next page to arm in snap[snap_i]; 0 = start of object */
static uint64_t snap_newest; /* highest ALLOC seq the pass knows of: newer objects are fresh */
/* The object fresh ones were put before, part-way through: it goes on from resume_cursor
 * when the pass comes back to it (resume_seq 0: none). Pieces of one mapping share a seq,
 * and the first piece with it after the fresh objects is the one that was interrupted. */
static uint64_t resume_seq, resume_cursor;
#define CLUSTER_PAGES 16 /* armed pages per mprotect call when arming sparsely */
#define PASS_WINDOWS  5  /* windows per pass at most: a pass lasts <= 5 dwells (250 ms) */
static uint64_t period = 1, cluster = 1, phase; /* this pass's arming pattern (pages) */
static uint64_t pass_count;
static _Atomic int phase_changed; /* set by rt_fault_phase_changed, taken by the scanner */
static int pass_by_phase;         /* the pass under way began at a phase change */

void rt_fault_phase_changed(void)
{
    atomic_store(&phase_changed, 1);
}

static int smaller_first(const void *a, const void *b)
{
    const rt_obj *x = a, *y = b;
    return (x->size > y->size) - (x->size < y->size);
}

/* Copies up to cap tracked objects, heap objects then mappings, into out; returns how many. */
static size_t copy_tracked(rt_obj *out, size_t cap)
{
    size_t n = rt_reg_snapshot(out, cap);
    return n + rt_maps_snapshot(out + n, cap - n);
}

static uint64_t newest_of(const rt_obj *objs, size_t n, uint64_t floor)
{
    for (size_t i = 0; i < n; i++)
        if (objs[i].seq > floor)
            floor = objs[i].seq;
    return floor;
}

static void take_snapshot(void)
{
    uint64_t newest = atomic_load(&rt_newest_tracked_seq);
    size_t need = (size_t)atomic_load(&rt_reg_live) + (size_t)atomic_load(&rt_maps_live) + 64;
    if (need > snap_cap) {
        rt_sys_munmap(snap, snap_cap * sizeof(rt_obj));
        snap_cap = need * 2;
        snap = rt_sys_mmap(snap_cap * sizeof(rt_obj));
        if (!snap) {
            snap_cap = snap_n = 0;
            return;
        }
    }
    snap_n = copy_tracked(snap, snap_cap);
    qsort(snap, snap_n, sizeof(rt_obj), smaller_first);
    snap_i = 0;
    cursor = 0;
    resume_seq = 0;
    snap_newest = newest_of(snap, snap_n, newest);
    uint64_t pages = 0;
    for (size_t i = 0; i < snap_n; i++) {
        uint64_t first = page_up(snap[i].addr), last = page_down(snap[i].addr + snap[i].size);
        if (last > first)
            pages += (last - first) / rt_page_bytes;
    }
    /* S: arm 1 page in S, so that a pass arms at most OBJTIER_RATE pages (about a second
     * of the fault budget) and at most PASS_WINDOWS windows (a pass of untouched pages
     * lasts PASS_WINDOWS dwell times): every object is revisited within ~250 ms. */
    uint64_t by_rate = cfg->rate ? cfg->rate : 1;
    uint64_t by_time = (uint64_t)PASS_WINDOWS * cfg->window_pages;
    uint64_t per_pass = by_rate < by_time ? by_rate : by_time;
    uint64_t fraction = (pages + per_pass - 1) / per_pass;
    if (fraction <= 1) {
        period = cluster = 1;
        phase = 0;
        return;
    }
    if (fraction > 65536)
        fraction = 65536;
    cluster = CLUSTER_PAGES;
    period = fraction * CLUSTER_PAGES;
    /* a new phase each pass (splitmix64 of the pass count and the clock) */
    uint64_t z = (++pass_count * 0x9E3779B97F4A7C15ULL) ^ rt_now_ns();
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    phase = (z ^ (z >> 31)) % period;
}

/* Objects allocated since the pass began (seq above snap_newest) go next in it, before the
 * object being scanned: a new object is armed within one dwell of its allocation instead of
 * waiting for the pass to end and for the objects ahead of it in the next one — so an object
 * that lives for a short phase is sampled in it. At most half the free room of the snapshot
 * array is taken (the rest holds the copy they are picked from); objects that do not fit
 * come with the next pass. */
static void take_fresh(void)
{
    uint64_t newest = atomic_load(&rt_newest_tracked_seq);
    size_t room = snap_cap - snap_n;
    rt_obj *copy = snap + snap_n;
    size_t got = copy_tracked(copy, room);
    size_t fresh = 0;
    for (size_t k = 0; k < got && fresh < room / 2; k++)
        if (copy[k].seq > snap_newest)
            copy[fresh++] = copy[k];
    snap_newest = newest_of(copy, fresh, newest > snap_newest ? newest : snap_newest);
    if (fresh == 0)
        return;
    /* the fresh ones to the end of the array, the rest of the pass up by `fresh`, then the
     * fresh ones into the gap at snap_i (room >= 2 * fresh keeps the two apart) */
    memmove(snap + snap_cap - fresh, copy, fresh * sizeof(rt_obj));
    memmove(snap + snap_i + fresh, snap + snap_i, (snap_n - snap_i) * sizeof(rt_obj));
    memcpy(snap + snap_i, snap + snap_cap - fresh, fresh * sizeof(rt_obj));
    if (cursor != 0 && resume_seq == 0) { /* an earlier interrupted object keeps its place */
        resume_seq = snap[snap_i + fresh].seq;
        resume_cursor = cursor;
    }
    cursor = 0;
    snap_n += fresh;
}

/* Heap objects are in the registry, mappings in the map list; a seq is one object's, so
 * whichever holds it answers (the snapshot, sorted by size, mixes both). */
static int still_live(size_t i, uint64_t start, uint64_t len)
{
    rt_obj o;
    if (rt_reg_lookup(snap[i].addr, &o) && o.seq == snap[i].seq)
        return 1;
    return rt_maps_contains(start, len, snap[i].seq);
}

/* Makes the m clusters of a window starting at `start` PROT_NONE: full clusters one
 * period apart, the last one `last_pages` long. On failure restores what was armed and
 * returns -1. Caller holds arm_lock. */
static int arm_pages(uint64_t start, uint64_t m, uint64_t last_pages)
{
    if (period == 1)
        return rt_sys_mprotect((void *)(uintptr_t)start, last_pages * rt_page_bytes, PROT_NONE);
    for (uint64_t k = 0; k < m; k++) {
        uint64_t at = start + k * period * rt_page_bytes;
        uint64_t len = (k + 1 < m ? cluster : last_pages) * rt_page_bytes;
        if (rt_sys_mprotect((void *)(uintptr_t)at, len, PROT_NONE) != 0) {
            rt_sys_mprotect((void *)(uintptr_t)start, k * period * rt_page_bytes + 1,
                            (int)atomic_load(&win_prot));
            return -1;
        }
    }
    return 0;
}

/* Arms the next window; 1 if one was armed. The whole span of a window (clusters and the
 * gaps between them) lies in one read-write run of one live object. */
static int arm_next(void)
{
    rt_fault_lock();
    if (!rt_fault_arming_allowed_locked()) {
        rt_fault_arming_end();
        rt_fault_unlock();
        atomic_fetch_add(&n_refused, 1);
        return 0;
    }
    int armed = 0;
    while (snap_i < snap_n) {
        rt_obj *o = &snap[snap_i];
        uint64_t first = page_up(o->addr), last = page_down(o->addr + o->size);
        if (cursor == 0 && resume_seq != 0 && o->seq == resume_seq) {
            cursor = resume_cursor;
            resume_seq = 0;
        }
        if (cursor < first)
            cursor = first;
        /* start of the next cluster at or after cursor: (page - phase) mod period == 0 */
        uint64_t r = (cursor / rt_page_bytes + period - phase % period) % period;
        if (r != 0)
            cursor += (period - r) * rt_page_bytes;
        if (cursor >= last) {
            snap_i++;
            cursor = 0;
            continue;
        }
        int armable;
        uint64_t run = rt_fault_rw_run_locked(cursor, last, o->prot, &armable);
        if (!armable) { /* not read-write now (guard, read-only, reserved, code): skip it */
            cursor = run;
            continue;
        }
        uint64_t avail = (run - cursor) / rt_page_bytes; /* pages to the run's end */
        uint64_t budget_pages =
            cfg->window_pages < budget.tokens ? cfg->window_pages : (uint64_t)budget.tokens;
        uint64_t m = period == 1 ? 1 : budget_pages / cluster; /* clusters in this window */
        uint64_t clusters = (avail + period - 1) / period;     /* clusters starting in the run */
        if (m > clusters)
            m = clusters;
        uint64_t tail = avail - (m ? m - 1 : 0) * period; /* room for the last cluster */
        uint64_t last_pages = period == 1 ? (avail < budget_pages ? avail : budget_pages)
                                          : (tail < cluster ? tail : cluster);
        if (m == 0 || last_pages == 0)
            break;
        uint64_t n = (m - 1) * cluster + last_pages;                    /* armed pages */
        uint64_t len = ((m - 1) * period + last_pages) * rt_page_bytes; /* to the last one */
        if (!still_live(snap_i, cursor, len)) {
            snap_i++;
            cursor = 0;
            continue;
        }
        for (uint64_t w = 0; w < (n + 63) / 64; w++)
            atomic_store(&win_touched[w], 0);
        atomic_store(&win_faults, 0);
        rt_window_log_begin(&wlog);
        win_seq = o->seq;
        atomic_store(&win_end, cursor + len);
        atomic_store(&win_prot, PROT_READ | PROT_WRITE); /* what the whole span has now */
        atomic_store(&win_arm_ns, rt_now_ns());
        atomic_store(&win_period, period);
        atomic_store(&win_cluster, cluster);
        atomic_store(&win_start, cursor);
        if (io_in_flight(cursor, cursor + len) || arm_pages(cursor, m, last_pages) != 0) {
            /* a system call is using this range (or mprotect failed): move on */
            atomic_store(&win_start, 0);
            cursor += len;
            continue;
        }
        atomic_store(&win_arm_ns, rt_now_ns());
        budget.tokens -= (double)n;
        armed_pages_now = n; /* counted in wlog when the window is recorded at disarm */
        cursor += len;
        armed = 1;
        break;
    }
    rt_fault_arming_end();
    rt_fault_unlock();
    return armed;
}

static void *scan_loop(void *arg)
{
    (void)arg;
    rt_guard = 1;
    rt_thread_stay_home();
    /* The program's asynchronous signals go to its own threads, never to this one (its
     * handler would run here, under the arm lock; a signal every program thread blocks
     * would be taken here). Faults stay deliverable, and SIGSEGV unblocked: the scanner
     * touches no program memory, and its own mask must not read as a blocker. glibc's
     * own signals 32 and 33 (cancellation, setxid: setuid() waits for every thread) stay
     * unblocked. */
    uint64_t keep = 1ULL << (SIGSEGV - 1) | 1ULL << (SIGBUS - 1) | 1ULL << (SIGILL - 1) |
                    1ULL << (SIGFPE - 1) | 1ULL << (SIGTRAP - 1) | 1ULL << 31 | 1ULL << 32;
    uint64_t block = ~keep;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &block, NULL, sizeof block);
    rt_fault_lock();
    rt_scan_budget_init(&budget, cfg);
    rt_fault_unlock();
    while (!atomic_load(&stop_flag)) {
        rt_fault_lock();
        rt_scan_budget_refill(&budget);
        int can_arm = budget.tokens >= 1.0;
        rt_fault_unlock();
        int at_phase = atomic_exchange(&phase_changed, 0);
        if (snap_i >= snap_n || (at_phase && !pass_by_phase)) {
            take_snapshot();
            pass_by_phase = at_phase;
        } else if (atomic_load(&rt_newest_tracked_seq) > snap_newest) {
            take_fresh();
        }
        if (!can_arm || !arm_next()) {
            rt_scan_sleep_ns(TICK_NS);
            continue;
        }
        /* dwell: until every page was touched, the dwell time passed, or stop */
        uint64_t until = rt_now_ns() + DWELL_NS;
        while (!atomic_load(&stop_flag) && rt_now_ns() < until && atomic_load(&win_start) != 0 &&
               atomic_load(&win_faults) < armed_pages_now)
            rt_scan_sleep_ns(TICK_NS);
        rt_fault_lock();
        disarm_locked();
        rt_fault_unlock();
    }
    return NULL;
}

/* ---- ops ---------------------------------------------------------------------- */

static int fault_init(const rt_config *c)
{
    cfg = c;
    rt_fault_protect_init(disarm_overlap_locked);
    return 0;
}

static int fault_start(void)
{
    if (!signal_ops || signal_ops->install(on_segv) != 0) {
        rt_log(1, "fault sampler: cannot install the SIGSEGV handler; no samples");
        return -EINVAL;
    }
    atomic_store(&stop_flag, 0);
    atomic_store(&running, 1);
    snap_i = snap_n = 0;
    if (pthread_create(&scanner, NULL, scan_loop, NULL) != 0) {
        atomic_store(&running, 0);
        rt_log(1, "fault sampler: cannot start the scanner thread; no samples");
        return -EAGAIN;
    }
    scanner_started = 1;
    return 0;
}

static void fault_stop(void)
{
    if (!scanner_started)
        return;
    atomic_store(&stop_flag, 1);
    pthread_join(scanner, NULL);
    scanner_started = 0;
    const char *why = rt_fault_refusal();
    if (why && atomic_load(&wlog.windows) == 0 && atomic_load(&n_refused) > 0)
        rt_log(1, "fault sampler: no page was armed: %s; no samples", why);
    rt_fault_lock();
    disarm_locked();
    rt_window_log_flush(&wlog);
    rt_fault_unlock();
    /* the handler stays installed (it chains); `running` stays set so that late
     * faults on just-restored pages are still recognized through the history ring */
}

static void fault_stats(ot_sampler_stats_record *out)
{
    rt_window_log_stats(&wlog, out);
}

static void fault_fork_prepare(void)
{
    rt_fault_lock_fork_prepare();
}
static void fault_fork_parent(void)
{
    rt_fault_lock_fork_parent();
}

static void fault_fork_child(int restart)
{
    /* the child has no scanner: leave no PROT_NONE page behind */
    uint64_t s = atomic_load(&win_start);
    if (s)
        rt_sys_mprotect((void *)(uintptr_t)s, atomic_load(&win_end) - s,
                        (int)atomic_load(&win_prot));
    atomic_store(&win_start, 0);
    atomic_store(&handlers_active, 0);
    atomic_store(&n_refused, 0);
    rt_fault_protect_fork_child();
    scanner_started = 0;
    rt_window_log_reset(&wlog); /* the parent's windows, written by the parent */
    snap_i = snap_n = 0;
    if (restart)
        fault_start();
}

const rt_sampler_ops rt_sampler_fault_ops = {
    .name = "fault",
    .source = OT_SRC_FAULT,
    .init = fault_init,
    .start = fault_start,
    .stop = fault_stop,
    .stats = fault_stats,
    .fork_prepare = fault_fork_prepare,
    .fork_parent = fault_fork_parent,
    .fork_child = fault_fork_child,
};
