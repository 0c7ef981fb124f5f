/*
 * Compressed sparse row (CSR) graphs of the graph kernels (bfs, bc, cc) and of graphgen.
 *
 * Invariants of a graph built by graph_generate or accepted by graph_load:
 *   - vertices are 0 .. n-1 (n <= 2^31), stored as vid_t (uint32);
 *   - the adjacency list of v is neighbors[offsets[v] .. offsets[v+1]), sorted ascending,
 *     without duplicates and without v itself;
 *   - the graph is symmetric: u is in adj(v) exactly when v is in adj(u), so
 *     m = offsets[n] = 2 x (number of undirected edges).
 * offsets and neighbors are two separate heap objects (the kernels' largest inputs).
 *
 * File layout (little-endian; docs/workloads.md):
 *   0   char[8]   magic "OTGRAPH\0"
 *   8   uint32    version (1)
 *   12  uint32    flags (bit 0: symmetric, bit 1: sorted adjacency; both set)
 *   16  uint64    n, vertex count
 *   24  uint64    m, entries in neighbors
 *   32  uint64    offsets[n + 1]
 *   ..  uint32    neighbors[m]
 */
#ifndef OBJTIER_GRAPH_H
#define OBJTIER_GRAPH_H

#include <stdint.h>

typedef uint32_t vid_t;

#define GRAPH_MAGIC          "OTGRAPH\0"
#define GRAPH_VERSION        1u
#define GRAPH_FLAG_SYMMETRIC 1u
#define GRAPH_FLAG_SORTED    2u
#define GRAPH_HEADER_BYTES   32u
#define GRAPH_MAX_SCALE      31u

typedef struct graph {
    uint64_t n;        /* vertex count */
    uint64_t m;        /* directed edge count = length of neighbors */
    uint64_t *offsets; /* n + 1 entries; offsets[0] = 0, offsets[n] = m */
    vid_t *neighbors;  /* m entries */
} graph;

static inline uint64_t graph_degree(const graph *g, uint64_t v)
{
    return g->offsets[v + 1] - g->offsets[v];
}

/* Kronecker (Graph500 A=0.57, B=0.19, C=0.19, vertex labels permuted) when uniform == 0,
 * uniform random endpoints otherwise; 2^scale vertices, degree x 2^scale generated edges,
 * then symmetrized, self loops and duplicates removed. Deterministic in (scale, degree,
 * uniform, seed), independent of the thread count. Exits on allocation failure. */
graph *graph_generate(unsigned scale, unsigned degree, int uniform, uint64_t seed);

/* Write / read the file layout above; both exit with a one-line error on failure.
 * graph_load checks the header, the file size and the CSR invariants; symmetry only when
 * check_symmetry is set (a random-access pass over every edge, several BFS trials long,
 * which would otherwise dominate a run's memory profile and time). */
void graph_save(const graph *g, const char *path);
graph *graph_load(const char *path, int check_symmetry);

/* Check the CSR invariants (sorted, no duplicates, no self loops, ids < n, and symmetric
 * when check_symmetry). Sequential except for the symmetry check (one binary search per
 * edge). Returns NULL when valid, otherwise a static message naming the first problem. */
const char *graph_check(const graph *g, int check_symmetry);

/* 1 when u -> v is an edge (binary search in adj(u)). */
int graph_has_edge(const graph *g, vid_t u, vid_t v);

void graph_free(graph *g);

/* Command-line options shared by the kernels: -f FILE | -g SCALE | -u SCALE, -k DEGREE,
 * -s SEED, -n TRIALS, -t THREADS, -c. */
typedef struct graph_opts {
    const char *file;
    unsigned scale;  /* 0 = not given */
    unsigned degree; /* edge factor, default 16 */
    int uniform;
    uint64_t seed;
    uint64_t trials;
    uint64_t threads;   /* 0 = OpenMP default */
    int check_symmetry; /* -c: graph_load also checks that the file's graph is symmetric */
} graph_opts;

#define GRAPH_OPTSTRING "f:g:u:k:s:n:t:c"
#define GRAPH_USAGE                                                                                \
    "  -f FILE    load a graph written by graphgen (loading is not timed)\n"                       \
    "  -c         with -f: also check that the loaded graph is symmetric\n"                        \
    "  -g SCALE   generate a Kronecker graph with 2^SCALE vertices (not timed)\n"                  \
    "  -u SCALE   generate a uniform random graph with 2^SCALE vertices (not timed)\n"             \
    "  -k DEGREE  edge factor: generated edges per vertex (default 16)\n"                          \
    "  -s SEED    seed of the generator and of the source choice (default 1)\n"                    \
    "  -n TRIALS  timed trials (default %u)\n"                                                     \
    "  -t THREADS OpenMP threads (default: the OpenMP default)\n"

void graph_opts_init(graph_opts *o, uint64_t trials);

/* Handle one getopt result of GRAPH_OPTSTRING; returns 0 when `c` is not a graph option. */
int graph_opts_handle(graph_opts *o, int c, const char *arg);

/* Parse a graph kernel's command line: the graph options, -v (sets *verify_all) and -h
 * (prints usage, exits 0). Anything else dies with a one-line error (exit WL_EXIT_USAGE). */
void graph_parse_kernel_args(int argc, char **argv, graph_opts *o, int *verify_all,
                             void (*usage)(void));

/* Load o->file, or generate (default: Kronecker scale `default_scale`); prints one
 * "graph: ..." line describing the result. Not timed by the kernels. */
graph *graph_from_opts(const graph_opts *o, unsigned default_scale);

/* Deterministic choice of `count` source vertices with degree > 0 from `seed`
 * (the same sources for the same graph and seed). Returns the number found. */
uint64_t graph_pick_sources(const graph *g, uint64_t seed, vid_t *out, uint64_t count);

#endif
