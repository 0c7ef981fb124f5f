/*
 * wp sampler: first writes observed through userfaultfd asynchronous write-protect.
 *
 * A scanner thread walks the tracked objects with the shared scan pattern (sampler_scan.h).
 * Arming a window registers its range with a userfaultfd in write-protect mode
 * (UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED, kernel >= 6.7) and write-protects its
 * clusters (UFFDIO_WRITEPROTECT). With WP_ASYNC no handler exists: the kernel resolves a write
 * to a protected page itself (it clears the page's protection bit and lets the write go on),
 * for user code and for system calls alike. Every TICK_NS the scanner asks PAGEMAP_SCAN which
 * armed pages are now written (PAGE_IS_WRITTEN) and writes one SAMPLE per newly written page
 * (source WP, flags WRITE|RW_KNOWN, latency = scan time - arm time in microseconds, so at
 * most TICK_NS late). Ending the window unregisters the range (which drops the remaining
 * protection bits) and writes a WINDOW record, as the fault sampler does.
 *
 * Reads are invisible to this sampler: it measures the write side of objects only.
 *
 * Invariants
 *   - One thread (the scanner) arms, scans and writes records; no signal handler, no
 *     protection change the program can see (mprotect state and /proc/PID/maps keep their
 *     permissions; a registered range may appear split in maps while its window is armed).
 *   - A range the program registered with its own userfaultfd is skipped (EBUSY). While a
 *     window is armed, the program's own UFFDIO_REGISTER on that range fails with EBUSY: the
 *     one effect it could observe (documented in docs/runtime.md).
 *   - Rate: arming n pages takes n tokens, unwritten pages are refunded at the window's end;
 *     tokens accrue at OBJTIER_RATE per second.
 *   - A forked child keeps no registration and no protected page (the kernel drops both
 *     without UFFD_FEATURE_EVENT_FORK).
 */
#define _GNU_SOURCE
#include "sampler.h"
#include "rt.h"
#include "writer.h"
#include "sampler_scan.h"
#include "window_log.h"
#include "pagemap_scan.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Kernel ABI (include/uapi/linux/userfaultfd.h, Linux 6.7) for older headers. */
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

#define TICK_NS  5000000ULL  /* scan period while a window dwells, 5 ms */
#define DWELL_NS 50000000ULL /* a window is watched at most 50 ms */
#define REGIONS  256         /* page_region entries per PAGEMAP_SCAN call */

static const rt_config *cfg;
static pthread_t scanner;
static int scanner_started;
static _Atomic int stop_flag;
static int uffd = -1, pagemap_fd = -1;

static _Atomic uint64_t n_skipped;
static rt_window_log wlog = {.source = OT_SRC_WP};

static rt_scan scan;
static rt_scan_window win; /* win.pages == 0: no window */
static uint64_t w_arm_ns;
static unsigned w_touched_n;
static uint64_t w_touched[RT_MAX_WINDOW_PAGES / 64];
static rt_scan_budget budget; /* scanner thread only */
static struct page_region regions[REGIONS];

/* Samples for armed pages of the window written since the last scan. */
static void scan_written(void)
{
    uint64_t t = rt_now_ns();
    uint64_t at = win.start, end = win.start + win.len;
    while (at < end) {
        struct pm_scan_arg a = {.size = sizeof a,
                                .start = at,
                                .end = end,
                                .vec = (uint64_t)(uintptr_t)regions,
                                .vec_len = REGIONS,
                                .category_mask = PAGE_IS_WRITTEN,
                                .return_mask = PAGE_IS_WRITTEN};
        long n = ioctl(pagemap_fd, PAGEMAP_SCAN, &a);
        if (n < 0)
            return;
        for (long r = 0; r < n; r++)
            for (uint64_t p = regions[r].start; p < regions[r].end; p += rt_page_bytes) {
                int64_t i = rt_scan_armed_index(&win, p, rt_page_bytes);
                if (i < 0)
                    continue;
                uint64_t bit = 1ULL << (i & 63);
                if (w_touched[i / 64] & bit)
                    continue;
                w_touched[i / 64] |= bit;
                w_touched_n++;
                /* the writer is not known */
                rt_window_log_touch(&wlog, p, 0, OT_SAMPLE_WRITE | OT_SAMPLE_RW_KNOWN, t, w_arm_ns,
                                    0);
            }
        if (a.walk_end <= at || n < REGIONS)
            return;
        at = a.walk_end;
    }
}

static void end_window(void)
{
    if (!win.pages)
        return;
    scan_written();
    uint64_t now = rt_now_ns();
    struct uffdio_range range = {.start = win.start, .len = win.len};
    ioctl(uffd, UFFDIO_UNREGISTER, &range); /* drops the protection bits left */
    rt_window_log_end(&wlog, win.seq, win.start, w_arm_ns, now, (uint32_t)win.pages, w_touched_n);
    budget.tokens += (double)(win.pages - w_touched_n);
    win.pages = 0;
}

/* Arms the next window; 1 if one is armed. */
static int arm_next(void)
{
    for (int tries = 0; tries < 64; tries++) {
        if (!rt_scan_next(&scan, (uint64_t)budget.tokens, &win))
            return 0;
        struct uffdio_register reg = {.range = {.start = win.start, .len = win.len},
                                      .mode = UFFDIO_REGISTER_MODE_WP};
        if (ioctl(uffd, UFFDIO_REGISTER, &reg) != 0) {
            atomic_fetch_add(&n_skipped, 1); /* the program's own userfaultfd, or unsupported */
            win.pages = 0;
            continue;
        }
        memset(w_touched, 0, (win.pages + 63) / 64 * 8);
        rt_window_log_begin(&wlog);
        w_touched_n = 0;
        w_arm_ns = rt_now_ns();
        int ok = 1;
        for (uint64_t k = 0; k < win.m && ok; k++) {
            struct uffdio_writeprotect wp = {
                .range = {.start = rt_scan_cluster_at(&win, k, rt_page_bytes),
                          .len = rt_scan_cluster_pages(&win, k) * rt_page_bytes},
                .mode = UFFDIO_WRITEPROTECT_MODE_WP};
            ok = ioctl(uffd, UFFDIO_WRITEPROTECT, &wp) == 0;
        }
        if (!ok) {
            struct uffdio_range range = {.start = win.start, .len = win.len};
            ioctl(uffd, UFFDIO_UNREGISTER, &range);
            atomic_fetch_add(&n_skipped, 1);
            win.pages = 0;
            continue;
        }
        budget.tokens -= (double)win.pages;
        return 1;
    }
    return 0;
}

static void *scan_loop(void *arg)
{
    (void)arg;
    rt_guard = 1;
    rt_thread_stay_home();
    rt_scan_budget_init(&budget, cfg);
    while (!atomic_load(&stop_flag)) {
        rt_scan_budget_refill(&budget);
        if (budget.tokens < 1.0 || !arm_next()) {
            rt_scan_sleep_ns(TICK_NS);
            continue;
        }
        uint64_t until = w_arm_ns + DWELL_NS;
        do {
            rt_scan_sleep_ns(TICK_NS);
            scan_written();
        } while (!atomic_load(&stop_flag) && rt_now_ns() < until && w_touched_n < win.pages);
        end_window();
    }
    return NULL;
}

/* The userfaultfd with asynchronous write-protect, or -errno. */
static int open_uffd(void)
{
    long fd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    if (fd < 0 && errno == EINVAL)
        fd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    struct uffdio_api api = {.api = UFFD_API,
                             .features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED};
    if (ioctl((int)fd, UFFDIO_API, &api) != 0 || !(api.features & UFFD_FEATURE_WP_ASYNC)) {
        close((int)fd);
        return -EOPNOTSUPP;
    }
    return (int)fd;
}

static int wp_init(const rt_config *c)
{
    cfg = c;
    return 0;
}

static int wp_start(void)
{
    int fd = open_uffd();
    if (fd < 0) {
        rt_log(1,
               "wp sampler: no userfaultfd with asynchronous write-protect (%s; needs "
               "Linux 6.7 and vm.unprivileged_userfaultfd=1 or CAP_SYS_PTRACE); no samples",
               strerror(-fd));
        return fd;
    }
    uffd = fd;
    pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct pm_scan_arg probe = {.size = sizeof probe};
    if (pagemap_fd < 0 || (ioctl(pagemap_fd, PAGEMAP_SCAN, &probe) < 0 && errno == ENOTTY)) {
        rt_log(1, "wp sampler: no PAGEMAP_SCAN on /proc/self/pagemap (Linux 6.7); no samples");
        if (pagemap_fd >= 0)
            close(pagemap_fd);
        close(uffd);
        uffd = pagemap_fd = -1;
        return -EOPNOTSUPP;
    }
    atomic_store(&stop_flag, 0);
    rt_scan_init(&scan, cfg);
    win.pages = 0;
    if (pthread_create(&scanner, NULL, scan_loop, NULL) != 0) {
        close(pagemap_fd);
        close(uffd);
        uffd = pagemap_fd = -1;
        rt_log(1, "wp sampler: cannot start the scanner thread; no samples");
        return -EAGAIN;
    }
    scanner_started = 1;
    return 0;
}

static void wp_stop(void)
{
    if (!scanner_started)
        return;
    atomic_store(&stop_flag, 1);
    pthread_join(scanner, NULL);
    scanner_started = 0;
    rt_window_log_flush(&wlog);
    close(pagemap_fd);
    close(uffd); /* releasing the userfaultfd drops every registration left */
    uffd = pagemap_fd = -1;
    rt_scan_free(&scan);
}

static void wp_stats(ot_sampler_stats_record *out)
{
    rt_window_log_stats(&wlog, out);
}

static void wp_fork_child(int restart)
{
    /* the child's copy of the userfaultfd refers to the parent's address space */
    if (uffd >= 0)
        close(uffd);
    if (pagemap_fd >= 0)
        close(pagemap_fd);
    uffd = pagemap_fd = -1;
    scanner_started = 0;
    win.pages = 0;
    rt_scan_free(&scan);
    rt_window_log_reset(&wlog);
    if (restart)
        wp_start();
}

const rt_sampler_ops rt_sampler_wp_ops = {
    .name = "wp",
    .source = OT_SRC_WP,
    .init = wp_init,
    .start = wp_start,
    .stop = wp_stop,
    .stats = wp_stats,
    .fork_child = wp_fork_child,
};
