/*
 * kmeans: Lloyd's K-means with OpenMP, structured as the Rodinia kernel studied in the C-AMAT
 * disaggregated-memory case study: each thread accumulates into its own row of
 * partial_new_centers_len[nthreads][nclusters] and partial_new_centers[nthreads][nclusters]
 * [nfeatures]. Unpadded (default), the rows of the counts array are nclusters ints long and
 * adjacent, so threads write the same cache lines (false sharing). --padded rounds each row up
 * to a 64-byte multiple and aligns the array to 64 bytes.
 *
 * Large objects (separate allocations):
 *   feature     float[npoints * nfeatures]  read sequentially once per point per iteration
 *   membership  int32[npoints]              read and written sequentially, once per point
 *   clusters    float[nclusters * nfeatures] read nclusters x nfeatures times per point
 *   partial_new_centers      float[nthreads * nclusters * nfeatures]  nfeatures writes per point
 *   partial_new_centers_len  int32[nthreads * row]   one increment per point (the false
 *                            sharing object; row = nclusters, or padded to 16 ints)
 * Timed region: ITERATIONS assignment + update steps. FoM: million points processed per
 * second (npoints x iterations / seconds). Verification: in the last assignment every point
 * chose a nearest center, and the final centers are the means of their points.
 */
#include <getopt.h>
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/wl.h"

#define CACHE_LINE 64

static int find_nearest_point(const float *pt, int nfeatures, const float *clusters, int nclusters)
{
    int index = 0;
    float best = FLT_MAX;
    for (int c = 0; c < nclusters; c++) {
        float dist = 0;
        for (int j = 0; j < nfeatures; j++) {
            float d = pt[j] - clusters[c * nfeatures + j];
            dist += d * d;
        }
        if (dist < best) {
            best = dist;
            index = c;
        }
    }
    return index;
}

static void usage(void)
{
    printf("usage: kmeans [-n POINTS] [-d FEATURES] [-k CLUSTERS] [-i ITERATIONS] [-t THREADS]\n"
           "              [-s SEED] [--padded]\n"
           "OpenMP K-means with per-thread partial centers and counts; prints Mpoints/s.\n"
           "  -n POINTS     points (default 500000)\n"
           "  -d FEATURES   features per point (default 34)\n"
           "  -k CLUSTERS   clusters (default 5)\n"
           "  -i ITERATIONS assignment + update steps, always all run (default 10)\n"
           "  -t THREADS    OpenMP threads\n"
           "  -s SEED       seed of the synthetic data (default 1)\n"
           "  --padded      pad each thread's counters to a cache line (no false sharing)\n"
           "  -h, --help    this help\n");
}

int main(int argc, char **argv)
{
    wl_init(argv[0]);
    uint64_t npoints = 500000, nfeatures = 34, nclusters = 5, iterations = 10, seed = 1;
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
    /* Row length of the counts array in ints: nclusters, or a whole number of cache lines. */
    const uint64_t row = padded ? (nclusters * sizeof(int32_t) + CACHE_LINE - 1) / CACHE_LINE *
                                      (CACHE_LINE / sizeof(int32_t))
                                : nclusters;

    float *feature = wl_malloc(npoints * nfeatures * sizeof(float), "feature");
    int32_t *membership = wl_malloc(npoints * sizeof(int32_t), "membership");
    float *clusters = wl_malloc(nclusters * nfeatures * sizeof(float), "clusters");
    float *used = wl_malloc(nclusters * nfeatures * sizeof(float), "previous clusters");
    float *partial_new_centers =
        wl_calloc((size_t)nthreads * nclusters * nfeatures, sizeof(float), "partial_new_centers");
    int32_t *partial_new_centers_len =
        padded ? wl_aligned(CACHE_LINE, (size_t)nthreads * row * sizeof(int32_t),
                            "partial_new_centers_len")
               : wl_malloc((size_t)nthreads * row * sizeof(int32_t), "partial_new_centers_len");
    memset(partial_new_centers_len, 0, (size_t)nthreads * row * sizeof(int32_t));

    /* Synthetic data: nclusters blobs, centers uniform in [0, 10)^d, points within +-0.5. */
    {
        wl_rng r = {wl_hash64(seed)};
        for (uint64_t k = 0; k < nclusters * nfeatures; k++)
            used[k] = (float)(10.0 * wl_rng_unit(&r));
#pragma omp parallel for schedule(static)
        for (uint64_t i = 0; i < npoints; i++) {
            wl_rng pr = {wl_hash64(seed ^ (i * 0x9E3779B97F4A7C15ULL))};
            uint64_t blob = wl_rng_below(&pr, nclusters);
            for (uint64_t j = 0; j < nfeatures; j++)
                feature[i * nfeatures + j] =
                    used[blob * nfeatures + j] + (float)(wl_rng_unit(&pr) - 0.5);
            membership[i] = -1;
        }
        /* Initial centers: the first nclusters points (Rodinia picks points too). */
        memcpy(clusters, feature, nclusters * nfeatures * sizeof(float));
    }

    double t0 = wl_now();
    double delta = 0;
    for (uint64_t it = 0; it < iterations; it++) {
        memcpy(used, clusters, nclusters * nfeatures * sizeof(float));
        delta = 0;
#pragma omp parallel shared(feature, clusters, membership, partial_new_centers,                    \
                                partial_new_centers_len)
        {
            int tid = omp_get_thread_num();
#pragma omp for schedule(static) reduction(+ : delta)
            for (uint64_t i = 0; i < npoints; i++) {
                const float *pt = feature + i * nfeatures;
                int index = find_nearest_point(pt, nf, clusters, nc);
                if (membership[i] != index)
                    delta += 1.0;
                membership[i] = index;
                partial_new_centers_len[(uint64_t)tid * row + (uint64_t)index]++;
                float *pc =
                    partial_new_centers + ((uint64_t)tid * nclusters + (uint64_t)index) * nfeatures;
                for (int j = 0; j < nf; j++)
                    pc[j] += pt[j];
            }
        }
        /* Reduce the partials into new centers; an empty cluster keeps its center. */
        for (int k = 0; k < nc; k++) {
            double len = 0;
            for (int t = 0; t < nthreads; t++)
                len += partial_new_centers_len[(uint64_t)t * row + (uint64_t)k];
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
            for (int t = 0; t < nthreads; t++)
                partial_new_centers_len[(uint64_t)t * row + (uint64_t)k] = 0;
        }
    }
    double secs = wl_now() - t0;

    /* Verification (untimed): nearest-center choice against `used` (the centers of the last
     * assignment) and the final centers against double-precision means of their points. */
    double *mean = wl_calloc(nclusters * nfeatures, sizeof(double), "verify means");
    uint64_t *count = wl_calloc(nclusters, sizeof(uint64_t), "verify counts");
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < npoints; i++) {
        const float *pt = feature + i * nfeatures;
        double best = INFINITY, mine = 0;
        for (int k = 0; k < nc; k++) {
            double dist = 0;
            for (int j = 0; j < nf; j++) {
                double d = (double)pt[j] - used[k * nf + j];
                dist += d * d;
            }
            best = dist < best ? dist : best;
            if (k == membership[i])
                mine = dist;
        }
        if (membership[i] < 0 || membership[i] >= nc || mine > best * (1 + 1e-4) + 1e-6)
            wrong++;
        else {
            count[membership[i]]++;
            for (int j = 0; j < nf; j++)
                mean[(uint64_t)membership[i] * nf + (uint64_t)j] += pt[j];
        }
    }
    if (wrong)
        wl_die(WL_EXIT_FAIL, "verification failed: %llu points not assigned to a nearest center",
               (unsigned long long)wrong);
    double worst = 0;
    for (int k = 0; k < nc; k++)
        for (int j = 0; j < nf && count[k]; j++) {
            double m = mean[k * nf + j] / (double)count[k];
            double err = fabs(m - clusters[k * nf + j]) / (1.0 + fabs(m));
            worst = err > worst ? err : worst;
        }
    if (worst > 1e-3)
        wl_die(WL_EXIT_FAIL, "verification failed: a center is off its points' mean by %.3g",
               worst);

    printf("kmeans: %llu points x %llu features, %llu clusters, %llu iterations, %d threads, "
           "%s counters (row %llu ints)\n",
           (unsigned long long)npoints, (unsigned long long)nfeatures,
           (unsigned long long)nclusters, (unsigned long long)iterations, nthreads,
           padded ? "padded" : "unpadded", (unsigned long long)row);
    printf("last iteration: %.0f membership changes\n", delta);
    printf("verification: passed (max relative center error %.2g)\n", worst);
    wl_fom("kmeans", (double)npoints * (double)iterations / secs / 1e6, "Mpoints/s", secs);
    free(mean);
    free(count);
    free(feature);
    free(membership);
    free(clusters);
    free(used);
    free(partial_new_centers);
    free(partial_new_centers_len);
    return 0;
}
