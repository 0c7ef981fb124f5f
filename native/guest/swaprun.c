/* swaprun: run one program inside a cgroup v2 memory cgroup and measure it, with the swap-tier
 * sidecars of a guest comparison running outside the program (objtier.harness.guest_swap).
 *
 *   swaprun --cgroup DIR --result FILE [--flush-ms N] [--reclaim] [--interval-ms N]
 *           [--target-pct F] [--max-probe F] [--timeout-s N] -- PROGRAM ARGS...
 *
 * The child moves itself into DIR (writes its pid to DIR/cgroup.procs) and execs PROGRAM; this
 * process stays in its own cgroup and meanwhile
 *   - reads DIR/memory.stat every --flush-ms ms (the stat-flush reader of compare; read only;
 *     0 = off);
 *   - with --reclaim, a thread runs a pressure-driven proactive reclaimer (TMO/senpai approach):
 *     every --interval-ms it reads the "some" total stall [us] from DIR/memory.pressure and,
 *     when the stall of the last interval was below --target-pct percent of the interval,
 *     writes   step = memory.current * max_probe * (1 - stall / target)   bytes (whole 4 KiB
 *     pages) to DIR/memory.reclaim; at or above target it backs off (writes nothing).
 *     memory.max is never written.
 * Wall time is CLOCK_MONOTONIC from fork to the child's exit (seen through a pidfd, so no
 * polling delay); user/system time and max RSS come from wait4. --timeout-s kills the child
 * (SIGKILL) after that many seconds.
 *
 * FILE gets key=value lines: status (exit status, or 128+signal), signal, timed_out, wall_ns,
 * user_us, sys_us, maxrss_kb, flush_ms, flush_reads, flush_max_gap_us, reclaim, intervals,
 * backoffs, reclaim_writes, reclaim_bytes, reclaim_short (writes answered EAGAIN: less
 * reclaimed than asked). Exit status of swaprun: 0 when FILE was written, 2 on bad usage, 3
 * when the child could not be started.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096ull

static const char *cgroup;
static double interval_ms = 1000.0, target_pct = 0.1, max_probe = 0.01;
static atomic_int stop;
static atomic_ullong intervals, backoffs, reclaim_writes, reclaim_bytes, reclaim_short;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The whole (small) file at DIR/name into buf, NUL-terminated; bytes read or -1. */
static ssize_t read_file(const char *name, char *buf, size_t cap)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", cgroup, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = 0;
    return n;
}

/* The "some" line's total= of memory.pressure [us]; -1 when absent. */
static long long some_total_us(void)
{
    char buf[512];
    if (read_file("memory.pressure", buf, sizeof buf) <= 0 || strncmp(buf, "some ", 5) != 0)
        return -1;
    char *t = strstr(buf, "total=");
    return t && t < strchr(buf, '\n') ? atoll(t + 6) : -1;
}

static void *reclaimer(void *arg)
{
    (void)arg;
    char buf[64], path[4096];
    snprintf(path, sizeof path, "%s/memory.reclaim", cgroup);
    long long prev = some_total_us();
    const double interval_us = interval_ms * 1000.0, target_us = interval_us * target_pct / 100.0;
    struct timespec tick = {(time_t)(interval_ms / 1000.0),
                            (long)((interval_ms - 1000.0 * (long)(interval_ms / 1000.0)) * 1e6)};
    while (!atomic_load(&stop)) {
        nanosleep(&tick, NULL);
        if (atomic_load(&stop))
            break;
        long long total = some_total_us();
        if (total < 0 || prev < 0 || read_file("memory.current", buf, sizeof buf) <= 0) {
            prev = total;
            continue;
        }
        unsigned long long current = strtoull(buf, NULL, 10);
        double stall = (double)(total - prev);
        prev = total;
        atomic_fetch_add(&intervals, 1);
        if (stall >= target_us) {
            atomic_fetch_add(&backoffs, 1);
            continue;
        }
        unsigned long long step =
            (unsigned long long)((double)current * max_probe * (1.0 - stall / target_us));
        step -= step % PAGE;
        if (step == 0) {
            atomic_fetch_add(&backoffs, 1);
            continue;
        }
        atomic_fetch_add(&reclaim_writes, 1);
        atomic_fetch_add(&reclaim_bytes, step);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
            atomic_fetch_add(&reclaim_short, 1);
            continue;
        }
        int len = snprintf(buf, sizeof buf, "%llu", step);
        if (write(fd, buf, (size_t)len) < 0)
            atomic_fetch_add(&reclaim_short, 1); /* EAGAIN: reclaimed less than asked */
        close(fd);
    }
    return NULL;
}

static void usage(void)
{
    fprintf(stderr, "usage: swaprun --cgroup DIR --result FILE [--flush-ms N] [--reclaim] "
                    "[--interval-ms N] [--target-pct F] [--max-probe F] [--timeout-s N] -- "
                    "PROGRAM ARGS...\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *result = NULL;
    double flush_ms = 0.0, timeout_s = 0.0;
    int reclaim = 0, i;
    for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--reclaim") == 0) {
            reclaim = 1;
            continue;
        }
        if (!v)
            usage();
        i++;
        if (strcmp(a, "--cgroup") == 0)
            cgroup = v;
        else if (strcmp(a, "--result") == 0)
            result = v;
        else if (strcmp(a, "--flush-ms") == 0)
            flush_ms = atof(v);
        else if (strcmp(a, "--interval-ms") == 0)
            interval_ms = atof(v);
        else if (strcmp(a, "--target-pct") == 0)
            target_pct = atof(v);
        else if (strcmp(a, "--max-probe") == 0)
            max_probe = atof(v);
        else if (strcmp(a, "--timeout-s") == 0)
            timeout_s = atof(v);
        else
            usage();
    }
    if (!cgroup || !result || i + 1 >= argc || flush_ms < 0 || interval_ms < 10 ||
        target_pct <= 0 || max_probe <= 0 || max_probe > 1 || timeout_s < 0)
        usage();
    char **prog = argv + i + 1;

    FILE *out = fopen(result, "we");
    if (!out) {
        perror(result);
        return 3;
    }
    char procs[4096];
    snprintf(procs, sizeof procs, "%s/cgroup.procs", cgroup);
    uint64_t t0 = now_ns();
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 3;
    }
    if (pid == 0) {
        char buf[32];
        int fd = open(procs, O_WRONLY | O_CLOEXEC);
        int len = snprintf(buf, sizeof buf, "%d", (int)getpid());
        if (fd < 0 || write(fd, buf, (size_t)len) != len) {
            perror(procs);
            _exit(127);
        }
        close(fd);
        execvp(prog[0], prog);
        perror(prog[0]);
        _exit(127);
    }
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    pthread_t thread;
    if (reclaim && pthread_create(&thread, NULL, reclaimer, NULL) != 0)
        reclaim = 0;
    char stat_path[4096], sink[65536];
    snprintf(stat_path, sizeof stat_path, "%s/memory.stat", cgroup);
    int stat_fd = flush_ms > 0 ? open(stat_path, O_RDONLY | O_CLOEXEC) : -1;
    unsigned long long flush_reads = 0, max_gap_ns = 0, last = 0;
    int timed_out = 0, status = 0;
    struct rusage ru;
    for (;;) {
        if (stat_fd >= 0) { /* one flush: read memory.stat to its end */
            lseek(stat_fd, 0, SEEK_SET);
            while (read(stat_fd, sink, sizeof sink) > 0)
                ;
            uint64_t t = now_ns();
            if (last && t - last > max_gap_ns)
                max_gap_ns = t - last;
            last = t;
            flush_reads++;
        }
        int wait_ms = stat_fd >= 0 ? (int)(flush_ms < 1 ? 1 : flush_ms) : 100;
        if (pidfd >= 0) {
            struct pollfd p = {pidfd, POLLIN, 0};
            poll(&p, 1, wait_ms);
        } else {
            usleep((useconds_t)wait_ms * 1000u);
        }
        pid_t got = wait4(pid, &status, WNOHANG, &ru);
        if (got == pid)
            break;
        if (!timed_out && timeout_s > 0 && (double)(now_ns() - t0) / 1e9 > timeout_s) {
            kill(pid, SIGKILL);
            timed_out = 1;
        }
    }
    uint64_t wall = now_ns() - t0;
    atomic_store(&stop, 1);
    if (reclaim)
        pthread_join(thread, NULL);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    fprintf(out,
            "status=%d\nsignal=%d\ntimed_out=%d\nwall_ns=%llu\nuser_us=%lld\nsys_us=%lld\n"
            "maxrss_kb=%ld\nflush_ms=%g\nflush_reads=%llu\nflush_max_gap_us=%llu\n"
            "reclaim=%d\nintervals=%llu\nbackoffs=%llu\nreclaim_writes=%llu\n"
            "reclaim_bytes=%llu\nreclaim_short=%llu\n",
            code, WIFSIGNALED(status) ? WTERMSIG(status) : 0, timed_out, (unsigned long long)wall,
            (long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec,
            (long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec, ru.ru_maxrss, flush_ms,
            flush_reads, max_gap_ns / 1000, reclaim, (unsigned long long)atomic_load(&intervals),
            (unsigned long long)atomic_load(&backoffs),
            (unsigned long long)atomic_load(&reclaim_writes),
            (unsigned long long)atomic_load(&reclaim_bytes),
            (unsigned long long)atomic_load(&reclaim_short));
    return fclose(out) == 0 ? 0 : 3;
}
