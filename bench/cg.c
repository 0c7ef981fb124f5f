/* Conjugate gradient on a sparse SPD matrix, for bench/perf_source_accuracy.py: the C twin of
   bench/third_party/programs/cg.py (scipy's CG), so that an exact trace (objtier cc) can be
   taken of the same kind of solver. The matrix is CSR with N rows of 2K + 1 entries: K
   off-diagonal bands per side at seeded random offsets (wrapping around) with random weights,
   and a diagonal one more than the row's off-diagonal sum (strictly diagonally dominant, so
   positive definite). Every iteration reads the whole matrix once (vals 8 B and cols 4 B per
   entry, a stream) and gathers p at the column indices; the vectors are N * 8 B each.

   Usage: cg [-n ROWS] [-k BANDS] [-i ITERS]   (defaults 100000, 10, 25); prints the residual
   and exits 3 when it did not shrink. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9E3779B97F4A7C15u;

static double uniform(void) /* xorshift64*, in [-1, 1) */
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (double)((rng * 0x2545F4914F6CDD1Du) >> 11) / 4503599627370496.0 - 1.0;
}

static void *take(size_t bytes)
{
    void *p = malloc(bytes);
    if (!p) {
        perror("malloc");
        exit(1);
    }
    return p;
}

__attribute__((noinline)) static double *alloc_vals(size_t n)
{
    return take(n * sizeof(double));
}
__attribute__((noinline)) static int32_t *alloc_cols(size_t n)
{
    return take(n * 4);
}
__attribute__((noinline)) static double *alloc_vector(size_t n)
{
    return take(n * sizeof(double));
}
__attribute__((noinline)) static double *alloc_rhs(size_t n)
{
    return take(n * sizeof(double));
}

__attribute__((noinline)) static void spmv(long n, int w, const double *vals, const int32_t *cols,
                                           const double *x, double *y)
{
    for (long i = 0; i < n; i++) {
        double s = 0;
        for (int j = 0; j < w; j++)
            s += vals[i * w + j] * x[cols[i * w + j]];
        y[i] = s;
    }
}

static double dot(long n, const double *a, const double *b)
{
    double s = 0;
    for (long i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

int main(int argc, char **argv)
{
    long n = 100000, k = 10, iters = 25;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-n"))
            n = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-k"))
            k = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-i"))
            iters = atol(argv[i + 1]);
    }
    if (n < 8 || k < 1 || 2 * k + 1 > n / 2 || iters < 1) {
        fprintf(stderr, "cg: bad sizes\n");
        return 2;
    }
    int w = (int)(2 * k + 1);
    double *vals = alloc_vals((size_t)(n * w));
    int32_t *cols = alloc_cols((size_t)(n * w));
    double *diag = alloc_vector((size_t)n);
    for (long i = 0; i < n; i++)
        diag[i] = 1.0;
    for (long b = 0; b < k; b++) {
        long off = 1 + (long)((uniform() + 1.0) * 0.5 * (double)(n / 2 - 2));
        for (long i = 0; i < n; i++) { /* entries (i, i+off) and (i+off, i): symmetric */
            double weight = uniform();
            long j = (i + off) % n;
            vals[i * w + 2 * b] = weight;
            cols[i * w + 2 * b] = (int32_t)j;
            vals[j * w + 2 * b + 1] = weight;
            cols[j * w + 2 * b + 1] = (int32_t)i;
            diag[i] += fabs(weight);
            diag[j] += fabs(weight);
        }
    }
    for (long i = 0; i < n; i++) {
        vals[i * w + w - 1] = diag[i];
        cols[i * w + w - 1] = (int32_t)i;
    }
    double *truth = alloc_rhs((size_t)n), *rhs = alloc_rhs((size_t)n);
    for (long i = 0; i < n; i++)
        truth[i] = uniform();
    spmv(n, w, vals, cols, truth, rhs);
    double *x = alloc_vector((size_t)n), *r = alloc_vector((size_t)n);
    double *p = alloc_vector((size_t)n), *ap = alloc_vector((size_t)n);
    memset(x, 0, (size_t)n * sizeof(double));
    memcpy(r, rhs, (size_t)n * sizeof(double));
    memcpy(p, rhs, (size_t)n * sizeof(double));
    double rr = dot(n, r, r), start = sqrt(rr);
    for (long t = 0; t < iters && rr > 0; t++) {
        spmv(n, w, vals, cols, p, ap);
        double alpha = rr / dot(n, p, ap);
        for (long i = 0; i < n; i++) {
            x[i] += alpha * p[i];
            r[i] -= alpha * ap[i];
        }
        double next = dot(n, r, r);
        for (long i = 0; i < n; i++)
            p[i] = r[i] + (next / rr) * p[i];
        rr = next;
    }
    printf("cg n %ld k %ld iters %ld residual %.3e of %.3e\n", n, k, iters, sqrt(rr), start);
    free(vals);
    free(cols);
    free(diag);
    free(truth);
    free(rhs);
    free(x);
    free(r);
    free(p);
    free(ap);
    return sqrt(rr) < start ? 0 : 3;
}
