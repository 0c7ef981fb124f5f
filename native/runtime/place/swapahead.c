/*
 * Readahead through the swap cache for planned-slow memory; see swapahead.h.
 *
 * Signal: the process's page faults, every one (perf software event
 * PERF_COUNT_SW_PAGE_FAULTS, period 1, PERF_SAMPLE_ADDR = the faulting address; one event per
 * CPU with inherit, as the kernel refuses to mmap inherited per-task events). Needs no PMU.
 * Faults taken in kernel mode (copies of read() into a buffer) are excluded.
 *
 * Streams: a fault inside the extent of a planned object with a slow part continues a
 * stream when it lies 1..MAX_GAP pages after the stream's last fault in the same object,
 * else it starts one (replacing the stream least recently continued; N_STREAMS streams,
 * enough for a few threads sweeping a few objects). Once a stream has CONFIRM faults, the
 * window of pages after its newest fault is advised MADV_WILLNEED, and again each time the
 * stream comes within half a window of the end of what was advised. Faults that form no
 * ascending run (random access) advise nothing. Pages of the window that are resident
 * (mlocked fast pages, pages already faulted) cost the kernel a page-table walk, no I/O.
 * Faults on the advised pages are minor faults (swap-cache hits), still sampled, so they
 * keep the stream going.
 *
 * Invariants: only the readahead thread touches streams, extents and counters after start;
 * extents are refreshed whenever the source's generation changed (an object planned or
 * released, a phase change), which also ends every stream. Units: pages of rt_page_bytes.
 */
#define _GNU_SOURCE
#include "swapahead.h"
#include "perf_ring.h"
#include "rt.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_CPUS      256
#define RING_PAGES    16 /* data pages per CPU ring (power of two) */
#define WAKEUP_EVENTS 8  /* samples per wake-up of the thread */
#define N_STREAMS     16
#define MAX_GAP       32 /* pages between two faults of one stream */
#define CONFIRM       4  /* faults before a stream is advised */
#define MAX_EXTENTS   4096

typedef struct {
    uint64_t lo, hi; /* the object's extent, pages */
    uint64_t last;   /* page of the stream's newest fault */
    uint64_t ahead;  /* first page not advised yet */
    uint64_t faults; /* faults in the stream */
    uint64_t stamp;  /* when last continued (sample count) */
} stream;

static int fds[MAX_CPUS], n_fds = 0, stop_fd = -1;
static void *rings[MAX_CPUS];
static pthread_t thread;
static int running;
static uint64_t window_pages;
static const rt_ahead_source *source;

static stream streams[N_STREAMS];
static rt_extent extents[MAX_EXTENTS];
static size_t n_extents;
static uint64_t generation = UINT64_MAX, samples;
static uint64_t advised_pages, windows, calls_failed;

static void refresh_extents(uint64_t gen)
{
    n_extents = source->slow_objects(extents, MAX_EXTENTS);
    memset(streams, 0, sizeof streams);
    generation = gen;
}

/* The extent holding page p (extents are sorted and disjoint), or NULL. */
static const rt_extent *extent_of(uint64_t p)
{
    size_t lo = 0, hi = n_extents;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (extents[mid].hi <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n_extents && extents[lo].lo <= p ? &extents[lo] : NULL;
}

static void on_fault(uint64_t addr)
{
    uint64_t gen = atomic_load_explicit(source->generation, memory_order_acquire);
    if (gen != generation)
        refresh_extents(gen);
    uint64_t p = addr / rt_page_bytes;
    const rt_extent *x = extent_of(p);
    samples++;
    if (!x)
        return;
    stream *s = NULL, *oldest = &streams[0];
    for (int i = 0; i < N_STREAMS; i++) {
        stream *t = &streams[i];
        if (t->lo == x->lo && t->faults && p > t->last && p <= t->last + MAX_GAP) {
            s = t;
            break;
        }
        if (t->stamp < oldest->stamp)
            oldest = t;
    }
    if (!s) {
        *oldest = (stream){
            .lo = x->lo, .hi = x->hi, .last = p, .ahead = p + 1, .faults = 1, .stamp = samples};
        return;
    }
    s->last = p;
    s->faults++;
    s->stamp = samples;
    if (s->faults < CONFIRM || s->ahead >= p + window_pages / 2 || s->ahead >= s->hi)
        return;
    uint64_t from = s->ahead > p + 1 ? s->ahead : p + 1;
    uint64_t to = p + window_pages < s->hi ? p + window_pages : s->hi;
    if (from < to) {
        if (madvise((void *)(uintptr_t)(from * rt_page_bytes), (to - from) * rt_page_bytes,
                    MADV_WILLNEED) == 0) {
            advised_pages += to - from;
            windows++;
        } else
            calls_failed++; /* the object went away meanwhile: the next refresh drops it */
    }
    s->ahead = to;
}

static void on_record(void *ctx, const struct perf_event_header *h, const unsigned char *rec)
{
    (void)ctx;
    if (h->type == PERF_RECORD_SAMPLE && h->size >= sizeof *h + 8) {
        uint64_t addr; /* PERF_SAMPLE_ADDR alone: the record's body is the address */
        memcpy(&addr, rec + sizeof *h, sizeof addr);
        on_fault(addr);
    }
}

static void *ahead_loop(void *arg)
{
    (void)arg;
    rt_guard = 1;
    rt_thread_stay_home();
    struct pollfd p[MAX_CPUS + 1];
    for (int i = 0; i < n_fds; i++)
        p[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
    p[n_fds] = (struct pollfd){.fd = stop_fd, .events = POLLIN};
    for (;;) {
        if (poll(p, (nfds_t)n_fds + 1, 100) < 0 && errno != EINTR)
            break;
        if (p[n_fds].revents)
            break;
        for (int i = 0; i < n_fds; i++)
            rt_perf_ring_drain(rings[i], RING_PAGES, on_record, NULL);
    }
    return NULL;
}

static void close_events(void)
{
    for (int i = 0; i < n_fds; i++) {
        munmap(rings[i], rt_perf_ring_bytes(RING_PAGES));
        close(fds[i]);
    }
    n_fds = 0;
    if (stop_fd >= 0)
        close(stop_fd);
    stop_fd = -1;
}

void rt_ahead_start(uint64_t window_bytes, const rt_ahead_source *src)
{
    if (running || window_bytes < rt_page_bytes)
        return;
    source = src;
    window_pages = window_bytes / rt_page_bytes;
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_PAGE_FAULTS;
    a.sample_period = 1;
    a.sample_type = PERF_SAMPLE_ADDR;
    a.inherit = 1;
    a.inherit_thread = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.wakeup_events = WAKEUP_EVENTS;
    long cpus = sysconf(_SC_NPROCESSORS_CONF);
    int err = 0;
    for (long cpu = 0; cpu < cpus && cpu < MAX_CPUS; cpu++) {
        int r = rt_perf_open_ring(&a, (int)cpu, RING_PAGES, &fds[n_fds], &rings[n_fds]);
        if (r == 0)
            n_fds++;
        else if (r != -ENODEV) /* ENODEV: an offline CPU */
            err = -r;
    }
    stop_fd = eventfd(0, EFD_CLOEXEC);
    if (n_fds == 0 || stop_fd < 0) {
        rt_log(1, "readahead: cannot sample page faults (%s); running without readahead",
               strerror(err ? err : errno));
        close_events();
        return;
    }
    running = pthread_create(&thread, NULL, ahead_loop, NULL) == 0;
    if (!running) {
        rt_log(1, "readahead: cannot start its thread; running without readahead");
        close_events();
    }
}

void rt_ahead_stop(void)
{
    if (!running)
        return;
    uint64_t one = 1;
    if (write(stop_fd, &one, sizeof one) < 0)
        rt_log(1, "readahead: cannot wake its thread: %s", strerror(errno));
    pthread_join(thread, NULL);
    running = 0;
    close_events();
    rt_log(0, "readahead: %llu MiB advised in %llu windows (%llu faults seen%s)",
           (unsigned long long)(advised_pages * rt_page_bytes >> 20), (unsigned long long)windows,
           (unsigned long long)samples, calls_failed ? ", some windows refused" : "");
}

void rt_ahead_fork_child(void)
{
    running = 0;
    for (int i = 0; i < n_fds; i++) /* the parent's events; their rings are not inherited */
        close(fds[i]);
    n_fds = 0;
    if (stop_fd >= 0)
        close(stop_fd);
    stop_fd = -1;
    generation = UINT64_MAX;
    samples = advised_pages = windows = calls_failed = 0;
}
