/*
 * bfs: direction-optimizing breadth-first search (Beamer, Asanovic, Patterson, SC'12).
 *
 * Large objects (separate allocations, all n or m sized; see docs/workloads.md):
 *   neighbors  uint32[m]      read: top-down scans adj(u) of frontier vertices, bottom-up
 *                             scans adj(v) of unvisited vertices until a parent is found
 *   offsets    uint64[n+1]    read, two entries per scanned vertex
 *   parent     int32[n]       parent[v] = BFS-tree parent, -1 = not reached; random reads
 *                             and CAS writes in top-down steps, sequential reads and writes
 *                             in bottom-up steps
 *   queue      uint32[n]      frontier of top-down steps (sliding window: [head, tail))
 *   front/next uint64[n/64]   frontier bitmaps of bottom-up steps (random bit tests)
 * Timed region per trial: parent reset + search. FoM: MTEPS = undirected edges of the
 * reached component (Graph500 convention) per second, summed over trials.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/wl.h"
#include "graph.h"
#include <objtier/phase.h>

/* Switching thresholds of the direction-optimizing heuristic (values from the paper). */
#define BFS_ALPHA   15
#define BFS_BETA    18
/* Per-thread staging buffer of the top-down step, in vertices. */
#define LOCAL_QUEUE 1024

typedef struct bfs_state {
    const graph *g;
    int32_t *parent;
    vid_t *queue;
    uint64_t head, tail; /* current frontier: queue[head .. tail) */
    uint64_t *front, *next;
    uint64_t words; /* bitmap length in uint64 words */
} bfs_state;

static inline int bit_test(const uint64_t *bm, uint64_t v)
{
    return (bm[v >> 6] >> (v & 63)) & 1;
}

static inline void bit_set_atomic(uint64_t *bm, uint64_t v)
{
    __atomic_fetch_or(&bm[v >> 6], 1ULL << (v & 63), __ATOMIC_RELAXED);
}

/* One top-down step; returns the sum of degrees of newly discovered vertices. */
static uint64_t top_down(bfs_state *s)
{
    const graph *g = s->g;
    uint64_t scout = 0, next_tail = s->tail;
#pragma omp parallel reduction(+ : scout)
    {
        vid_t local[LOCAL_QUEUE];
        uint64_t nlocal = 0;
#pragma omp for schedule(dynamic, 64) nowait
        for (uint64_t i = s->head; i < s->tail; i++) {
            vid_t u = s->queue[i];
            for (uint64_t e = g->offsets[u]; e < g->offsets[u + 1]; e++) {
                vid_t v = g->neighbors[e];
                int32_t expected = -1;
                if (__atomic_load_n(&s->parent[v], __ATOMIC_RELAXED) < 0 &&
                    __atomic_compare_exchange_n(&s->parent[v], &expected, (int32_t)u, 0,
                                                __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
                    scout += graph_degree(g, v);
                    local[nlocal++] = v;
                    if (nlocal == LOCAL_QUEUE) {
                        uint64_t at = __atomic_fetch_add(&next_tail, nlocal, __ATOMIC_RELAXED);
                        memcpy(s->queue + at, local, nlocal * sizeof(vid_t));
                        nlocal = 0;
                    }
                }
            }
        }
        uint64_t at = __atomic_fetch_add(&next_tail, nlocal, __ATOMIC_RELAXED);
        memcpy(s->queue + at, local, nlocal * sizeof(vid_t));
    }
    s->head = s->tail;
    s->tail = next_tail;
    return scout;
}

/* One bottom-up step from bitmap front into bitmap next; returns vertices discovered. */
static uint64_t bottom_up(bfs_state *s)
{
    const graph *g = s->g;
    uint64_t awake = 0;
    memset(s->next, 0, s->words * sizeof(uint64_t));
#pragma omp parallel for schedule(dynamic, 1024) reduction(+ : awake)
    for (uint64_t v = 0; v < g->n; v++) {
        if (s->parent[v] >= 0)
            continue;
        for (uint64_t e = g->offsets[v]; e < g->offsets[v + 1]; e++) {
            vid_t u = g->neighbors[e];
            if (bit_test(s->front, u)) {
                s->parent[v] = (int32_t)u;
                bit_set_atomic(s->next, v);
                awake++;
                break;
            }
        }
    }
    uint64_t *t = s->front;
    s->front = s->next;
    s->next = t;
    return awake;
}

static void queue_to_bitmap(bfs_state *s)
{
    memset(s->front, 0, s->words * sizeof(uint64_t));
#pragma omp parallel for schedule(static)
    for (uint64_t i = s->head; i < s->tail; i++)
        bit_set_atomic(s->front, s->queue[i]);
}

static void bitmap_to_queue(bfs_state *s)
{
    uint64_t tail = 0;
#pragma omp parallel
    {
        vid_t local[LOCAL_QUEUE];
        uint64_t nlocal = 0;
#pragma omp for schedule(static) nowait
        for (uint64_t w = 0; w < s->words; w++) {
            for (uint64_t bits = s->front[w]; bits; bits &= bits - 1) {
                local[nlocal++] = (vid_t)(w * 64 + (uint64_t)__builtin_ctzll(bits));
                if (nlocal == LOCAL_QUEUE) {
                    uint64_t at = __atomic_fetch_add(&tail, nlocal, __ATOMIC_RELAXED);
                    memcpy(s->queue + at, local, nlocal * sizeof(vid_t));
                    nlocal = 0;
                }
            }
        }
        uint64_t at = __atomic_fetch_add(&tail, nlocal, __ATOMIC_RELAXED);
        memcpy(s->queue + at, local, nlocal * sizeof(vid_t));
    }
    s->head = 0;
    s->tail = tail;
}

static void bfs_run(bfs_state *s, vid_t source)
{
    const graph *g = s->g;
#pragma omp parallel for schedule(static)
    for (uint64_t v = 0; v < g->n; v++)
        s->parent[v] = -1;
    s->parent[source] = (int32_t)source;
    s->queue[0] = source;
    s->head = 0;
    s->tail = 1;
    uint64_t edges_to_check = g->m, scout = graph_degree(g, source);
    while (s->tail > s->head) {
        if (scout > edges_to_check / BFS_ALPHA) {
            queue_to_bitmap(s);
            uint64_t awake = s->tail - s->head, old;
            do {
                old = awake;
                awake = bottom_up(s);
            } while (awake >= old || awake > g->n / BFS_BETA);
            bitmap_to_queue(s);
            scout = 1;
        } else {
            edges_to_check -= scout < edges_to_check ? scout : edges_to_check;
            scout = top_down(s);
        }
    }
}

/* Serial BFS depths (-1 = unreachable) for verification; returns NULL when the parent
 * array is a valid BFS tree of `source`, otherwise a message. */
static const char *verify(const graph *g, const int32_t *parent, vid_t source, int32_t *depth,
                          vid_t *queue)
{
    for (uint64_t v = 0; v < g->n; v++)
        depth[v] = -1;
    depth[source] = 0;
    uint64_t head = 0, tail = 0;
    queue[tail++] = source;
    while (head < tail) {
        vid_t u = queue[head++];
        for (uint64_t e = g->offsets[u]; e < g->offsets[u + 1]; e++)
            if (depth[g->neighbors[e]] < 0) {
                depth[g->neighbors[e]] = depth[u] + 1;
                queue[tail++] = g->neighbors[e];
            }
    }
    if (parent[source] != (int32_t)source)
        return "the source is not its own parent";
    for (uint64_t v = 0; v < g->n; v++) {
        if ((depth[v] < 0) != (parent[v] < 0))
            return depth[v] < 0 ? "an unreachable vertex has a parent"
                                : "a reachable vertex has no parent";
        if (v == source || parent[v] < 0)
            continue;
        if ((uint64_t)parent[v] >= g->n)
            return "a parent id is out of range";
        if (depth[parent[v]] != depth[v] - 1)
            return "a parent is not one level closer to the source";
        if (!graph_has_edge(g, (vid_t)v, (vid_t)parent[v]))
            return "a tree edge is not an edge of the graph";
    }
    return NULL;
}

static void usage(void)
{
    printf(
        "usage: bfs [-f FILE | -g SCALE | -u SCALE] [-k DEGREE] [-s SEED] [-n TRIALS]\n"
        "           [-t THREADS] [-v]\n"
        "Direction-optimizing BFS from TRIALS sources chosen from SEED; prints MTEPS.\n" GRAPH_USAGE
        "  -v         verify every trial (default: the last trial only)\n"
        "  -h         this help\n"
        "Default graph: Kronecker scale 18.\n",
        8u);
}

int main(int argc, char **argv)
{
    wl_init(argv[0]);
    graph_opts o;
    graph_opts_init(&o, 8);
    int verify_all = 0;
    graph_parse_kernel_args(argc, argv, &o, &verify_all, usage);
    objtier_phase("load graph");
    graph *g = graph_from_opts(&o, 18);

    bfs_state s = {.g = g};
    s.words = (g->n + 63) / 64;
    s.parent = wl_malloc(g->n * sizeof(int32_t), "parent");
    s.queue = wl_malloc(g->n * sizeof(vid_t), "queue");
    s.front = wl_calloc(s.words, sizeof(uint64_t), "front bitmap");
    s.next = wl_calloc(s.words, sizeof(uint64_t), "next bitmap");
    vid_t *sources = wl_malloc(o.trials * sizeof(vid_t), "sources");
    if (graph_pick_sources(g, o.seed, sources, o.trials) < o.trials)
        wl_die(WL_EXIT_USAGE, "the graph has no edges to search");
    int32_t *depth = NULL;
    vid_t *vqueue = NULL;

    double total = 0, edges = 0;
    for (uint64_t t = 0; t < o.trials; t++) {
        objtier_phase("search");
        double t0 = wl_now();
        bfs_run(&s, sources[t]);
        double secs = wl_now() - t0;
        total += secs;
        uint64_t degsum = 0, reached = 0;
#pragma omp parallel for reduction(+ : degsum, reached)
        for (uint64_t v = 0; v < g->n; v++)
            if (s.parent[v] >= 0) {
                degsum += graph_degree(g, v);
                reached++;
            }
        edges += (double)degsum / 2;
        printf("trial %llu: source %u reached %llu vertices, %llu edges in %.6f s\n",
               (unsigned long long)t, sources[t], (unsigned long long)reached,
               (unsigned long long)(degsum / 2), secs);
        if (verify_all || t + 1 == o.trials) {
            objtier_phase("verify");
            if (!depth) {
                depth = wl_malloc(g->n * sizeof(int32_t), "verify depth");
                vqueue = wl_malloc(g->n * sizeof(vid_t), "verify queue");
            }
            const char *problem = verify(g, s.parent, sources[t], depth, vqueue);
            if (problem)
                wl_die(WL_EXIT_FAIL, "verification failed (trial %llu, source %u): %s",
                       (unsigned long long)t, sources[t], problem);
        }
    }
    printf("verification: passed (%s)\n", verify_all ? "every trial" : "last trial");
    wl_fom("bfs", edges / total / 1e6, "MTEPS", total);
    free(depth);
    free(vqueue);
    free(sources);
    free(s.parent);
    free(s.queue);
    free(s.front);
    free(s.next);
    graph_free(g);
    return 0;
}
