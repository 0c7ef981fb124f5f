/* Three 8 MiB arrays: hot (every page read in every pass, passes back to back), warm (every
 * page read once every 200 ms), cold (written once), for SECS seconds (argv[1], default 2).
 * Allocated hot, warm, cold: each is its own mapping, placed below the one before, so cold
 * borders warm and not hot. A DAMON region that straddles two arrays gives both its access
 * count, and one straddling hot and cold once gave cold more than warm.
 * Times, not pass counts, set warm's rate, so that it stays far below hot's however fast the
 * machine (or its emulator) runs. Prints the passes and a checksum. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    memset(hot, 1, n);
    memset(warm, 3, n);
    memset(cold, 2, n);
    double start = now(), last_warm = start, t = start;
    unsigned long sum = 0, pass = 0;
    do {
        for (size_t i = 0; i < n; i += 4096)
            sum += hot[i];
        if (t - last_warm >= 0.2) {
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
