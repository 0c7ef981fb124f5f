/* Three 8 MiB arrays: hot (every page read in every pass, passes back to back), warm (every
 * page read once every 200 ms), cold (written once), for SECS seconds (argv[1], default 2).
 * Allocated hot, warm, cold: each is its own mapping, placed below the one before, so cold
 * borders warm and not hot. A DAMON region that straddles two arrays gives both its access
 * count, and one straddling hot and cold once gave cold more than warm.
 * Times, not pass counts, set warm's rate, so that it stays far below hot's however fast the
 * machine (or its emulator) runs. Prints the passes and a checksum.
 * DAMON sees an access by the page's Accessed bit, which the CPU sets on a page walk. The
 * kernel clears the bit without flushing the TLB, and QEMU's TCG keeps a translation until the
 * guest flushes (a real CPU's TLB evicts it far sooner), so in the guest a page read through a
 * cached translation looked unread: hot and warm then drew alike (20956 / 22528 / 17072 in one
 * CI run). Each pass therefore flips hot's protection (read-only, then back), which flushes
 * the process's translations; the bytes read are the same.
 * Warm is read every 20 ms, about 5 of DAMON's 20 checks per aggregation (100 ms / 5 ms):
 * DAMON merges neighbouring regions whose counts differ by under a tenth of the highest (2
 * here), so a warm read every 200 ms (1 check in 20) was merged with cold. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 2.0;
    size_t n = 8u << 20;
    char *hot = malloc(n), *warm = malloc(n), *cold = malloc(n);
    /* malloc maps blocks this large on their own, page-aligned after a 16-byte header */
    char *hot_pages = (char *)(((unsigned long)hot + 4095) & ~4095ul);
    size_t hot_len = (n - (size_t)(hot_pages - hot)) & ~4095ul;
    memset(hot, 1, n);
    memset(warm, 3, n);
    memset(cold, 2, n);
    double start = now(), last_warm = start, t = start;
    unsigned long sum = 0, pass = 0;
    do {
        for (size_t i = 0; i < n; i += 4096)
            sum += hot[i];
        if (mprotect(hot_pages, hot_len, PROT_READ) != 0 ||
            mprotect(hot_pages, hot_len, PROT_READ | PROT_WRITE) != 0) {
            perror("mprotect");
            return 1;
        }
        if (t - last_warm >= 0.02) {
            for (size_t i = 0; i < n; i += 4096)
                sum += warm[i];
            last_warm = t;
        }
        pass++;
        t = now();
    } while (t - start < secs);
    printf("passes %lu sum %lu\n", pass, sum);
    free(hot);
    free(warm);
    free(cold);
    return 0;
}
