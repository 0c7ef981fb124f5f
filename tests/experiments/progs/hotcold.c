/* One hot and one cold array, for the experiment tests.
 *
 *   hotcold HOT_MIB COLD_MIB ROUNDS [sleep]
 *
 * Each round dirties every page of `cold` once (a sequential sweep), then makes
 * HOT_PAGES * 1024 random read-modify-writes into `hot`. The two arrays come from two
 * different allocation sites, so a plan can tell them apart. At the end it prints
 *   hot_resident=<fraction of hot's pages resident, by mincore>
 *   hot_locked_kb=<VmLck of the process, KiB>
 *   FOM hotcold=<M updates/s> Mupdates/s time=<seconds of the rounds>
 * With a fourth argument it sleeps before exiting (for interruption tests). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL

__attribute__((noinline)) static unsigned char *alloc_hot(size_t n)
{
    return malloc(n);
}
__attribute__((noinline)) static unsigned char *alloc_cold(size_t n)
{
    return malloc(n);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static long vm_locked_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmLck: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: hotcold HOT_MIB COLD_MIB ROUNDS [sleep]\n");
        return 2;
    }
    size_t hot_n = (size_t)atol(argv[1]) << 20, cold_n = (size_t)atol(argv[2]) << 20;
    int rounds = atoi(argv[3]);
    unsigned char *hot = alloc_hot(hot_n);
    unsigned char *cold = alloc_cold(cold_n);
    if (!hot || !cold) {
        fprintf(stderr, "hotcold: out of memory\n");
        return 1;
    }
    memset(cold, 1, cold_n);
    memset(hot, 2, hot_n);
    size_t hot_pages = hot_n / PAGE, updates = hot_pages * 1024;
    uint64_t x = 88172645463325252ULL, sum = 0;
    double start = now();
    for (int r = 0; r < rounds; r++) {
        for (size_t i = 0; i < cold_n; i += PAGE)
            cold[i]++;
        for (size_t u = 0; u < updates; u++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17; /* xorshift64 */
            size_t at = (size_t)(x % hot_n);
            sum += hot[at]++;
        }
    }
    double seconds = now() - start;
    /* mincore over the page-aligned interior of hot */
    uintptr_t lo = ((uintptr_t)hot + PAGE - 1) & ~(PAGE - 1);
    uintptr_t hi = ((uintptr_t)hot + hot_n) & ~(PAGE - 1);
    size_t pages = (hi - lo) / PAGE, resident = 0;
    unsigned char *vec = malloc(pages);
    if (vec && mincore((void *)lo, hi - lo, vec) == 0)
        for (size_t i = 0; i < pages; i++)
            resident += vec[i] & 1;
    printf("hot_resident=%.4f\n", pages ? (double)resident / pages : 0.0);
    printf("hot_locked_kb=%ld\n", vm_locked_kb());
    printf("checksum=%lu\n", (unsigned long)sum);
    printf("FOM hotcold=%.3f Mupdates/s time=%.6f\n", (double)updates * rounds / seconds / 1e6,
           seconds);
    fflush(stdout);
    if (argc > 4)
        sleep(60);
    return 0;
}
