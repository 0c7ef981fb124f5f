/*
 * kmeans_regions: the assignment step of Rodinia's OpenMP K-means with each of the code areas
 * of the C-AMAT case study (seed Fig. 7) in its own function, so that a per-function report
 * names them: find_nearest_point, update_membership, update_centers_len (the per-thread
 * counts, partial_new_centers_len[tid][index]++) and update_new_centers (the per-thread
 * partial sums).
 *
 * Unpadded (default), partial_new_centers_len is nthreads rows of nclusters ints back to back:
 * with 5 clusters a row is 20 bytes, so threads increment counters on the same cache line
 * (false sharing in update_centers_len, as in the seed). --padded gives every thread's row its
 * own cache line(s); nothing else changes. The array starts on a line in both variants.
 *
 * Objects: feature (float[n*d]), membership (int32[n]), clusters (float[k*d]),
 * partial_new_centers (float[t*k*d]), partial_new_centers_len (int32[t*row]).
 * FoM: million points assigned per second over the timed iterations.
 * Verification: the centers after the last step are the means of their points.
 */
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/wl.h"

#define CACHE_LINE 64

__attribute__((noinline)) static int find_nearest_point(const float *pt, int nf,
                                                        const float *clusters, int nc)
{
    int index = 0;
    float best = FLT_MAX;
    for (int c = 0; c < nc; c++) {
        float dist = 0;
        for (int j = 0; j < nf; j++) {
            float d = pt[j] - clusters[c * nf + j];
            dist += d * d;
        }
        if (dist < best) {
            best = dist;
            index = c;
        }
    }
    return index;
}

__attribute__((noinline)) static int update_membership(int32_t *membership, uint64_t i, int index)
{
    int changed = membership[i] != index;
    membership[i] = index;
    return changed;
}

/* The seed's false-sharing spot: one increment per point into this thread's row. */
__attribute__((noinline)) static void update_centers_len(int32_t *len, uint64_t row, int tid,
                                                         int index)
{
    len[(uint64_t)tid * row + (uint64_t)index]++;
}

__attribute__((noinline)) static void update_new_centers(float *pc, const float *pt, int nf)
{
    for (int j = 0; j < nf; j++)
        pc[j] += pt[j];
}

static void usage(void)
{
    printf("usage: kmeans_regions [-n POINTS] [-d FEATURES] [-k CLUSTERS] [-i ITERATIONS]\n"
           "                      [-t THREADS] [-s SEED] [--padded]\n"
           "K-means assignment step with one function per code area; prints Mpoints/s.\n"
           "  -n POINTS     points (default 200000)\n"
           "  -d FEATURES   features per point (default 8)\n"
           "  -k CLUSTERS   clusters (default 5)\n"
           "  -i ITERATIONS assignment + update steps (default 10)\n"
           "  -t THREADS    OpenMP threads\n"
           "  -s SEED       seed of the synthetic data (default 1)\n"
           "  --padded      one cache line per thread's counters (no false sharing)\n");
}

int main(int argc, char **argv)
{
    wl_init(argv[0]);
    uint64_t npoints = 200000, nfeatures = 8, nclusters = 5, iterations = 10, seed = 1;
    int padded = 0, c;
    static const struct option longopts[] = {
        {"padded", no_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":n:d:k:i:t:s:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'n': npoints = wl_parse_u64("-n", optarg, 1, 1ULL << 34); break;
        case 'd': nfeatures = wl_parse_u64("-d", optarg, 1, 4096); break;
        case 'k': nclusters = wl_parse_u64("-k", optarg, 1, 4096); break;
        case 'i': iterations = wl_parse_u64("-i", optarg, 1, 100000); break;
        case 't': wl_set_threads(wl_parse_u64("-t", optarg, 1, 4096)); break;
        case 's': seed = wl_parse_u64("-s", optarg, 0, UINT64_MAX); break;
        case 'P': padded = 1; break;
        case 'h': usage(); return 0;
        default:
            if (optopt)
                wl_bad_option(optopt, NULL);
            wl_bad_option(0, argv[optind - 1]);
        }
    }
    if (optind < argc)
        wl_die(WL_EXIT_USAGE, "unexpected argument '%s' (try -h)", argv[optind]);
    if (nclusters > npoints)
        wl_die(WL_EXIT_USAGE, "-k (%llu) exceeds the number of points (%llu)",
               (unsigned long long)nclusters, (unsigned long long)npoints);
    const int nf = (int)nfeatures, nc = (int)nclusters;
    const int nthreads = omp_get_max_threads();
    const uint64_t row = padded ? (nclusters * sizeof(int32_t) + CACHE_LINE - 1) / CACHE_LINE *
                                      (CACHE_LINE / sizeof(int32_t))
                                : nclusters;
    float *feature = wl_malloc(npoints * nfeatures * sizeof(float), "feature");
    int32_t *membership = wl_malloc(npoints * sizeof(int32_t), "membership");
    float *clusters = wl_malloc(nclusters * nfeatures * sizeof(float), "clusters");
    float *partial_new_centers =
        wl_calloc((size_t)nthreads * nclusters * nfeatures, sizeof(float), "partial_new_centers");
    size_t len_bytes = (size_t)nthreads * row * sizeof(int32_t);
    /* aligned in both variants, so that whether the rows share a line depends on the row
     * stride alone, never on where malloc happened to put the array */
    int32_t *partial_new_centers_len =
        wl_aligned(CACHE_LINE, (len_bytes + CACHE_LINE - 1) / CACHE_LINE * CACHE_LINE,
                   "partial_new_centers_len");
    memset(partial_new_centers_len, 0, len_bytes);

    wl_rng r = {wl_hash64(seed)};
    float *centers0 = wl_malloc(nclusters * nfeatures * sizeof(float), "blob centers");
    for (uint64_t k = 0; k < nclusters * nfeatures; k++)
        centers0[k] = (float)(10.0 * wl_rng_unit(&r));
    for (uint64_t i = 0; i < npoints; i++) {
        uint64_t blob = wl_rng_below(&r, nclusters);
        for (uint64_t j = 0; j < nfeatures; j++)
            feature[i * nfeatures + j] =
                centers0[blob * nfeatures + j] + (float)(wl_rng_unit(&r) - 0.5);
        membership[i] = -1;
    }
    memcpy(clusters, feature, nclusters * nfeatures * sizeof(float));
    free(centers0);

    double t0 = wl_now();
    uint64_t changes = 0;
    for (uint64_t it = 0; it < iterations; it++) {
        changes = 0;
#pragma omp parallel reduction(+ : changes)
        {
            int tid = omp_get_thread_num();
#pragma omp for schedule(static)
            for (uint64_t i = 0; i < npoints; i++) {
                const float *pt = feature + i * nfeatures;
                int index = find_nearest_point(pt, nf, clusters, nc);
                changes += (uint64_t)update_membership(membership, i, index);
                update_centers_len(partial_new_centers_len, row, tid, index);
                update_new_centers(partial_new_centers +
                                       ((uint64_t)tid * nclusters + (uint64_t)index) * nfeatures,
                                   pt, nf);
            }
        }
        for (int k = 0; k < nc; k++) { /* reduce; an empty cluster keeps its center */
            double len = 0;
            for (int t = 0; t < nthreads; t++) {
                len += partial_new_centers_len[(uint64_t)t * row + (uint64_t)k];
                partial_new_centers_len[(uint64_t)t * row + (uint64_t)k] = 0;
            }
            for (int j = 0; j < nf; j++) {
                double sum = 0;
                for (int t = 0; t < nthreads; t++) {
                    float *p =
                        &partial_new_centers[((uint64_t)t * nc + (uint64_t)k) * nf + (uint64_t)j];
                    sum += *p;
                    *p = 0;
                }
                if (len > 0)
                    clusters[k * nf + j] = (float)(sum / len);
            }
        }
    }
    double secs = wl_now() - t0;

    /* verification: each final center is the mean of the points assigned to it */
    double worst = 0;
    for (int k = 0; k < nc; k++) {
        double n = 0;
        for (int j = 0; j < nf; j++) {
            double sum = 0;
            n = 0;
            for (uint64_t i = 0; i < npoints; i++)
                if (membership[i] == k) {
                    sum += feature[i * nfeatures + (uint64_t)j];
                    n++;
                }
            if (n > 0) {
                double m = sum / n, err = fabs(m - clusters[k * nf + j]) / (1.0 + fabs(m));
                worst = err > worst ? err : worst;
            }
        }
    }
    if (worst > 1e-3)
        wl_die(WL_EXIT_FAIL, "verification failed: a center is off its points' mean by %.3g",
               worst);
    printf("kmeans_regions: %llu points x %d features, %d clusters, %llu iterations, %d threads, "
           "%s counters (row %llu ints)\n",
           (unsigned long long)npoints, nf, nc, (unsigned long long)iterations, nthreads,
           padded ? "padded" : "unpadded", (unsigned long long)row);
    printf("last iteration: %llu membership changes\n", (unsigned long long)changes);
    printf("verification: passed (max relative center error %.2g)\n", worst);
    wl_fom("kmeans_regions", (double)npoints * (double)iterations / secs / 1e6, "Mpoints/s", secs);
    free(feature);
    free(membership);
    free(clusters);
    free(partial_new_centers);
    free(partial_new_centers_len);
    return 0;
}
