/*
 * The cost of paging out single pages with madvise while the program runs: what a pager
 * that evicts one victim per fault pays. Built and run by bench/pageout_cost.py.
 *
 *     pageout_cost MODE VEC WORKER_CPU ADVISER_CPU
 *
 * A 32 MiB anonymous buffer is filled; a worker thread (none when WORKER_CPU < 0) reads and
 * writes random pages of it until the end; the main thread, kept to ADVISER_CPU, advises
 * 20,000 random pages one page per range: MODE pageout (madvise MADV_PAGEOUT, one call per
 * page), vector (process_madvise MADV_PAGEOUT, VEC pages per call) or cold (madvise
 * MADV_COLD). Prints the wall time per page in microseconds. Needs swap for pageout to write.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define PAGES   8192u /* 32 MiB of 4 KiB pages */
#define ADVISED 20000
#define MAX_VEC 1024

static char *buf;
static volatile int stop;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void keep_to(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        perror("sched_setaffinity");
        exit(2);
    }
}

static void *worker(void *arg)
{
    keep_to((int)(intptr_t)arg);
    unsigned x = 1;
    while (!stop) {
        x = x * 1103515245u + 12345u;
        buf[((x >> 8) % PAGES) * 4096u]++;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: pageout_cost pageout|vector|cold VEC WORKER_CPU ADVISER_CPU\n");
        return 2;
    }
    const char *mode = argv[1];
    int vec = atoi(argv[2]), worker_cpu = atoi(argv[3]);
    if (vec < 1 || vec > MAX_VEC || (strcmp(mode, "vector") != 0 && vec != 1)) {
        fprintf(stderr, "pageout_cost: VEC must be 1, or 1..%d with vector\n", MAX_VEC);
        return 2;
    }
    keep_to(atoi(argv[4]));
    buf = mmap(NULL, (size_t)PAGES * 4096u, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
               0);
    if (buf == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    memset(buf, 1, (size_t)PAGES * 4096u);
    pthread_t t;
    if (worker_cpu >= 0 && pthread_create(&t, NULL, worker, (void *)(intptr_t)worker_cpu) != 0)
        return 2;
    int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
    struct iovec iov[MAX_VEC];
    unsigned x = 7;
    uint64_t t0 = now_ns();
    for (int done = 0; done < ADVISED; done += vec) {
        for (int k = 0; k < vec; k++) {
            x = x * 1103515245u + 12345u;
            iov[k].iov_base = buf + ((x >> 8) % PAGES) * 4096u;
            iov[k].iov_len = 4096;
        }
        if (!strcmp(mode, "vector"))
            syscall(SYS_process_madvise, pidfd, iov, (size_t)vec, MADV_PAGEOUT, 0u);
        else
            madvise(iov[0].iov_base, 4096, !strcmp(mode, "cold") ? MADV_COLD : MADV_PAGEOUT);
    }
    uint64_t t1 = now_ns();
    stop = 1;
    if (worker_cpu >= 0)
        pthread_join(t, NULL);
    printf("%.3f\n", (double)(t1 - t0) / 1e3 / ADVISED);
    return 0;
}
