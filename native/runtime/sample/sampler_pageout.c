/*
 * pageout sampler: first touches observed as major page faults, the kernel servicing each.
 *
 * A scanner thread walks the tracked objects (and watched sites' arena chunks, arena_watch.h)
 * in scan windows with the fault sampler's pattern
 * (sampler_scan.h: sparse clusters of pages at a random phase per pass, so a pass covers
 * about OBJTIER_RATE pages spread over every object). Arming a
 * window pushes its clusters to swap with MADV_PAGEOUT; /proc/self/pagemap then says which
 * pages went (bit 62, swapped). The next touch of such a page is a major fault that the
 * kernel resolves by itself — for user code and for system calls alike (copy_to_user on a
 * read() buffer waits for the swap-in like any access) — and a perf software event
 * (PERF_COUNT_SW_PAGE_FAULTS_MAJ, period 1, PERF_SAMPLE_TID|TIME|ADDR, kernel-mode faults
 * included where permitted) reports it with its address. The program sees no signal, no
 * protection change and no failed call: only time and residency change.
 *
 * Records: one SAMPLE (source OT_SRC_PAGEOUT, latency = touch - arm in microseconds) per
 * armed page at its first touch after arming, and one WINDOW record per window (the same
 * exposure record the fault sampler writes, so objects' touch rates are estimated the same
 * way). Armed pages = pages pagemap showed swapped after the pageout, plus pages whose
 * major fault arrived before pagemap was read (touched at once). An armed page stays in swap
 * until its next touch, so a window stays open (pageout_pool.h) until every armed page was
 * touched or for RT_POOL_HORIZON_NS: a page reused every few seconds is seen reused, not
 * taken for cold at the end of a short dwell. Its WINDOW record's dwell is close - arm.
 *
 * Invariants
 *   - One thread (the scanner) arms windows, drains the perf rings and writes records:
 *     no lock is shared with the program's threads; nothing runs in a signal handler.
 *   - Arming never changes a protection, a mapping or page contents: MADV_PAGEOUT only
 *     reclaims pages that the kernel may reclaim (not mlocked, not shared), so a page that
 *     cannot go stays resident and is simply not armed.
 *   - Rate: paging out n pages takes n tokens, with no refund for untouched pages (unlike
 *     the fault sampler: every armed page costs a compression, touched or not); tokens
 *     accrue at OBJTIER_RATE per second, so at most OBJTIER_RATE pages per second are pushed
 *     to swap and at most as many sampled major faults are taken.
 *   - Cost budget (overhead.h): the scanner measures its own CPU time and the sampled faults,
 *     each charged the swap-in cost it measured at start on pages of its own, and lowers the
 *     token rate so that their sum stays within OBJTIER_OVERHEAD_BP of the program's CPU
 *     time; its counters (recorder.*) go to the trace every step. The scanner's own
 *     calibration faults (its tid) are not samples.
 *   - Needs an active swap device with free space (zram is enough); without one start()
 *     logs why and returns -ENODEV (the trace then has no samples; `objtier record`
 *     checks this first and says so).
 *   - Pages untouched when their window closes stay in swap; a later touch is a major
 *     fault in no open window: counted (recorder faults), not recorded.
 */
#define _GNU_SOURCE
#include "sampler.h"
#include "overhead.h"
#include "pageout_pool.h"
#include "perf_ring.h"
#include "sampler_scan.h"
#include "thp_guard.h"
#include "window_log.h"
#include "rt.h"
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

#define TICK_NS      5000000ULL  /* scanner wake-up, 5 ms */
#define SLOW_TICK_NS 20000000ULL /* the same while paced below half OBJTIER_RATE, 20 ms */
#define IDLE_MAX_NS  20000000ULL /* longest sleep waiting for tokens, 20 ms (stop waits it) */
#define ARM_ROUND    64          /* windows armed at most between two wake-ups */
#define RING_PAGES   64          /* perf ring data pages per CPU (power of two) */
#define MAX_CPUS     256
#define PM_SWAPPED   (1ULL << 62)
#define PM_PRESENT   (1ULL << 63)

static const rt_config *cfg;
static pthread_t scanner;
static int scanner_started;
static _Atomic int stop_flag;
static uint32_t my_pid;
static int pagemap_fd = -1;
static int kernel_faults; /* 1: the events also see faults taken in system calls */

static int ring_fd[MAX_CPUS];
static void *ring_map[MAX_CPUS];
static int n_rings;

static _Atomic uint64_t n_outside;
static rt_window_log wlog = {.source = OT_SRC_PAGEOUT};

/* The open windows (scanner thread only): armed page i (cluster k, page j -> k * cluster +
 * j) of a window is pending in its slot from the pagemap read until its first major fault. */
static rt_scan scan;
static rt_pool pool;
static rt_scan_budget budget; /* scanner thread only */
static rt_overhead ovh;       /* scanner thread only */
static uint32_t scanner_tid;  /* its calibration faults are not samples */
static rt_thp_guard thp;      /* scanner thread only */

static inline uint64_t page_down(uint64_t a)
{
    return a & ~(uint64_t)(rt_page_bytes - 1);
}
static inline uint64_t page_up(uint64_t a)
{
    return page_down(a + rt_page_bytes - 1);
}

/* One major-fault sample: PERF_SAMPLE_TID (pid, tid), TIME, ADDR in that order. */
static void on_record(void *ctx, const struct perf_event_header *h, const unsigned char *rec)
{
    (void)ctx;
    if (h->type == PERF_RECORD_LOST) {
        uint64_t lost;
        memcpy(&lost, rec + sizeof *h + 8, 8);
        atomic_fetch_add(&wlog.lost, lost);
        return;
    }
    if (h->type != PERF_RECORD_SAMPLE)
        return;
    const unsigned char *p = rec + sizeof *h;
    uint32_t pid, tid;
    uint64_t t, addr;
    memcpy(&pid, p, 4);
    memcpy(&tid, p + 4, 4);
    memcpy(&t, p + 8, 8);
    memcpy(&addr, p + 16, 8);
    if (pid != my_pid || tid == scanner_tid)
        return;
    if (!rt_pool_touch(&pool, addr, page_down(addr), rt_page_bytes, tid, t))
        atomic_fetch_add_explicit(&n_outside, 1, memory_order_relaxed);
}

static void drain_all(void)
{
    for (int i = 0; i < n_rings; i++)
        rt_perf_ring_drain(ring_map[i], RING_PAGES, on_record, NULL);
}

static void close_rings(void)
{
    for (int i = 0; i < n_rings; i++) {
        munmap(ring_map[i], rt_perf_ring_bytes(RING_PAGES));
        close(ring_fd[i]);
    }
    n_rings = 0;
}

/* The major-fault event on every CPU; with exclude_kernel = 0 first (faults taken inside
 * system calls count too), else user-mode faults only. 0 or -errno. */
static int open_rings(void)
{
    long c = sysconf(_SC_NPROCESSORS_CONF);
    int cpus = c > 0 ? (int)(c < MAX_CPUS ? c : MAX_CPUS) : 1;
    for (int pass = 0; pass < 2; pass++) {
        struct perf_event_attr a;
        memset(&a, 0, sizeof a);
        a.size = sizeof a;
        a.type = PERF_TYPE_SOFTWARE;
        a.config = PERF_COUNT_SW_PAGE_FAULTS_MAJ;
        a.sample_period = 1;
        a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR;
        a.inherit = 1;
        a.inherit_thread = 1;
        a.exclude_kernel = pass;
        a.exclude_hv = 1;
        a.use_clockid = 1;
        a.clockid = CLOCK_MONOTONIC;
        int err = 0;
        for (int cpu = 0; cpu < cpus; cpu++) {
            int r = rt_perf_open_ring(&a, cpu, RING_PAGES, &ring_fd[n_rings], &ring_map[n_rings]);
            if (r == 0)
                n_rings++;
            else if (r != -ENODEV)
                err = r;
        }
        if (n_rings) {
            kernel_faults = pass == 0;
            return 0;
        }
        if (err != -EACCES && err != -EPERM)
            return err ? err : -ENOENT;
    }
    return -EACCES;
}

/* ---- windows ------------------------------------------------------------------- */

/* Marks pending in slot `s` the pages of its cluster k (pages at `at`, `len` of them) that
 * pagemap shows swapped out. */
static void read_swapped(rt_pool_slot *s, uint64_t at, uint64_t k, uint64_t len)
{
    uint64_t entries[RT_SCAN_CLUSTER_PAGES * 4];
    uint64_t first =
        k * s->w.cluster + (at - rt_scan_cluster_at(&s->w, k, rt_page_bytes)) / rt_page_bytes;
    while (len) {
        uint64_t n = len < sizeof entries / 8 ? len : sizeof entries / 8;
        off_t off = (off_t)(at / rt_page_bytes * 8);
        ssize_t got = pread(pagemap_fd, entries, n * 8, off);
        if (got <= 0)
            return;
        uint64_t m = (uint64_t)got / 8;
        for (uint64_t j = 0; j < m; j++)
            if ((entries[j] & PM_SWAPPED) && !(entries[j] & PM_PRESENT))
                rt_pool_arm_page(s, first + j);
        first += m;
        at += m * rt_page_bytes;
        len -= m;
    }
}

/* Arms the next window; the pages it paged out (tokens taken), 0 when none could be armed
 * now. A cluster the THP guard keeps (thp_guard.h) is not paged out: its pages are not
 * armed and not in the window's exposure; it takes one token (its PAGEMAP_SCAN), so that a
 * pass over huge pages stays paced. */
static uint64_t arm_next(void)
{
    rt_scan_window w;
    if (!rt_scan_next(&scan, (uint64_t)budget.tokens, &w))
        return 0;
    rt_pool_slot *s = rt_pool_open(&pool, &w, rt_now_ns());
    uint64_t paged = 0;
    uint64_t kept[(RT_MAX_WINDOW_PAGES + 63) / 64] = {0}; /* bit k: cluster k kept */
    /* any protection: paging out keeps contents and protection, the kernel swaps in */
    for (uint64_t k = 0; k < w.m; k++) {
        uint64_t at = rt_scan_cluster_at(&w, k, rt_page_bytes);
        uint64_t n = rt_scan_cluster_pages(&w, k);
        if (rt_thp_guard_keeps(&thp, w.obj, at, n * rt_page_bytes)) {
            kept[k / 64] |= 1ULL << (k % 64);
            budget.tokens -= 1.0;
            continue;
        }
        syscall(SYS_madvise, (void *)(uintptr_t)at, n * rt_page_bytes, MADV_PAGEOUT);
        paged += n;
    }
    for (uint64_t k = 0; k < w.m; k++)
        if (!(kept[k / 64] & (1ULL << (k % 64))))
            read_swapped(s, rt_scan_cluster_at(&w, k, rt_page_bytes), k,
                         rt_scan_cluster_pages(&w, k));
    rt_pool_ready(s, rt_now_ns());
    budget.tokens -= (double)paged;
    ovh.pages += paged;
    return w.pages; /* the window's span of the pattern is used up, armed or kept */
}

static void *scan_loop(void *arg)
{
    (void)arg;
    rt_guard = 1;
    rt_thread_stay_home();
    rt_scan_budget_init(&budget, cfg);
    scanner_tid = rt_tid();
    rt_overhead_init(&ovh, cfg);
    rt_overhead_calibrate(&ovh, pagemap_fd);
    const char *no_guard = rt_thp_guard_init(&thp, pagemap_fd);
    if (no_guard)
        rt_log(0, "pageout sampler: huge pages not guarded (%s)", no_guard);
    drain_all(); /* the calibration's faults: the scanner's own, dropped */
    double rate = ovh.rate;
    while (!atomic_load(&stop_flag)) {
        ovh.faults = atomic_load(&wlog.samples) + atomic_load(&wlog.lost) +
                     atomic_load_explicit(&n_outside, memory_order_relaxed);
        double paced = rt_overhead_step(&ovh, 0);
        if (paced != rate) {
            rate = paced;
            rt_scan_budget_set_rate(&budget, cfg, rate);
            scan.rate = (uint64_t)rate;
        }
        rt_scan_budget_refill(&budget);
        int armed = 0;
        while (armed < ARM_ROUND && budget.tokens >= 1.0 && arm_next())
            armed++;
        /* paced down, or with nothing to arm and no window open, the scanner's own
         * wake-ups weigh: fewer of them (touch times come from the perf samples, not from
         * the tick); short of tokens for a cluster, sleep until they accrue (at most
         * IDLE_MAX_NS) */
        uint64_t tick =
            rate * 2 < (double)cfg->rate || (!armed && !pool.n) ? SLOW_TICK_NS : TICK_NS;
        double need = RT_SCAN_CLUSTER_PAGES - budget.tokens;
        double wait = need > 0 ? need / budget.per_ns : 0;
        rt_scan_sleep_ns(wait > (double)IDLE_MAX_NS ? IDLE_MAX_NS
                         : wait > (double)tick      ? (uint64_t)wait
                                                    : tick);
        drain_all();
        rt_pool_close(&pool, rt_now_ns(), 0);
    }
    drain_all();
    rt_pool_close(&pool, rt_now_ns(), 1);
    ovh.faults = atomic_load(&wlog.samples) + atomic_load(&wlog.lost) +
                 atomic_load_explicit(&n_outside, memory_order_relaxed);
    rt_overhead_step(&ovh, 1); /* the run's totals */
    if (thp.kept)
        rt_log(0, "pageout sampler: %llu clusters left unarmed to keep their huge pages",
               (unsigned long long)thp.kept);
    return NULL;
}

/* ---- ops ------------------------------------------------------------------------ */

static int pageout_init(const rt_config *c)
{
    cfg = c;
    return 0;
}

static int pageout_start(void)
{
    my_pid = (uint32_t)getpid();
    if (!rt_swap_available()) {
        rt_log(1, "pageout sampler: no active swap device with free space; recording "
                  "without samples (add swap, e.g. zram, or choose another sampler)");
        return -ENODEV;
    }
    pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (pagemap_fd < 0) {
        rt_log(1, "pageout sampler: cannot open /proc/self/pagemap: %s; no samples",
               strerror(errno));
        return -errno;
    }
    int r = open_rings();
    if (r != 0) {
        close(pagemap_fd);
        pagemap_fd = -1;
        rt_log(1, "pageout sampler: perf_event_open of major faults failed: %s; no samples",
               strerror(-r));
        return r;
    }
    if (!kernel_faults)
        rt_log(0, "pageout sampler: faults inside system calls are not visible "
                  "(perf_event_paranoid); user-mode touches only");
    atomic_store(&stop_flag, 0);
    rt_scan_init(&scan, cfg);
    scan.sites = 1; /* watched sites' arena chunks too (arena_watch.h) */
    if (rt_pool_init(&pool, &wlog, cfg->window_pages) != 0) {
        close_rings();
        close(pagemap_fd);
        pagemap_fd = -1;
        rt_log(1, "pageout sampler: no memory for its windows; no samples");
        return -ENOMEM;
    }
    if (pthread_create(&scanner, NULL, scan_loop, NULL) != 0) {
        rt_pool_free(&pool);
        close_rings();
        close(pagemap_fd);
        pagemap_fd = -1;
        rt_log(1, "pageout sampler: cannot start the scanner thread; no samples");
        return -EAGAIN;
    }
    scanner_started = 1;
    return 0;
}

static void pageout_stop(void)
{
    if (!scanner_started)
        return;
    atomic_store(&stop_flag, 1);
    pthread_join(scanner, NULL);
    scanner_started = 0;
    rt_window_log_flush(&wlog);
    for (int i = 0; i < n_rings; i++)
        ioctl(ring_fd[i], PERF_EVENT_IOC_DISABLE, 0);
    close_rings();
    if (pagemap_fd >= 0)
        close(pagemap_fd);
    pagemap_fd = -1;
    rt_scan_free(&scan);
    rt_pool_free(&pool);
}

static void pageout_stats(ot_sampler_stats_record *out)
{
    rt_window_log_stats(&wlog, out);
}

static void pageout_fork_child(int restart)
{
    /* the parent's rings, pagemap and windows belong to the parent; its memory needs no
     * repair (swapped pages are the kernel's business) */
    for (int i = 0; i < n_rings; i++) {
        munmap(ring_map[i], rt_perf_ring_bytes(RING_PAGES));
        close(ring_fd[i]);
    }
    n_rings = 0;
    if (pagemap_fd >= 0)
        close(pagemap_fd);
    pagemap_fd = -1;
    scanner_started = 0;
    scanner_tid = 0;
    rt_pool_free(&pool); /* the child's copy of the parent's open windows */
    rt_scan_free(&scan); /* the child's copy of the parent's snapshot */
    rt_window_log_reset(&wlog);
    atomic_store(&n_outside, 0);
    if (restart)
        pageout_start();
}

const rt_sampler_ops rt_sampler_pageout_ops = {
    .name = "pageout",
    .source = OT_SRC_PAGEOUT,
    .init = pageout_init,
    .start = pageout_start,
    .stop = pageout_stop,
    .stats = pageout_stats,
    .fork_child = pageout_fork_child,
};
