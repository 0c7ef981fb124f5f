/*
 * bc: betweenness centrality, Brandes' algorithm from a fixed number of sampled sources.
 *
 * Per source: a level-synchronous parallel BFS counts shortest paths (sigma), then a
 * backward sweep over the levels accumulates dependencies (delta) by pulling from the
 * successors of each vertex; scores[v] += delta[v].
 *
 * Large objects (separate allocations; see docs/workloads.md):
 *   neighbors  uint32[m]    read, twice per source (forward BFS and backward sweep)
 *   offsets    uint64[n+1]  read
 *   depth      int32[n]     BFS level, -1 = unreached; random reads (every edge, both
 *                           sweeps) and CAS writes
 *   sigma      double[n]    shortest-path counts; random atomic adds (forward), random reads
 *                           (backward)
 *   delta      double[n]    dependencies; random reads of successors, sequential-by-level writes
 *   order      uint32[n]    vertices in BFS order (levels are contiguous slices)
 *   scores     double[n]    the result; one read-modify-write per reached vertex per source
 * Timed region: all sources. FoM: MTEPS = directed edges (m) x sources per second.
 * Verification: sum of scores = sum over sources of (depth(t) - 1) over reached t (always);
 * brute force from all-pairs BFS when n <= 1024 or with -v.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/wl.h"
#include "graph.h"
#include <objtier/phase.h>

#define LOCAL_QUEUE       1024
#define BRUTE_FORCE_MAX_N 1024

typedef struct bc_state {
    const graph *g;
    int32_t *depth;
    double *sigma, *delta, *scores;
    vid_t *order; /* BFS order; level d is order[level_start[d] .. level_start[d+1]) */
    uint64_t *level_start;
    uint64_t levels;
} bc_state;

static inline void atomic_add_double(double *p, double x)
{
    double old, want;
    __atomic_load(p, &old, __ATOMIC_RELAXED);
    do {
        want = old + x;
    } while (!__atomic_compare_exchange(p, &old, &want, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

/* Returns the sum over reached t != source of (depth(t) - 1), the expected score sum. */
static double brandes_source(bc_state *s, vid_t source)
{
    const graph *g = s->g;
#pragma omp parallel for schedule(static)
    for (uint64_t v = 0; v < g->n; v++) {
        s->depth[v] = -1;
        s->sigma[v] = 0;
        s->delta[v] = 0;
    }
    s->depth[source] = 0;
    s->sigma[source] = 1;
    s->order[0] = source;
    s->level_start[0] = 0;
    s->level_start[1] = 1;
    uint64_t d = 0;
    /* Forward: level d is complete (its sigma final) before level d+1 is expanded. */
    while (s->level_start[d + 1] > s->level_start[d]) {
        uint64_t lo = s->level_start[d], hi = s->level_start[d + 1], tail = hi;
#pragma omp parallel
        {
            vid_t local[LOCAL_QUEUE];
            uint64_t nlocal = 0;
#pragma omp for schedule(dynamic, 64) nowait
            for (uint64_t i = lo; i < hi; i++) {
                vid_t u = s->order[i];
                for (uint64_t e = g->offsets[u]; e < g->offsets[u + 1]; e++) {
                    vid_t v = g->neighbors[e];
                    int32_t expected = -1;
                    if (__atomic_load_n(&s->depth[v], __ATOMIC_RELAXED) < 0 &&
                        __atomic_compare_exchange_n(&s->depth[v], &expected, (int32_t)d + 1, 0,
                                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
                        local[nlocal++] = v;
                        if (nlocal == LOCAL_QUEUE) {
                            uint64_t at = __atomic_fetch_add(&tail, nlocal, __ATOMIC_RELAXED);
                            memcpy(s->order + at, local, nlocal * sizeof(vid_t));
                            nlocal = 0;
                        }
                    }
                    if (__atomic_load_n(&s->depth[v], __ATOMIC_RELAXED) == (int32_t)d + 1)
                        atomic_add_double(&s->sigma[v], s->sigma[u]);
                }
            }
            uint64_t at = __atomic_fetch_add(&tail, nlocal, __ATOMIC_RELAXED);
            memcpy(s->order + at, local, nlocal * sizeof(vid_t));
        }
        d++;
        s->level_start[d + 1] = tail;
    }
    s->levels = d; /* levels 0 .. d-1 are non-empty */
    /* Backward: delta[w] = sum over successors v (depth d+1) of sigma[w]/sigma[v](1+delta[v]). */
    double expected_sum = 0;
    for (uint64_t lev = s->levels; lev-- > 1;) {
        uint64_t lo = s->level_start[lev], hi = s->level_start[lev + 1];
#pragma omp parallel for schedule(dynamic, 64)
        for (uint64_t i = lo; i < hi; i++) {
            vid_t w = s->order[i];
            double acc = 0;
            for (uint64_t e = g->offsets[w]; e < g->offsets[w + 1]; e++) {
                vid_t v = g->neighbors[e];
                if (s->depth[v] == (int32_t)lev + 1)
                    acc += (1.0 + s->delta[v]) / s->sigma[v];
            }
            s->delta[w] = s->sigma[w] * acc;
            s->scores[w] += s->delta[w];
        }
        expected_sum += (double)(hi - lo) * (double)(lev - 1);
    }
    return expected_sum;
}

/* Scores from the definition: for each source s and pair (t, v) with v strictly inside a
 * shortest s-t path, add sigma_sv * sigma_vt / sigma_st. All-pairs BFS, O(n m + k n^2). */
static const char *brute_force(const graph *g, const vid_t *sources, uint64_t k,
                               const double *scores)
{
    uint64_t n = g->n;
    int32_t *dist = wl_malloc(n * n * sizeof(int32_t), "brute-force distances");
    double *paths = wl_calloc(n * n, sizeof(double), "brute-force path counts");
    vid_t *queue = wl_malloc(n * sizeof(vid_t), "brute-force queue");
    double *expect = wl_calloc(n, sizeof(double), "brute-force scores");
    for (uint64_t a = 0; a < n; a++) {
        int32_t *da = dist + a * n;
        double *pa = paths + a * n;
        for (uint64_t v = 0; v < n; v++)
            da[v] = -1;
        da[a] = 0;
        pa[a] = 1;
        uint64_t head = 0, tail = 0;
        queue[tail++] = (vid_t)a;
        while (head < tail) {
            vid_t u = queue[head++];
            for (uint64_t e = g->offsets[u]; e < g->offsets[u + 1]; e++) {
                vid_t v = g->neighbors[e];
                if (da[v] < 0) {
                    da[v] = da[u] + 1;
                    queue[tail++] = v;
                }
                if (da[v] == da[u] + 1)
                    pa[v] += pa[u];
            }
        }
    }
    for (uint64_t i = 0; i < k; i++) {
        uint64_t s = sources[i];
        for (uint64_t t = 0; t < n; t++) {
            if (t == s || dist[s * n + t] < 0)
                continue;
            for (uint64_t v = 0; v < n; v++) {
                if (v == s || v == t || dist[s * n + v] < 0 || dist[v * n + t] < 0)
                    continue;
                if (dist[s * n + v] + dist[v * n + t] == dist[s * n + t])
                    expect[v] += paths[s * n + v] * paths[v * n + t] / paths[s * n + t];
            }
        }
    }
    const char *problem = NULL;
    for (uint64_t v = 0; v < n && !problem; v++)
        if (fabs(expect[v] - scores[v]) > 1e-6 * (1.0 + fabs(expect[v])))
            problem = "scores differ from the brute-force computation";
    free(dist);
    free(paths);
    free(queue);
    free(expect);
    return problem;
}

static void usage(void)
{
    printf(
        "usage: bc [-f FILE | -g SCALE | -u SCALE] [-k DEGREE] [-s SEED] [-i SOURCES]\n"
        "          [-n TRIALS] [-t THREADS] [-v]\n"
        "Betweenness centrality (Brandes) from SOURCES sampled sources; prints MTEPS.\n" GRAPH_USAGE
        "  -i SOURCES sources per trial (default 16)\n"
        "  -v         brute-force check of the scores (automatic when n <= %u)\n"
        "  -h         this help\n"
        "Default graph: Kronecker scale 16.\n",
        1u, BRUTE_FORCE_MAX_N);
}

int main(int argc, char **argv)
{
    wl_init(argv[0]);
    graph_opts o;
    graph_opts_init(&o, 1);
    uint64_t nsources = 16;
    int brute = 0, c;
    opterr = 0;
    while ((c = getopt(argc, argv, ":" GRAPH_OPTSTRING "i:vh")) != -1) {
        if (c == 'h') {
            usage();
            return 0;
        }
        if (c == 'v')
            brute = 1;
        else if (c == 'i')
            nsources = wl_parse_u64("-i", optarg, 1, 1000000);
        else if (c == '?' || c == ':' || !graph_opts_handle(&o, c, optarg))
            wl_bad_option(optopt, NULL);
    }
    if (optind < argc)
        wl_die(WL_EXIT_USAGE, "unexpected argument '%s' (try -h)", argv[optind]);
    objtier_phase("load graph");
    graph *g = graph_from_opts(&o, 16);
    if (g->n <= BRUTE_FORCE_MAX_N)
        brute = 1;
    if (brute && g->n > 65536)
        wl_die(WL_EXIT_USAGE, "-v needs a graph with at most 65536 vertices");

    bc_state s = {.g = g};
    s.depth = wl_malloc(g->n * sizeof(int32_t), "depth");
    s.sigma = wl_malloc(g->n * sizeof(double), "sigma");
    s.delta = wl_malloc(g->n * sizeof(double), "delta");
    s.order = wl_malloc(g->n * sizeof(vid_t), "order");
    s.level_start = wl_malloc((g->n + 2) * sizeof(uint64_t), "level starts");
    s.scores = wl_malloc(g->n * sizeof(double), "scores");
    vid_t *sources = wl_malloc(nsources * sizeof(vid_t), "sources");

    double total = 0;
    for (uint64_t t = 0; t < o.trials; t++) {
        if (graph_pick_sources(g, o.seed + t, sources, nsources) < nsources)
            wl_die(WL_EXIT_USAGE, "the graph has no edges to search");
        memset(s.scores, 0, g->n * sizeof(double));
        double expected_sum = 0;
        objtier_phase("centrality");
        double t0 = wl_now();
        for (uint64_t i = 0; i < nsources; i++)
            expected_sum += brandes_source(&s, sources[i]);
        double secs = wl_now() - t0;
        total += secs;
        double sum = 0, best = 0;
        for (uint64_t v = 0; v < g->n; v++) {
            sum += s.scores[v];
            best = s.scores[v] > best ? s.scores[v] : best;
        }
        if (fabs(sum - expected_sum) > 1e-6 * (1.0 + expected_sum))
            wl_die(WL_EXIT_FAIL, "verification failed (trial %llu): score sum %.9g, expected %.9g",
                   (unsigned long long)t, sum, expected_sum);
        printf("trial %llu: %llu sources, score sum %.6g, max score %.6g in %.6f s\n",
               (unsigned long long)t, (unsigned long long)nsources, sum, best, secs);
    }
    if (brute) {
        objtier_phase("verify");
        const char *problem = brute_force(g, sources, nsources, s.scores);
        if (problem)
            wl_die(WL_EXIT_FAIL, "verification failed: %s", problem);
    }
    printf("verification: passed (score sums%s)\n", brute ? " and brute force" : "");
    wl_fom("bc", (double)g->m * (double)nsources * (double)o.trials / total / 1e6, "MTEPS", total);
    free(sources);
    free(s.depth);
    free(s.sigma);
    free(s.delta);
    free(s.order);
    free(s.level_start);
    free(s.scores);
    graph_free(g);
    return 0;
}
