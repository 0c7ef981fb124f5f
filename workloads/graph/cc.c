/*
 * cc: connected components with Afforest (Sutton, Ben-Nun, Barak, IPDPS'18).
 *
 * Large objects (separate allocations; see docs/workloads.md):
 *   comp       int32[n]     comp[v] = a vertex of v's component (a forest of parent links);
 *                           random reads and CAS writes in link(), read/write in compress()
 *   neighbors  uint32[m]    read: the first NEIGHBOR_ROUNDS entries of every list, then the
 *                           remaining entries only of vertices outside the largest component
 *   offsets    uint64[n+1]  read, sequential
 * Timed region per trial: the whole Afforest run. FoM: million directed edges (m) per second,
 * summed over trials. Verification: a serial union-find over all edges (untimed).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/wl.h"
#include "graph.h"
#include <objtier/phase.h>

/* Neighbors per vertex linked before the largest component is guessed. */
#define NEIGHBOR_ROUNDS 2
/* Vertices sampled to guess the largest component. */
#define SAMPLES         1024

/* Join the trees of u and v: the larger root is hooked under the smaller one. */
static void link_vertices(int32_t *comp, vid_t u, vid_t v)
{
    int32_t p1 = __atomic_load_n(&comp[u], __ATOMIC_RELAXED);
    int32_t p2 = __atomic_load_n(&comp[v], __ATOMIC_RELAXED);
    while (p1 != p2) {
        int32_t high = p1 > p2 ? p1 : p2, low = p1 + p2 - high;
        int32_t p_high = __atomic_load_n(&comp[high], __ATOMIC_RELAXED);
        if (p_high == low)
            break;
        int32_t expected = high;
        if (p_high == high && __atomic_compare_exchange_n(&comp[high], &expected, low, 0,
                                                          __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            break;
        p1 = __atomic_load_n(&comp[__atomic_load_n(&comp[high], __ATOMIC_RELAXED)],
                             __ATOMIC_RELAXED);
        p2 = __atomic_load_n(&comp[low], __ATOMIC_RELAXED);
    }
}

/* Point every vertex at its root. */
static void compress(int32_t *comp, uint64_t n)
{
#pragma omp parallel for schedule(dynamic, 16384)
    for (uint64_t v = 0; v < n; v++)
        while (comp[v] != comp[comp[v]])
            comp[v] = comp[comp[v]];
}

/* The most frequent label among SAMPLES deterministic random vertices. */
static int32_t frequent_label(const int32_t *comp, uint64_t n, uint64_t seed)
{
    int32_t sample[SAMPLES];
    wl_rng r = {wl_hash64(seed ^ 0xCCULL)};
    for (int i = 0; i < SAMPLES; i++)
        sample[i] = comp[wl_rng_below(&r, n)];
    int32_t best = sample[0];
    int best_count = 0;
    for (int i = 0; i < SAMPLES; i++) { /* O(SAMPLES^2) = 1M comparisons, negligible */
        int count = 0;
        for (int j = 0; j < SAMPLES; j++)
            count += sample[j] == sample[i];
        if (count > best_count) {
            best_count = count;
            best = sample[i];
        }
    }
    return best;
}

static void afforest(const graph *g, int32_t *comp, uint64_t seed)
{
#pragma omp parallel for schedule(static)
    for (uint64_t v = 0; v < g->n; v++)
        comp[v] = (int32_t)v;
    for (uint64_t r = 0; r < NEIGHBOR_ROUNDS; r++) {
#pragma omp parallel for schedule(dynamic, 16384)
        for (uint64_t u = 0; u < g->n; u++)
            if (r < graph_degree(g, u))
                link_vertices(comp, (vid_t)u, g->neighbors[g->offsets[u] + r]);
        compress(comp, g->n);
    }
    int32_t c = frequent_label(comp, g->n, seed);
#pragma omp parallel for schedule(dynamic, 16384)
    for (uint64_t u = 0; u < g->n; u++) {
        if (comp[u] == c)
            continue;
        for (uint64_t e = g->offsets[u] + NEIGHBOR_ROUNDS; e < g->offsets[u + 1]; e++)
            link_vertices(comp, (vid_t)u, g->neighbors[e]);
    }
    compress(comp, g->n);
}

static uint64_t uf_find(uint64_t *uf, uint64_t v)
{
    while (uf[v] != v) {
        uf[v] = uf[uf[v]]; /* path halving */
        v = uf[v];
    }
    return v;
}

/* Serial union-find check: comp is a labelling that agrees on every edge and has as many
 * distinct labels as there are components. Returns the component count, or -1. */
static int64_t verify(const graph *g, const int32_t *comp)
{
    uint64_t *uf = wl_malloc(g->n * sizeof(uint64_t), "verify union-find");
    for (uint64_t v = 0; v < g->n; v++)
        uf[v] = v;
    uint64_t components = g->n;
    for (uint64_t u = 0; u < g->n; u++)
        for (uint64_t e = g->offsets[u]; e < g->offsets[u + 1]; e++) {
            uint64_t a = uf_find(uf, u), b = uf_find(uf, g->neighbors[e]);
            if (a != b) {
                uf[a > b ? a : b] = a < b ? a : b;
                components--;
            }
            if (comp[u] != comp[g->neighbors[e]]) {
                free(uf);
                return -1;
            }
        }
    /* Labels are roots (comp[comp[v]] == comp[v]); count them. */
    uint64_t labels = 0;
    for (uint64_t v = 0; v < g->n; v++) {
        if (comp[v] < 0 || (uint64_t)comp[v] >= g->n || comp[comp[v]] != comp[v]) {
            free(uf);
            return -1;
        }
        labels += comp[v] == (int32_t)v;
    }
    free(uf);
    return labels == components ? (int64_t)components : -1;
}

static void usage(void)
{
    printf("usage: cc [-f FILE | -g SCALE | -u SCALE] [-k DEGREE] [-s SEED] [-n TRIALS]\n"
           "          [-t THREADS] [-v]\n"
           "Connected components (Afforest); prints million edges per second.\n" GRAPH_USAGE
           "  -v         verify every trial (default: the last trial only)\n"
           "  -h         this help\n"
           "Default graph: Kronecker scale 18.\n",
           16u);
}

int main(int argc, char **argv)
{
    wl_init(argv[0]);
    graph_opts o;
    graph_opts_init(&o, 16);
    int verify_all = 0;
    graph_parse_kernel_args(argc, argv, &o, &verify_all, usage);
    objtier_phase("load graph");
    graph *g = graph_from_opts(&o, 18);
    int32_t *comp = wl_malloc(g->n * sizeof(int32_t), "comp");

    double total = 0;
    for (uint64_t t = 0; t < o.trials; t++) {
        objtier_phase("components");
        double t0 = wl_now();
        afforest(g, comp, o.seed + t);
        double secs = wl_now() - t0;
        total += secs;
        if (verify_all || t + 1 == o.trials) {
            objtier_phase("verify");
            int64_t components = verify(g, comp);
            if (components < 0)
                wl_die(WL_EXIT_FAIL,
                       "verification failed (trial %llu): labels disagree with "
                       "a serial union-find",
                       (unsigned long long)t);
            printf("trial %llu: %lld components in %.6f s (verified)\n", (unsigned long long)t,
                   (long long)components, secs);
        } else {
            printf("trial %llu: %.6f s\n", (unsigned long long)t, secs);
        }
    }
    printf("verification: passed (%s)\n", verify_all ? "every trial" : "last trial");
    wl_fom("cc", (double)g->m * (double)o.trials / total / 1e6, "MEdges/s", total);
    free(comp);
    graph_free(g);
    return 0;
}
