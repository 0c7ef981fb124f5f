/* Guest test program: allocate anonymous memory, place it, and report where every page is.
 *
 *   placement bind MIB NODE      mbind(MPOL_BIND, NODE) before the first touch
 *   placement fill MIB           first touch under the task's policy (e.g. numactl --membind)
 *   placement hot MIB NODE SECS  first touch bound to NODE, then the default policy, then
 *                                re-touch every page for SECS seconds (NUMA-balancing hint faults)
 *   placement idle MIB NODE SECS first touch, then SECS seconds without a touch (cold memory
 *                                for proactive reclaim; swapped-out pages count as absent)
 *
 * Output, one line:  pages=<N> node0=<pages> node1=<pages> absent=<pages> other=<pages>
 * from move_pages(2) with nodes=NULL (query only), every 4 KiB page of the mapping.
 * No libnuma: raw syscalls, so the binary runs anywhere the host's libc does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MPOL_DEFAULT 0
#define MPOL_BIND    2
#define PAGE         4096UL
#define BATCH        4096UL

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void touch(volatile char *p, size_t bytes, int value)
{
    for (size_t i = 0; i < bytes; i += PAGE)
        p[i] = (char)value;
}

static void report(char *base, size_t bytes)
{
    size_t n = bytes / PAGE, counts[2] = {0, 0}, absent = 0, other = 0;
    void **pages = malloc(BATCH * sizeof *pages);
    int *status = malloc(BATCH * sizeof *status);
    for (size_t first = 0; first < n; first += BATCH) {
        size_t m = n - first < BATCH ? n - first : BATCH;
        for (size_t i = 0; i < m; i++)
            pages[i] = base + (first + i) * PAGE;
        if (syscall(SYS_move_pages, 0, m, pages, NULL, status, 0) != 0) {
            perror("move_pages");
            exit(2);
        }
        for (size_t i = 0; i < m; i++) {
            if (status[i] == 0 || status[i] == 1)
                counts[status[i]]++;
            else if (status[i] == -ENOENT)
                absent++;
            else
                other++;
        }
    }
    printf("pages=%zu node0=%zu node1=%zu absent=%zu other=%zu\n", n, counts[0], counts[1], absent,
           other);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: placement bind|fill|hot|idle MIB [NODE [SECS]]\n");
        return 2;
    }
    const char *mode = argv[1];
    size_t bytes = strtoul(argv[2], NULL, 10) << 20;
    int node = argc > 3 ? atoi(argv[3]) : 0;
    char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    unsigned long mask = 1UL << node;
    if (strcmp(mode, "bind") == 0) {
        if (syscall(SYS_mbind, p, bytes, MPOL_BIND, &mask, 64, 0) != 0) {
            perror("mbind");
            return 2;
        }
        touch(p, bytes, 1);
    } else if (strcmp(mode, "fill") == 0) {
        touch(p, bytes, 1);
    } else if (strcmp(mode, "hot") == 0) {
        double secs = argc > 4 ? atof(argv[4]) : 5.0;
        if (syscall(SYS_set_mempolicy, MPOL_BIND, &mask, 64) != 0) {
            perror("set_mempolicy");
            return 2;
        }
        touch(p, bytes, 1);
        if (syscall(SYS_set_mempolicy, MPOL_DEFAULT, NULL, 0) != 0) {
            perror("set_mempolicy");
            return 2;
        }
        double end = now_s() + secs;
        for (int v = 2; now_s() < end; v++)
            touch(p, bytes, v);
    } else if (strcmp(mode, "idle") == 0) {
        touch(p, bytes, 1);
        double end = now_s() + (argc > 4 ? atof(argv[4]) : 5.0);
        while (now_s() < end)
            usleep(100000);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    report(p, bytes);
    return 0;
}
