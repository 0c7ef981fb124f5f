/*
 * stream: the four STREAM kernels (McCalpin) over three double arrays.
 *
 *   copy   c = a          scale  b = q * c
 *   add    c = a + b      triad  a = b + q * c
 *
 * Large objects (three separate allocations of 8 x elements bytes, 64-byte aligned):
 *   a  read by copy and add, written by triad      (2 read + 1 write streams per iteration)
 *   b  written by scale, read by add and triad      (2 read + 1 write)
 *   c  written by copy and add, read by scale, triad (2 read + 2 write)
 * All accesses are sequential. Timed region: NTIMES iterations of the four kernels.
 * FoM: best bandwidth over kernels and iterations, MB/s (10^6 bytes/s, STREAM counting:
 * copy and scale move 16 bytes per element, add and triad 24).
 * Verification: every element against the scalar recurrence (STREAM's tolerance).
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../common/wl.h"

static void usage(void)
{
    printf("usage: stream [-s ELEMENTS] [-n NTIMES] [-t THREADS]\n"
           "STREAM copy/scale/add/triad; prints the best bandwidth in MB/s.\n"
           "  -s ELEMENTS elements per array (default 10000000: 3 x 76 MiB)\n"
           "  -n NTIMES   iterations of the four kernels (default 10, at least 2)\n"
           "  -t THREADS  OpenMP threads\n"
           "  -h          this help\n");
}

int main(int argc, char **argv)
{
    wl_init(argv[0]);
    uint64_t n = 10000000, ntimes = 10;
    int c;
    opterr = 0;
    while ((c = getopt(argc, argv, ":s:n:t:h")) != -1) {
        switch (c) {
        case 's': n = wl_parse_u64("-s", optarg, 1000, 1ULL << 36); break;
        case 'n': ntimes = wl_parse_u64("-n", optarg, 2, 100000); break;
        case 't': wl_set_threads(wl_parse_u64("-t", optarg, 1, 4096)); break;
        case 'h': usage(); return 0;
        default: wl_bad_option(optopt, NULL);
        }
    }
    if (optind < argc)
        wl_die(WL_EXIT_USAGE, "unexpected argument '%s' (try -h)", argv[optind]);

    double *a = wl_aligned(64, n * sizeof(double), "a");
    double *b = wl_aligned(64, n * sizeof(double), "b");
    double *cc = wl_aligned(64, n * sizeof(double), "c");
    const double q = 3.0;
#pragma omp parallel for schedule(static)
    for (uint64_t j = 0; j < n; j++) {
        a[j] = 1.0;
        b[j] = 2.0;
        cc[j] = 0.0;
    }
    static const char *names[4] = {"copy", "scale", "add", "triad"};
    const double bytes[4] = {16.0 * (double)n, 16.0 * (double)n, 24.0 * (double)n,
                             24.0 * (double)n};
    double best[4] = {INFINITY, INFINITY, INFINITY, INFINITY}, sum[4] = {0};

    double start = wl_now();
    for (uint64_t k = 0; k < ntimes; k++) {
        double t[5];
        t[0] = wl_now();
#pragma omp parallel for schedule(static)
        for (uint64_t j = 0; j < n; j++)
            cc[j] = a[j];
        t[1] = wl_now();
#pragma omp parallel for schedule(static)
        for (uint64_t j = 0; j < n; j++)
            b[j] = q * cc[j];
        t[2] = wl_now();
#pragma omp parallel for schedule(static)
        for (uint64_t j = 0; j < n; j++)
            cc[j] = a[j] + b[j];
        t[3] = wl_now();
#pragma omp parallel for schedule(static)
        for (uint64_t j = 0; j < n; j++)
            a[j] = b[j] + q * cc[j];
        t[4] = wl_now();
        for (int i = 0; i < 4; i++) {
            double d = t[i + 1] - t[i];
            if (k > 0) { /* as STREAM: the first iteration is a warm-up */
                best[i] = d < best[i] ? d : best[i];
                sum[i] += d;
            }
        }
    }
    double elapsed = wl_now() - start;

    /* Expected values: replay the recurrence on scalars. */
    double ea = 1.0, eb = 2.0, ec = 0.0;
    for (uint64_t k = 0; k < ntimes; k++) {
        ec = ea;
        eb = q * ec;
        ec = ea + eb;
        ea = eb + q * ec;
    }
    double erra = 0, errb = 0, errc = 0;
#pragma omp parallel for reduction(+ : erra, errb, errc)
    for (uint64_t j = 0; j < n; j++) {
        erra += fabs(a[j] - ea);
        errb += fabs(b[j] - eb);
        errc += fabs(cc[j] - ec);
    }
    const double eps = 1e-13; /* STREAM's tolerance for doubles */
    if (erra / (double)n / fabs(ea) > eps || errb / (double)n / fabs(eb) > eps ||
        errc / (double)n / fabs(ec) > eps)
        wl_die(WL_EXIT_FAIL, "verification failed: average relative error above %g", eps);

    double fom = 0;
    printf("stream: %llu elements per array (%.1f MiB each), %llu iterations\n",
           (unsigned long long)n, (double)n * 8.0 / 1048576.0, (unsigned long long)ntimes);
    for (int i = 0; i < 4; i++) {
        double rate = bytes[i] / best[i] / 1e6;
        fom = rate > fom ? rate : fom;
        printf("%-6s best %10.1f MB/s  avg %.6f s  min %.6f s\n", names[i], rate,
               sum[i] / (double)(ntimes - 1), best[i]);
    }
    printf("verification: passed\n");
    wl_fom("stream", fom, "MB/s", elapsed);
    free(a);
    free(b);
    free(cc);
    return 0;
}
