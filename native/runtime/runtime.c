/*
 * Runtime lifecycle: settings, the trace file, threads, fork and exit.
 *
 * Start-up runs in a constructor (before the program's own constructors). Until it
 * completes, interposed calls pass straight through. Exit: an on_exit handler (it sees
 * the exit status) and a destructor (for dlclose or exits that skip on_exit) both call
 * finish(), which runs once: stop the sampler, stop the flusher, flush every thread
 * buffer, then SAMPLER_STATS and END.
 */
#define _GNU_SOURCE
#include "config.h"
#include "context.h"
#include "maps.h"
#include "memcg.h"
#include "phase.h"
#include "arena.h"
#include "placement.h"
#include "interpose_signal.h"
#include "real.h"
#include "registry.h"
#include "rt.h"
#include "sampler.h"
#include "site_pace.h"
#include "statics.h"
#include "track.h"
#include "writer.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static rt_config rt_cfg;

static const rt_sampler_ops *sampler;
static _Atomic int finished;
static uint64_t start_mono;

static pthread_t flusher;
static int flusher_started;
static pthread_mutex_t flush_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t flush_cond;
static int flush_stop;

/* ---- threads --------------------------------------------------------------------- */

static void *flush_loop(void *arg)
{
    (void)arg;
    rt_guard = 1;
    rt_thread_stay_home();
    pthread_mutex_lock(&flush_lock);
    while (!flush_stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)rt_cfg.flush_ms * 1000000ULL;
        ts.tv_sec += (time_t)(ns / 1000000000ULL);
        ts.tv_nsec = (long)(ns % 1000000000ULL);
        pthread_cond_timedwait(&flush_cond, &flush_lock, &ts);
        if (flush_stop)
            break;
        pthread_mutex_unlock(&flush_lock);
        rt_flush_all(&rt_w, 0);
        pthread_mutex_lock(&flush_lock);
    }
    pthread_mutex_unlock(&flush_lock);
    return NULL;
}

static void start_threads(void)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&flush_cond, &ca);
    flush_stop = 0;
    flusher_started = pthread_create(&flusher, NULL, flush_loop, NULL) == 0;
    if (!flusher_started)
        rt_log(1, "cannot start the flush thread; records are written when buffers fill");
    if (sampler && sampler->start() != 0)
        sampler = NULL;
    rt_signal_install_flush();
}

/* ---- the trace file -------------------------------------------------------------- */

/* 1 if the file at fd holds no ALLOC, FREE or SAMPLE block (only header, PROCESS, MODULE,
 * CONTEXT): left by a forked child that exec'd before recording anything. */
static int holds_no_events(int fd)
{
    unsigned char *buf = rt_sys_mmap(65536);
    if (!buf)
        return 0;
    long n = pread(fd, buf, 65536, 0);
    int empty = n >= (long)sizeof(ot_file_header) && n < 65536;
    for (long at = sizeof(ot_file_header); empty && at + (long)sizeof(ot_block_header) <= n;) {
        ot_block_header h;
        memcpy(&h, buf + at, sizeof h);
        if (h.magic != OT_BLOCK_MAGIC ||
            (h.tag != OT_TAG_PROCESS && h.tag != OT_TAG_MODULE && h.tag != OT_TAG_CONTEXT))
            empty = 0;
        at += (long)sizeof h + h.payload_bytes;
    }
    rt_sys_munmap(buf, 65536);
    return empty;
}

static int open_trace_file(void)
{
    char name[64];
    int pid = (int)getpid();
    int dirfd = rt_trace_dir_open(rt_cfg.output);
    if (dirfd < 0)
        return dirfd;
    int fd = -EEXIST;
    for (int i = 0; i < 100; i++) {
        /* a process that execs keeps its pid: later images get proc-<pid>-<i>.otr */
        if (i == 0)
            snprintf(name, sizeof name, "proc-%d.otr", pid);
        else
            snprintf(name, sizeof name, "proc-%d-%d.otr", pid, i);
        fd = rt_trace_file_create(dirfd, name);
        if (fd >= 0 || fd != -EEXIST)
            break;
        /* a process that exec'd: reuse its file when the old image recorded nothing */
        fd = rt_trace_file_reopen(dirfd, name);
        if (fd >= 0 && holds_no_events(fd) && ftruncate(fd, 0) == 0)
            break;
        if (fd >= 0)
            close(fd);
        fd = -EEXIST;
    }
    close(dirfd);
    return fd;
}

/* PROCESS record: pid, ppid, time, argc, config_len, then exe, args, config. */
static void write_process_record(void)
{
    size_t cap = RT_VAR_BLOCK_BYTES - sizeof(ot_block_header) - 16;
    unsigned char *rec = rt_sys_mmap(cap + 8192);
    char *cmd = rt_sys_mmap(8192);
    if (!rec || !cmd)
        return;
    ot_process_record h = {
        .pid = (uint32_t)getpid(), .ppid = (uint32_t)getppid(), .time_ns = start_mono};
    size_t at = sizeof h;
    char exe[4096];
    long n = syscall(SYS_readlink, "/proc/self/exe", exe, sizeof exe);
    uint32_t len = n > 0 ? (uint32_t)n : 0;
    memcpy(rec + at, &len, 4);
    memcpy(rec + at + 4, exe, len);
    at += 4 + len;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    long got = 0;
    if (fd >= 0) {
        for (long r; got < 8191 && (r = syscall(SYS_read, fd, cmd + got, 8191 - got)) > 0;)
            got += r;
        close(fd);
    }
    char cfgtext[2048 + 256];
    size_t cfglen = rt_config_text(&rt_cfg, cfgtext, 2048);
    cfglen += rt_place_process_notes(cfgtext + cfglen, sizeof cfgtext - cfglen);
    uint32_t argc = 0;
    for (long i = 0; i < got;) {
        long j = i;
        while (j < got && cmd[j])
            j++;
        uint32_t alen = (uint32_t)(j - i);
        if (at + 4 + alen + cfglen > cap)
            break;
        memcpy(rec + at, &alen, 4);
        memcpy(rec + at + 4, cmd + i, alen);
        at += 4 + alen;
        argc++;
        i = j + 1;
    }
    h.argc = argc;
    h.config_len = (uint32_t)cfglen;
    memcpy(rec, &h, sizeof h);
    memcpy(rec + at, cfgtext, cfglen);
    at += cfglen;
    rt_write_var_record(&rt_w, OT_TAG_PROCESS, rec, (uint32_t)at, NULL, 0, NULL, 0, NULL, 0);
    rt_sys_munmap(rec, cap + 8192);
    rt_sys_munmap(cmd, 8192);
}

static int begin_file(void)
{
    /* a plan without OBJTIER_OUTPUT: enforcement runs, records go to /dev/null */
    int fd =
        rt_cfg.output[0] ? open_trace_file() : open("/dev/null", O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        rt_log(1, "cannot create a trace file in %s: %s; not recording", rt_cfg.output,
               strerror(-fd));
        return -1;
    }
    struct timespec real;
    clock_gettime(CLOCK_REALTIME, &real);
    start_mono = rt_now_ns();
    if (rt_writer_open(&rt_w, fd, (uint32_t)getpid(), (uint32_t)getppid(), start_mono,
                       (uint64_t)real.tv_sec * 1000000000ULL + (uint64_t)real.tv_nsec) != 0) {
        rt_log(1, "cannot write the trace header; not recording");
        close(fd);
        return -1;
    }
    write_process_record();
    return 0;
}

/* ---- fork ------------------------------------------------------------------------ */

static void fork_prepare(void)
{
    if (!rt_active())
        return;
    rt_guard++;
    if (sampler && sampler->fork_prepare)
        sampler->fork_prepare();
    /* lock order: placement (whose allocation hook computes context keys) before context */
    rt_place_fork_prepare();
    rt_context_lock();
    rt_maps_lock();
    rt_reg_lock_all();
    pthread_mutex_lock(&rt_w.var_lock);
}

static void fork_parent(void)
{
    if (!rt_active())
        return;
    pthread_mutex_unlock(&rt_w.var_lock);
    rt_reg_unlock_all();
    rt_maps_unlock();
    rt_context_unlock();
    rt_place_fork_parent();
    if (sampler && sampler->fork_parent)
        sampler->fork_parent();
    rt_guard--;
}

static void fork_child(void)
{
    if (!rt_active())
        return;
    rt_tid_reset();
    rt_reg_reinit_locks();
    rt_maps_reset();
    rt_context_after_fork_child();
    /* objects inherited from the parent belong to the parent's trace: forget them */
    rt_reg_init();
    rt_thread_buffers_after_fork_child();
    flusher_started = 0;
    int follow = rt_cfg.follow_forks;
    if (follow) {
        rt_site_pace_fork_child();
        int old_fd = rt_w.fd;
        rt_tbuf *buffers = atomic_load(&rt_w.head); /* begin_file re-initializes the writer */
        if (begin_file() != 0)
            follow = 0;
        atomic_store(&rt_w.head, buffers);
        close(old_fd);
    }
    if (!follow) {
        /* never write into the parent's file */
        atomic_store(&rt_min_size, UINT64_MAX);
        rt_site_pace_stop();
        atomic_store(&rt_state, RT_PASSIVE);
        rt_w.fd = -1;
    }
    if (sampler)
        sampler->fork_child(follow);
    if (follow) {
        pthread_mutex_init(&flush_lock, NULL);
        atomic_store(&finished, 0);
        const rt_sampler_ops *keep = sampler;
        sampler = NULL; /* already restarted by fork_child */
        start_threads();
        sampler = keep;
    }
    rt_phase_fork_child();
    rt_place_fork_child(follow);
    rt_guard--;
}

/* ---- start and finish ------------------------------------------------------------ */

static void finish(int status, int have_status)
{
    if (atomic_exchange(&finished, 1) || !rt_active())
        return;
    rt_guard++;
    if (sampler)
        sampler->stop();
    rt_thread_stop(flusher, &flush_lock, &flush_cond, &flush_stop, &flusher_started);
    rt_place_finish();
    atomic_store(&rt_min_size, UINT64_MAX);
    rt_site_pace_stop();
    atomic_store(&rt_state, RT_CLOSED);
    rt_flush_all(&rt_w, 1);
    rt_site_pace_write_counters();
    if (sampler) {
        ot_sampler_stats_record s;
        sampler->stats(&s);
        s.time_ns = rt_now_ns();
        unsigned char blk[sizeof(ot_block_header) + sizeof s];
        memcpy(blk + sizeof(ot_block_header), &s, sizeof s);
        rt_write_block(&rt_w, blk, OT_TAG_SAMPLER_STATS, sizeof s, sizeof s, 1);
    }
    ot_end_record e = {.time_ns = rt_now_ns(),
                       .records = atomic_load(&rt_w.records),
                       .exit_status = have_status ? (uint32_t)status : UINT32_MAX};
    unsigned char blk[sizeof(ot_block_header) + sizeof e];
    memcpy(blk + sizeof(ot_block_header), &e, sizeof e);
    rt_write_block(&rt_w, blk, OT_TAG_END, sizeof e, sizeof e, 1);
    int fd = rt_w.fd;
    rt_w.fd = -1;
    close(fd);
    rt_guard--;
}

static void on_exit_handler(int status, void *arg)
{
    (void)arg;
    finish(status, 1);
}

static const char *env_get(const char *name)
{
    return getenv(name);
}

/* Only the first recording process records unless OBJTIER_FOLLOW_FORKS=1: it leaves its
 * pid in OBJTIER_ROOT_PID for exec'd descendants to see. */
static int is_root_process(void)
{
    const char *root = getenv("OBJTIER_ROOT_PID");
    char mine[24];
    snprintf(mine, sizeof mine, "%d", (int)getpid());
    if (!root || !*root) {
        setenv("OBJTIER_ROOT_PID", mine, 1);
        return 1;
    }
    return strcmp(root, mine) == 0;
}

__attribute__((constructor(101))) static void rt_start(void)
{
    int expect = RT_UNINIT;
    if (!atomic_compare_exchange_strong(&rt_state, &expect, RT_INITIALIZING))
        return;
    rt_guard++;
    rt_real_init();
    long pg = sysconf(_SC_PAGESIZE);
    rt_page_bytes = pg > 0 ? (size_t)pg : 4096;
    char err[256];
    int state = RT_PASSIVE;
    if (rt_config_load(&rt_cfg, env_get, err, sizeof err) != 0) {
        rt_log(1, "%s; not recording", err);
        goto out;
    }
    rt_log_level = rt_cfg.log;
    int arena_all = strcmp(rt_cfg.arena, "all") == 0; /* arenas with no plan (arena.h) */
    if (!rt_cfg.output[0] && !rt_cfg.plan[0] && !arena_all)
        goto out;
    if (!is_root_process() && !rt_cfg.follow_forks)
        goto out;
    if (!rt_place_init(&rt_cfg, rt_cfg.output[0] != 0) && !rt_cfg.output[0] && !arena_all)
        goto out; /* no usable plan or trace: nothing to do */
    if (rt_reg_init() != 0 || rt_context_init(rt_cfg.stack_depth) != 0) {
        rt_log(1, "out of memory at start-up; not recording");
        goto out;
    }
    if (rt_cfg.sampler == RT_SAMPLER_AUTO) /* before the PROCESS record names it */
        rt_cfg.sampler = rt_cfg.output[0]
                             ? rt_sampler_auto(rt_cfg.sampler_reason, sizeof rt_cfg.sampler_reason)
                             : RT_SAMPLER_NONE;
    if (begin_file() != 0)
        goto out;
    rt_thread_buffers_init();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    static const rt_signal_ops signal_ops = {.install = rt_signal_install,
                                             .chain = rt_signal_chain};
    rt_fault_set_signal_ops(&signal_ops);
    /* no trace, no samples */
    sampler = rt_cfg.output[0] ? rt_sampler_for(rt_cfg.sampler) : NULL;
    if (sampler && sampler->init(&rt_cfg) != 0)
        sampler = NULL;
    atomic_store(&rt_min_size, rt_cfg.min_size);
    rt_site_pace_start(rt_cfg.output[0] ? rt_cfg.site_period : 0, rt_cfg.overhead_bp);
    state = RT_ACTIVE;
    atomic_store(&rt_state, state);
    /* under a memory limit the background threads keep to this CPU (rt.h) */
    rt_home_cpu = rt_memcg_self()->limit != UINT64_MAX ? sched_getcpu() : -1;
    start_threads();
    rt_place_start();
    rt_sarena_init(&rt_cfg);
out:
    atomic_store(&rt_state, state);
    rt_guard--;
}

/* on_exit must be registered after libc registered the dynamic linker's fini (which runs
 * every destructor, ours included), i.e. once main is about to run: wrap main. */
typedef int (*main_fn)(int, char **, char **);
static main_fn real_main;

static int wrapped_main(int argc, char **argv, char **envp)
{
    if (rt_active())
        on_exit(on_exit_handler, NULL);
    if (rt_active() && rt_cfg.statics) /* every DT_NEEDED module is loaded by now */
        rt_statics_register(rt_cfg.min_size, rt_on_static);
    return real_main(argc, argv, envp);
}

int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void *stack_end)
{
    int (*next)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);
    rt_real_init();
    *(void **)&next = dlsym(RTLD_NEXT, "__libc_start_main");
    real_main = main;
    return next(wrapped_main, argc, argv, init, fini, rtld_fini, stack_end);
}

__attribute__((destructor(101))) static void rt_stop(void)
{
    finish(0, 0);
}
