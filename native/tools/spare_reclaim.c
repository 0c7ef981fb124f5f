/*
 * objtier-spare-reclaim CGROUP_DIR HEADROOM_KIB [CPU]: reclaim for a memory cgroup v1 on a
 * spare CPU, ahead of the program that the cgroup limits.
 *
 * Memory cgroup v1 has no memory.reclaim. When the cgroup's charge comes within half the
 * headroom of its limit, this process writes the limit less the headroom and then the limit
 * again: the first write makes the kernel reclaim that much from the cgroup in this process,
 * on this CPU, instead of in the program's own faults (direct reclaim). With CPU given, the
 * process keeps to that CPU.
 *
 * Invariants
 *   - The limit is read once at start and is the only value ever written back; at SIGTERM,
 *     SIGINT or SIGHUP the loop ends and the limit is written back once more, so the cgroup
 *     ends with the limit it had (a kill between the two writes leaves it HEADROOM lower).
 *   - A lower limit the kernel cannot reach is refused (EBUSY) and leaves the limit as it was.
 *   - Polls every POLL_US microseconds; nothing else.
 * Output at exit, one line on stdout: "reclaims N ns T" (lowerings, time spent in them).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define POLL_US 50

static volatile sig_atomic_t stopping;

static void on_stop(int sig)
{
    (void)sig;
    stopping = 1;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t read_u64(int fd)
{
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    return strtoull(buf, NULL, 10);
}

static int write_u64(int fd, uint64_t v)
{
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    return pwrite(fd, buf, (size_t)n, 0) == n ? 0 : -errno;
}

static int open_in(const char *dir, const char *name, int flags)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return -1;
    return open(path, flags | O_CLOEXEC | O_NOFOLLOW);
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: objtier-spare-reclaim CGROUP_DIR HEADROOM_KIB [CPU]\n");
        return 2;
    }
    char *end;
    unsigned long long kib = strtoull(argv[2], &end, 10);
    if (*end || kib == 0 || kib > (1ULL << 30)) {
        fprintf(stderr, "objtier-spare-reclaim: HEADROOM_KIB must be 1..2^30, got %s\n", argv[2]);
        return 2;
    }
    uint64_t headroom = (uint64_t)kib << 10;
    if (argc == 4) {
        long cpu = strtol(argv[3], &end, 10);
        cpu_set_t set;
        CPU_ZERO(&set);
        if (*end || cpu < 0 || cpu >= CPU_SETSIZE) {
            fprintf(stderr, "objtier-spare-reclaim: bad CPU %s\n", argv[3]);
            return 2;
        }
        CPU_SET((int)cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) {
            fprintf(stderr, "objtier-spare-reclaim: cannot keep to CPU %ld: %s\n", cpu,
                    strerror(errno));
            return 1;
        }
    }
    int usage_fd = open_in(argv[1], "memory.usage_in_bytes", O_RDONLY);
    int limit_fd = open_in(argv[1], "memory.limit_in_bytes", O_RDWR);
    if (usage_fd < 0 || limit_fd < 0) {
        fprintf(stderr, "objtier-spare-reclaim: %s is not a memory cgroup v1 directory\n", argv[1]);
        return 1;
    }
    uint64_t limit = read_u64(limit_fd);
    if (limit <= headroom) {
        fprintf(stderr,
                "objtier-spare-reclaim: the limit (%llu bytes) is not above the "
                "headroom\n",
                (unsigned long long)limit);
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    uint64_t reclaims = 0, spent = 0;
    const struct timespec poll = {0, POLL_US * 1000L};
    while (!stopping) {
        if (read_u64(usage_fd) + headroom / 2 >= limit) {
            uint64_t t0 = now_ns();
            write_u64(limit_fd, limit - headroom); /* EBUSY: could not reclaim that much */
            write_u64(limit_fd, limit);
            spent += now_ns() - t0;
            reclaims++;
        }
        nanosleep(&poll, NULL);
    }
    write_u64(limit_fd, limit);
    printf("reclaims %llu ns %llu\n", (unsigned long long)reclaims, (unsigned long long)spent);
    return 0;
}
