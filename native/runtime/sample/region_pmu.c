/*
 * Hardware counters read at region boundaries (the phase markers), for
 * `objtier camat --source pmu --regions`.
 *
 * OBJTIER_REGION_PMU = "term=type:config[,term=type:config...]" (at most RP_MAX_EVENTS
 * events; type and config as perf_event_attr takes them, decimal or 0x-hex; term a name of
 * [a-z0-9_], at most 31 bytes) turns it on. Each thread that calls a marker opens its own
 * counting groups of those events on itself (user space only, not inherited) at its first
 * marker, and reads them at every later marker: the counts since its previous
 * marker belong to the phase that marker entered (0 = outside every phase). A thread that
 * exits, and the thread that calls exit(), read once more for the phase still in force;
 * threads still running at exit lose the counts since their last marker.
 *
 * Records (no format change: the COUNTER_DEF/COUNTERS records of the trace format)
 *   COUNTER_DEF name "camat.pmu.<term>.phase.<id>", unit "events": <id> is the phase's
 *   name id (NAME record, 0 = outside every phase).
 *   COUNTERS value: the process's cumulative count of that term in that phase so far, over
 *   all threads, each read scaled by its group's time enabled / time running; the last
 *   (largest) value is the total.
 *   A refused perf_event_open: COUNTER_DEF "camat.pmu.refused.<term>" with one COUNTERS
 *   record holding the errno. The program runs on unaffected; later threads do not retry.
 *
 * Invariants
 *   - Runs with rt_guard raised (called from the markers or the exit paths only).
 *   - tls_group_state: 0 = not opened, 1 = open (tls_fd valid), -1 = refused or disabled.
 *   - leader_of[i] <= i; leader_of[leader_of[i]] == leader_of[i]; a group's members are read
 *     back in ascending event index (the order they were opened in).
 *   - One group per PMU: the events of one PMU (hardware, raw and cache events share the
 *     CPU's; cpu-clock and task-clock each have a PMU of their own; the other software events
 *     share one; any other type is its own) form a group led by the first of them in the
 *     spec. A group never mixes PMUs: on kernel 6.18 a task-clock sibling of a page-faults
 *     leader (or the reverse) is left unscheduled for much of the run (time_running 0 in 4
 *     of 6 runs) while the leader counts, and a group read carries the leader's times only.
 *   - A leader's fd is read only while it is still the file it was at open (device and inode
 *     of the perf anon inode): a program that closed it and reused the number for a pipe or a
 *     file is never read from; the thread then stops counting. A forked child closes the
 *     parent thread's fds only while every one of them is still its perf file.
 *   - totals[] and emitted[] are guarded by lock.
 */
#define _GNU_SOURCE
#include "region_pmu.h"
#include "rt.h"
#include "writer.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RP_MAX_EVENTS 8
#define RP_MAX_PHASES 4096 /* phase.c's MAX_NAMES; ids above are not counted */
#define RP_TERM_BYTES 32

typedef struct {
    char term[RP_TERM_BYTES];
    uint32_t type;
    uint64_t config;
} rp_event;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t exit_key;
static int enabled; /* the variable parsed and at least one event */
static int refused_written;
static rp_event events[RP_MAX_EVENTS];
static uint32_t n_events;
static double *totals;   /* [(RP_MAX_PHASES + 1) * n_events], in the phase's events */
static uint8_t *emitted; /* COUNTER_DEF written for (phase, term) */

static RT_TLS int tls_group_state;
static uint8_t leader_of[RP_MAX_EVENTS]; /* the event leading event i's group */

static RT_TLS int tls_fd[RP_MAX_EVENTS];
static RT_TLS uint64_t tls_last[RP_MAX_EVENTS]; /* raw values at the previous read */
/* per leader index: the group's times at the previous read (ns) */
static RT_TLS uint64_t tls_enabled[RP_MAX_EVENTS], tls_running[RP_MAX_EVENTS];
/* per event: its fd's identity at open (device and inode of the perf anon inode) */
static RT_TLS dev_t tls_dev[RP_MAX_EVENTS];
static RT_TLS ino_t tls_ino[RP_MAX_EVENTS];
static RT_TLS uint32_t tls_phase; /* phase since this thread's last marker */

static int same_file(int fd, dev_t *dev, ino_t *ino, int remember)
{
    struct stat st;
    if (syscall(SYS_fstat, fd, &st) != 0)
        return 0;
    if (remember) {
        *dev = st.st_dev;
        *ino = st.st_ino;
        return 1;
    }
    return st.st_dev == *dev && st.st_ino == *ino;
}

/* "term=type:config,...": 0 when valid (events[] filled), -1 otherwise. */
static int parse_spec(const char *s)
{
    n_events = 0;
    while (*s) {
        if (n_events == RP_MAX_EVENTS)
            return -1;
        rp_event *e = &events[n_events];
        size_t n = 0;
        while (s[n] && s[n] != '=') {
            char c = s[n];
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') ||
                n + 1 >= RP_TERM_BYTES)
                return -1;
            n++;
        }
        if (n == 0 || s[n] != '=')
            return -1;
        memcpy(e->term, s, n);
        e->term[n] = 0;
        s += n + 1;
        char *end;
        errno = 0;
        unsigned long long type = strtoull(s, &end, 0);
        if (end == s || *end != ':' || errno || type > UINT32_MAX)
            return -1;
        s = end + 1;
        unsigned long long config = strtoull(s, &end, 0);
        if (end == s || errno || (*end && *end != ','))
            return -1;
        e->type = (uint32_t)type;
        e->config = config;
        n_events++;
        s = *end ? end + 1 : end;
    }
    return n_events ? 0 : -1;
}

static void thread_gone(void *arg);
static void process_exit(void);
static void assign_groups(void);

static void init_once(void)
{
    const char *spec = getenv("OBJTIER_REGION_PMU");
    if (!spec || !*spec)
        return;
    if (parse_spec(spec) != 0) {
        rt_log(1,
               "OBJTIER_REGION_PMU=%s is not term=type:config[,...] (at most %d events); "
               "no counters at region boundaries",
               spec, RP_MAX_EVENTS);
        return;
    }
    assign_groups();
    totals = rt_sys_mmap((size_t)(RP_MAX_PHASES + 1) * n_events * sizeof *totals);
    emitted = rt_sys_mmap((size_t)(RP_MAX_PHASES + 1) * n_events);
    if (!totals || !emitted || pthread_key_create(&exit_key, thread_gone) != 0)
        return;
    atexit(process_exit); /* registered after the runtime's exit handler: runs before it */
    enabled = 1;
}

static int perf_open(const rp_event *e, int group_fd)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = e->type;
    a.config = e->config;
    a.read_format =
        PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    return (int)syscall(SYS_perf_event_open, &a, 0, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
}

/* Writes a COUNTERS record of counter id (and first its COUNTER_DEF unless *defined); lock
 * held. */
static void write_value(uint32_t id, uint8_t *defined, const char *name, size_t name_len,
                        int64_t value)
{
    static const char unit[] = "events";
    ot_counter_def_record d = {
        .id = id, .unit_len = sizeof unit - 1, .name_len = (uint16_t)name_len};
    if (!*defined && rt_write_var_record(&rt_w, OT_TAG_COUNTER_DEF, &d, sizeof d, name,
                                         (uint32_t)name_len, unit, sizeof unit - 1, NULL, 0) == 0)
        *defined = 1;
    unsigned char blk[sizeof(ot_block_header) + sizeof(ot_counter_record)];
    ot_counter_record r = {.time_ns = rt_now_ns(), .id = id, .value = value};
    memcpy(blk + sizeof(ot_block_header), &r, sizeof r);
    rt_write_block(&rt_w, blk, OT_TAG_COUNTERS, sizeof r, sizeof r, 1);
}

static void close_group(int count)
{
    for (int i = 0; i < count; i++)
        syscall(SYS_close, tls_fd[i]);
}

/* The PMU an event is counted by (see the invariants): events with one key share a group. */
static uint64_t pmu_key(const rp_event *e)
{
    if (e->type == PERF_TYPE_HARDWARE || e->type == PERF_TYPE_HW_CACHE || e->type == PERF_TYPE_RAW)
        return PERF_TYPE_RAW;
    if (e->type == PERF_TYPE_SOFTWARE &&
        (e->config == PERF_COUNT_SW_CPU_CLOCK || e->config == PERF_COUNT_SW_TASK_CLOCK))
        return ((uint64_t)1 << 32) | e->config;
    return e->type;
}

static void assign_groups(void)
{
    for (uint32_t i = 0; i < n_events; i++) {
        leader_of[i] = (uint8_t)i;
        for (uint32_t j = 0; j < i; j++)
            if (pmu_key(&events[j]) == pmu_key(&events[i])) {
                leader_of[i] = (uint8_t)j;
                break;
            }
    }
}

/* Reads the group led by event `lead`: its members' deltas since the last read, scaled by the
 * group's time enabled / time running; 0 or -1. */
static int read_one_group(uint32_t lead, double *delta)
{
    uint64_t buf[3 + RP_MAX_EVENTS]; /* nr, time_enabled, time_running, values */
    uint32_t members = 0;
    for (uint32_t i = lead; i < n_events; i++)
        members += leader_of[i] == lead;
    if (!same_file(tls_fd[lead], &tls_dev[lead], &tls_ino[lead], 0))
        return -1;
    long got = syscall(SYS_read, tls_fd[lead], buf, sizeof buf);
    if (got < (long)((3 + members) * sizeof(uint64_t)) || buf[0] != members)
        return -1;
    uint64_t de = buf[1] - tls_enabled[lead], dr = buf[2] - tls_running[lead];
    double scale = dr ? (double)de / (double)dr : 0.0;
    uint32_t k = 0;
    for (uint32_t i = lead; i < n_events; i++) {
        if (leader_of[i] != lead)
            continue;
        uint64_t v = buf[3 + k++];
        if (delta)
            delta[i] = (double)(v - tls_last[i]) * scale;
        tls_last[i] = v;
    }
    tls_enabled[lead] = buf[1];
    tls_running[lead] = buf[2];
    return 0;
}

/* Reads every group of this thread; 0, or -1 when any one cannot be read. */
static int read_group(double *delta)
{
    for (uint32_t i = 0; i < n_events; i++)
        if (leader_of[i] == i && read_one_group(i, delta) != 0)
            return -1;
    return 0;
}

/* 1 while every fd is still the file it was at open. */
static int groups_still_ours(void)
{
    for (uint32_t i = 0; i < n_events; i++)
        if (!same_file(tls_fd[i], &tls_dev[i], &tls_ino[i], 0))
            return 0;
    return 1;
}

static void open_group(void)
{
    for (uint32_t i = 0; i < n_events; i++) {
        int fd = perf_open(&events[i], leader_of[i] == i ? -1 : tls_fd[leader_of[i]]);
        if (fd < 0) {
            int err = errno;
            close_group((int)i);
            tls_group_state = -1;
            pthread_mutex_lock(&lock);
            if (!refused_written && rt_active()) {
                char name[64];
                int n = snprintf(name, sizeof name, "camat.pmu.refused.%s", events[i].term);
                uint8_t defined = 0; /* an id past the per-phase ones */
                write_value((RP_MAX_PHASES + 1) * RP_MAX_EVENTS, &defined, name, (size_t)n, err);
                refused_written = 1;
                rt_log(1,
                       "perf_event_open(%s, type %u, config 0x%llx) refused: %s; no counters "
                       "at region boundaries",
                       events[i].term, events[i].type, (unsigned long long)events[i].config,
                       strerror(err));
            }
            pthread_mutex_unlock(&lock);
            return;
        }
        tls_fd[i] = fd;
        if (!same_file(fd, &tls_dev[i], &tls_ino[i], 1)) {
            close_group((int)i + 1);
            tls_group_state = -1;
            return;
        }
    }
    memset(tls_enabled, 0, sizeof tls_enabled);
    memset(tls_running, 0, sizeof tls_running);
    memset(tls_last, 0, sizeof tls_last);
    if (read_group(NULL) != 0) {
        close_group((int)n_events);
        tls_group_state = -1;
        return;
    }
    tls_group_state = 1;
    pthread_setspecific(exit_key, (void *)1);
}

/* Reads the group and adds the counts since the last read to phase `phase`. */
static void attribute(uint32_t phase)
{
    double delta[RP_MAX_EVENTS];
    if (read_group(delta) != 0) { /* closed or replaced by the program: stop, never retry */
        tls_group_state = -1;
        return;
    }
    if (phase > RP_MAX_PHASES || !rt_active())
        return;
    pthread_mutex_lock(&lock);
    for (uint32_t i = 0; i < n_events; i++) {
        uint32_t id = phase * n_events + i;
        totals[id] += delta[i];
        char name[96];
        int n = snprintf(name, sizeof name, "camat.pmu.%s.phase.%u", events[i].term, phase);
        write_value(id, &emitted[id], name, (size_t)n, (int64_t)(totals[id] + 0.5));
    }
    pthread_mutex_unlock(&lock);
}

void rt_region_pmu_boundary(uint32_t entered)
{
    pthread_once(&once, init_once);
    if (!enabled || tls_group_state < 0)
        return;
    if (tls_group_state == 0)
        open_group();
    else
        attribute(tls_phase);
    tls_phase = entered;
}

static void thread_gone(void *arg)
{
    (void)arg;
    if (tls_group_state != 1)
        return;
    rt_guard++;
    attribute(tls_phase);
    /* attribute stops on a replaced leader; a replaced member fd is the program's now */
    if (tls_group_state == 1 && groups_still_ours())
        close_group((int)n_events);
    tls_group_state = -1;
    rt_guard--;
}

static void process_exit(void)
{
    thread_gone(NULL);
}

void rt_region_pmu_fork_child(void)
{
    /* the parent's thread's counters: not this process's (closed only while still ours) */
    if (tls_group_state == 1 && groups_still_ours())
        close_group((int)n_events);
    tls_group_state = 0;
    tls_phase = 0;
    pthread_mutex_init(&lock, NULL);
    refused_written = 0;
    if (totals)
        memset(totals, 0, (size_t)(RP_MAX_PHASES + 1) * n_events * sizeof *totals);
    if (emitted)
        memset(emitted, 0, (size_t)(RP_MAX_PHASES + 1) * n_events);
}
