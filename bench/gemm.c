/* Naive GEMM driver for bench/exact_accuracy.py: C += A * B on n x n row-major doubles,
   repeated r times, in i-j-k order. A is read along its rows and C's element stays put over
   the inner loop (clang -O2 keeps it in a register), so both hit in cache; B is read down its
   columns, n * 8 bytes apart, so when B is larger than the LLC (model) every line of B is
   fetched again for each row of C. A and B take the same number of loads (n^3 per
   repetition), but B takes nearly all the misses.

   Usage: gemm [-n N] [-r R]   (defaults: N = 256, R = 1) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static void gemm(long n, const double *a, const double *b, double *c)
{
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++)
            for (long k = 0; k < n; k++)
                c[i * n + j] += a[i * n + k] * b[k * n + j];
}

static double *matrix(long n, double scale)
{
    double *m = malloc((size_t)(n * n) * sizeof(double));
    if (!m) {
        perror("malloc");
        exit(1);
    }
    for (long i = 0; i < n * n; i++)
        m[i] = scale * (double)(i % 7);
    return m;
}

int main(int argc, char **argv)
{
    long n = 256, r = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-n"))
            n = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-r"))
            r = atol(argv[i + 1]);
    }
    double *a = matrix(n, 1.0), *b = matrix(n, 0.5), *c = matrix(n, 0.0);
    for (long t = 0; t < r; t++)
        gemm(n, a, b, c);
    double sum = 0;
    for (long i = 0; i < n * n; i++)
        sum += c[i];
    printf("gemm n %ld r %ld checksum %.6e\n", n, r, sum);
    free(a);
    free(b);
    free(c);
    return 0;
}
