/*
 * perf sampler: perf_event_open on the whole process (pid 0, one event per CPU because
 * inherited per-task events cannot be mmapped; inherit=1 so threads created later are
 * covered; inherit_thread so forked children are not).
 *
 * Event choice, best first:
 *   1. Intel PEBS: cpu/mem-loads/ (with its ldlat term) and cpu/mem-stores/, precise_ip,
 *      PERF_SAMPLE_ADDR|TID|TIME|PERIOD|WEIGHT_STRUCT|DATA_SRC -> source PEBS, level,
 *      tlb and load latency (cycles) from the data source / weight.
 *   2. AMD IBS op: type from /sys/bus/event_source/devices/ibs_op/type, same fields.
 *   3. Software page faults (any machine): PERF_COUNT_SW_PAGE_FAULTS in frequency mode at
 *      OBJTIER_RATE samples/s, and PERF_COUNT_SW_PAGE_FAULTS_MAJ at period 1 (every major
 *      fault: on a swap tier a major fault is a slow-tier access) -> source PERF_SWFAULT,
 *      flags MAJOR and level SWAP for the latter.
 * The hardware paths need a PMU; this code is compiled and the software path runs
 * everywhere, the hardware paths only where a PMU exists (not on the CI machines).
 *
 * Times: attr.use_clockid with CLOCK_MONOTONIC, so sample times match ALLOC/FREE times.
 * A reader thread drains each ring buffer (copying records that wrap around the end)
 * every OBJTIER_FLUSH_MS or when a ring is a quarter full; PERF_RECORD_LOST counts go to
 * the stats' `lost`. A failing perf_event_open is logged once; the program runs on
 * without samples.
 */
#define _GNU_SOURCE
#include "sampler.h"
#include "perf_ring.h"
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
#include <unistd.h>

#define MAX_EVENTS 512 /* events x CPUs */
#define RING_PAGES 64  /* data pages per ring (power of two) */

typedef struct {
    int fd;
    void *ring;      /* 1 metadata page + RING_PAGES data pages */
    uint16_t source; /* enum ot_sample_source */
    uint16_t flags;  /* OT_SAMPLE_* added to every sample */
    uint8_t level;   /* level when the event cannot tell (SWAP for major faults) */
    uint64_t sample_type;
} event;

static const rt_config *cfg;
static event events[MAX_EVENTS];
static int n_events;
static pthread_t reader;
static int reader_started;
static _Atomic int stop_flag;
static uint32_t my_pid;
static _Atomic uint64_t n_samples, n_lost;
static uint16_t main_source = OT_SRC_PERF_SWFAULT;

/* The kernel refuses to mmap an inherited per-task event (cpu == -1), so every event is
 * opened once per CPU: pid 0 (this process and, by inheritance, its threads) on cpu c. */
static int n_cpus = 1;

/* A small sysfs file without its trailing newline and spaces; 0, or -1 when unreadable or
 * empty. */
static int read_small_file(const char *path, char *buf, size_t cap)
{
    int n = rt_sys_read_small(path, buf, cap);
    if (n <= 0)
        return -1;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = 0;
    return 0;
}

/* Applies "term=value,..." (a sysfs event description) to attr using the PMU's format
 * files ("config:0-7", "config1:0-15"). 0 or -1. */
static int apply_event_terms(const char *pmu, const char *desc, struct perf_event_attr *a)
{
    char copy[256];
    snprintf(copy, sizeof copy, "%s", desc);
    char *save = NULL;
    for (char *term = strtok_r(copy, ",", &save); term; term = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(term, '=');
        uint64_t value = 1;
        if (eq) {
            *eq = 0;
            value = strtoull(eq + 1, NULL, 0);
        }
        char path[256], fmt[128];
        snprintf(path, sizeof path, "/sys/bus/event_source/devices/%s/format/%s", pmu, term);
        if (read_small_file(path, fmt, sizeof fmt) != 0)
            return -1;
        char *colon = strchr(fmt, ':');
        if (!colon)
            return -1;
        *colon = 0;
        __u64 *field = strcmp(fmt, "config") == 0    ? &a->config
                       : strcmp(fmt, "config1") == 0 ? &a->config1
                       : strcmp(fmt, "config2") == 0 ? &a->config2
                                                     : NULL;
        if (!field)
            return -1;
        unsigned lo = (unsigned)strtoul(colon + 1, &colon, 10), hi = lo;
        if (*colon == '-')
            hi = (unsigned)strtoul(colon + 1, NULL, 10);
        uint64_t mask = (hi - lo == 63) ? ~0ULL : ((1ULL << (hi - lo + 1)) - 1);
        *field |= (value & mask) << lo;
    }
    return 0;
}

static void base_attr(struct perf_event_attr *a)
{
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    a->sample_type =
        PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_PERIOD;
    a->inherit = 1;
    a->inherit_thread = 1;
    a->exclude_kernel = 1;
    a->exclude_hv = 1;
    a->use_clockid = 1;
    a->clockid = CLOCK_MONOTONIC;
    a->watermark = 1;
    a->wakeup_watermark = RING_PAGES * 4096 / 4;
    a->disabled = 0;
}

static int add_event_cpu(struct perf_event_attr *a, int cpu, uint16_t source, uint16_t flags,
                         uint8_t level)
{
    if (n_events == MAX_EVENTS)
        return -ENOSPC;
    int fd;
    void *ring;
    int r = rt_perf_open_ring(a, cpu, RING_PAGES, &fd, &ring);
    if (r < 0 && (a->sample_type & PERF_SAMPLE_WEIGHT_STRUCT)) { /* before 5.12 */
        a->sample_type =
            (a->sample_type & ~(uint64_t)PERF_SAMPLE_WEIGHT_STRUCT) | PERF_SAMPLE_WEIGHT;
        r = rt_perf_open_ring(a, cpu, RING_PAGES, &fd, &ring);
    }
    if (r < 0)
        return r;
    event *e = &events[n_events++];
    e->fd = fd;
    e->ring = ring;
    e->source = source;
    e->flags = flags;
    e->level = level;
    e->sample_type = a->sample_type;
    return 0;
}

/* One event on every CPU; 0 when at least one CPU has it. */
static int add_event(struct perf_event_attr *a, uint16_t source, uint16_t flags, uint8_t level)
{
    int ok = 0, err = -ENOENT;
    for (int cpu = 0; cpu < n_cpus; cpu++) {
        int r = add_event_cpu(a, cpu, source, flags, level);
        if (r == 0)
            ok++;
        else if (r != -ENODEV) /* offline CPU */
            err = r;
    }
    return ok ? 0 : err;
}

static int open_pebs(void)
{
    char desc[256];
    if (read_small_file("/sys/bus/event_source/devices/cpu/events/mem-loads", desc, sizeof desc) !=
        0)
        return -ENOENT;
    char type_s[32];
    if (read_small_file("/sys/bus/event_source/devices/cpu/type", type_s, sizeof type_s) != 0)
        return -ENOENT;
    struct perf_event_attr a;
    base_attr(&a);
    a.type = (uint32_t)atoi(type_s);
    if (apply_event_terms("cpu", desc, &a) != 0)
        return -EINVAL;
    if (strstr(desc, "ldlat") == NULL && a.config1 == 0)
        a.config1 = 3; /* load latency threshold, cycles */
    a.sample_type |= PERF_SAMPLE_WEIGHT_STRUCT | PERF_SAMPLE_DATA_SRC;
    a.precise_ip = 2;
    a.sample_period = 0;
    a.freq = 1;
    a.sample_freq = cfg->rate;
    int r = add_event(&a, OT_SRC_PERF_PEBS, 0, OT_LVL_UNKNOWN);
    if (r)
        return r;
    if (read_small_file("/sys/bus/event_source/devices/cpu/events/mem-stores", desc, sizeof desc) ==
        0) {
        base_attr(&a);
        a.type = (uint32_t)atoi(type_s);
        if (apply_event_terms("cpu", desc, &a) == 0) {
            a.sample_type |= PERF_SAMPLE_WEIGHT_STRUCT | PERF_SAMPLE_DATA_SRC;
            a.precise_ip = 2;
            a.freq = 1;
            a.sample_freq = cfg->rate;
            add_event(&a, OT_SRC_PERF_PEBS, 0, OT_LVL_UNKNOWN);
        }
    }
    return 0;
}

static int open_ibs(void)
{
    char type_s[32];
    if (read_small_file("/sys/bus/event_source/devices/ibs_op/type", type_s, sizeof type_s) != 0)
        return -ENOENT;
    struct perf_event_attr a;
    base_attr(&a);
    a.type = (uint32_t)atoi(type_s);
    a.sample_type |= PERF_SAMPLE_WEIGHT_STRUCT | PERF_SAMPLE_DATA_SRC;
    a.exclude_kernel = 0; /* IBS cannot filter by privilege level on older parts */
    a.freq = 1;
    a.sample_freq = cfg->rate;
    int r = add_event(&a, OT_SRC_PERF_IBS, 0, OT_LVL_UNKNOWN);
    if (r) {
        a.exclude_kernel = 1;
        r = add_event(&a, OT_SRC_PERF_IBS, 0, OT_LVL_UNKNOWN);
    }
    return r;
}

static int open_swfault(void)
{
    struct perf_event_attr a;
    base_attr(&a);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_PAGE_FAULTS;
    a.freq = 1;
    a.sample_freq = cfg->rate;
    int r = add_event(&a, OT_SRC_PERF_SWFAULT, 0, OT_LVL_UNKNOWN);
    if (r)
        return r;
    base_attr(&a);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_PAGE_FAULTS_MAJ;
    a.sample_period = 1;
    if (add_event(&a, OT_SRC_PERF_SWFAULT, OT_SAMPLE_MAJOR, OT_LVL_SWAP) != 0)
        rt_log(0, "perf sampler: major-fault event unavailable; minor faults only");
    return 0;
}

/* perf_mem_data_src -> header enums. */
static void decode_data_src(uint64_t v, ot_sample_record *s)
{
    union perf_mem_data_src d = {.val = v};
    if (d.mem_op & PERF_MEM_OP_STORE)
        s->flags |= OT_SAMPLE_WRITE | OT_SAMPLE_RW_KNOWN;
    else if (d.mem_op & PERF_MEM_OP_LOAD)
        s->flags |= OT_SAMPLE_RW_KNOWN;
    if (d.mem_dtlb & PERF_MEM_TLB_MISS)
        s->tlb = OT_TLB_MISS;
    else if (d.mem_dtlb & PERF_MEM_TLB_HIT)
        s->tlb = OT_TLB_HIT;
    switch (d.mem_lvl_num) {
    case PERF_MEM_LVLNUM_L1: s->level = OT_LVL_L1; return;
    case PERF_MEM_LVLNUM_LFB: s->level = OT_LVL_LFB; return;
    case PERF_MEM_LVLNUM_L2: s->level = OT_LVL_L2; return;
    case PERF_MEM_LVLNUM_L3: s->level = OT_LVL_L3; return;
    case PERF_MEM_LVLNUM_CXL: s->level = OT_LVL_CXL; return;
    case PERF_MEM_LVLNUM_PMEM: s->level = OT_LVL_PMEM; return;
    case PERF_MEM_LVLNUM_RAM:
        s->level = d.mem_remote ? OT_LVL_DRAM_REMOTE : OT_LVL_DRAM_LOCAL;
        return;
    default: break;
    }
    /* older kernels: the legacy bit field */
    if (d.mem_lvl & PERF_MEM_LVL_L1)
        s->level = OT_LVL_L1;
    else if (d.mem_lvl & PERF_MEM_LVL_LFB)
        s->level = OT_LVL_LFB;
    else if (d.mem_lvl & PERF_MEM_LVL_L2)
        s->level = OT_LVL_L2;
    else if (d.mem_lvl & PERF_MEM_LVL_L3)
        s->level = OT_LVL_L3;
    else if (d.mem_lvl & PERF_MEM_LVL_LOC_RAM)
        s->level = OT_LVL_DRAM_LOCAL;
    else if (d.mem_lvl & (PERF_MEM_LVL_REM_RAM1 | PERF_MEM_LVL_REM_RAM2))
        s->level = OT_LVL_DRAM_REMOTE;
    else if (d.mem_lvl & PERF_MEM_LVL_UNC)
        s->level = OT_LVL_UNCACHED;
}

/* One PERF_RECORD_SAMPLE body (after the header) in the layout sample_type implies. */
static void handle_sample(const event *e, const unsigned char *p)
{
    uint64_t t = e->sample_type;
    ot_sample_record s;
    memset(&s, 0, sizeof s);
    s.source = e->source;
    s.level = e->level;
    s.flags = e->flags;
    s.node = 0xFFFF;
    s.weight = 1;
    uint32_t pid = 0;
    if (t & PERF_SAMPLE_IP)
        p += 8;
    if (t & PERF_SAMPLE_TID) {
        memcpy(&pid, p, 4);
        memcpy(&s.tid, p + 4, 4);
        p += 8;
    }
    if (t & PERF_SAMPLE_TIME) {
        memcpy(&s.time_ns, p, 8);
        p += 8;
    }
    if (t & PERF_SAMPLE_ADDR) {
        memcpy(&s.addr, p, 8);
        p += 8;
    }
    if (t & PERF_SAMPLE_PERIOD) {
        uint64_t period;
        memcpy(&period, p, 8);
        s.weight = period > UINT32_MAX ? UINT32_MAX : (uint32_t)period;
        p += 8;
    }
    if (t & (PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT)) {
        uint64_t w;
        memcpy(&w, p, 8);
        /* WEIGHT_STRUCT: low 32 bits = var1_dw = access latency; WEIGHT: the whole value */
        uint64_t lat = (t & PERF_SAMPLE_WEIGHT_STRUCT) ? (w & 0xFFFFFFFFu) : w;
        s.latency = lat > UINT32_MAX ? UINT32_MAX : (uint32_t)lat;
        p += 8;
    }
    if (t & PERF_SAMPLE_DATA_SRC) {
        uint64_t v;
        memcpy(&v, p, 8);
        decode_data_src(v, &s);
        p += 8;
    }
    if (pid != my_pid)
        return; /* a child that inherited the event (kernels without inherit_thread) */
    if (rt_sample_emit(&s, 0))
        atomic_fetch_add(&n_samples, 1);
    else
        atomic_fetch_add(&n_lost, 1);
}

static void on_record(void *ctx, const struct perf_event_header *h, const unsigned char *rec)
{
    if (h->type == PERF_RECORD_SAMPLE)
        handle_sample(ctx, rec + sizeof *h);
    else if (h->type == PERF_RECORD_LOST) {
        uint64_t lost;
        memcpy(&lost, rec + sizeof *h + 8, 8); /* u64 id, u64 lost */
        atomic_fetch_add(&n_lost, lost);
    }
}

static void drain(event *e)
{
    rt_perf_ring_drain(e->ring, RING_PAGES, on_record, e);
}

static void *read_loop(void *arg)
{
    (void)arg;
    rt_guard = 1;
    rt_thread_stay_home();
    static struct pollfd pfd[MAX_EVENTS];
    for (int i = 0; i < n_events; i++)
        pfd[i] = (struct pollfd){.fd = events[i].fd, .events = POLLIN};
    while (!atomic_load(&stop_flag)) {
        poll(pfd, (nfds_t)n_events, (int)cfg->flush_ms);
        for (int i = 0; i < n_events; i++)
            drain(&events[i]);
    }
    for (int i = 0; i < n_events; i++)
        drain(&events[i]);
    return NULL;
}

static void close_events(void)
{
    for (int i = 0; i < n_events; i++) {
        munmap(events[i].ring, rt_perf_ring_bytes(RING_PAGES));
        close(events[i].fd);
    }
    n_events = 0;
}

static int perf_init(const rt_config *c)
{
    cfg = c;
    return 0;
}

static int perf_start(void)
{
    my_pid = (uint32_t)getpid();
    long c = sysconf(_SC_NPROCESSORS_CONF);
    n_cpus = c > 0 ? (int)c : 1;
    if (n_cpus > MAX_EVENTS / 2)
        n_cpus = MAX_EVENTS / 2;
    atomic_store(&stop_flag, 0);
    int r = open_pebs();
    if (r != 0)
        r = open_ibs();
    if (r != 0) {
        close_events();
        r = open_swfault();
    }
    if (r != 0 || n_events == 0) {
        rt_log(1, "perf sampler: perf_event_open failed: %s; recording without samples",
               strerror(-r));
        close_events();
        return r ? r : -ENOENT;
    }
    main_source = events[0].source;
    if (pthread_create(&reader, NULL, read_loop, NULL) != 0) {
        close_events();
        rt_log(1, "perf sampler: cannot start the reader thread; no samples");
        return -EAGAIN;
    }
    reader_started = 1;
    return 0;
}

static void perf_stop(void)
{
    if (!reader_started)
        return;
    for (int i = 0; i < n_events; i++)
        ioctl(events[i].fd, PERF_EVENT_IOC_DISABLE, 0);
    atomic_store(&stop_flag, 1);
    pthread_join(reader, NULL);
    reader_started = 0;
    close_events();
}

static void perf_stats(ot_sampler_stats_record *out)
{
    memset(out, 0, sizeof *out);
    out->source = main_source;
    out->samples = atomic_load(&n_samples);
    out->lost = atomic_load(&n_lost);
}

static void perf_fork_child(int restart)
{
    /* the parent's rings belong to the parent: drop them in the child */
    for (int i = 0; i < n_events; i++) {
        munmap(events[i].ring, rt_perf_ring_bytes(RING_PAGES));
        close(events[i].fd);
    }
    n_events = 0;
    reader_started = 0;
    atomic_store(&n_samples, 0);
    atomic_store(&n_lost, 0);
    if (restart)
        perf_start();
}

const rt_sampler_ops rt_sampler_perf_ops = {
    .name = "perf",
    .source = OT_SRC_PERF_SWFAULT,
    .init = perf_init,
    .start = perf_start,
    .stop = perf_stop,
    .stats = perf_stats,
    .fork_child = perf_fork_child,
};
