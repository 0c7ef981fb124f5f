/* Three 8 MiB arrays: hot (read every pass), warm (every 8th pass), cold (written once),
 * for SECS seconds (argv[1], default 2). Prints the passes and a checksum. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 2.0;
    size_t n = 8u << 20;
    char *hot = malloc(n), *cold = malloc(n), *warm = malloc(n);
    memset(hot, 1, n);
    memset(cold, 2, n);
    memset(warm, 3, n);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned long sum = 0, pass = 0;
    do {
        for (size_t i = 0; i < n; i += 64)
            sum += hot[i];
        if (pass % 8 == 0)
            for (size_t i = 0; i < n; i += 64)
                sum += warm[i];
        pass++;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
    printf("passes %lu sum %lu\n", pass, sum);
    free(hot);
    free(cold);
    free(warm);
    return 0;
}
