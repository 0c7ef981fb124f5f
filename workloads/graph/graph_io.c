/* Graph file I/O, invariant checks, shared options and source choice; see graph.h. */
#define _GNU_SOURCE
#include "graph.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/wl.h"

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* The arrays are written as in memory; the build targets little-endian machines only. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "graph files are little-endian");

void graph_save(const graph *g, const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        wl_die(WL_EXIT_SYSTEM, "%s: %s", path, strerror(errno));
    unsigned char h[GRAPH_HEADER_BYTES];
    memcpy(h, GRAPH_MAGIC, 8);
    put_u32(h + 8, GRAPH_VERSION);
    put_u32(h + 12, GRAPH_FLAG_SYMMETRIC | GRAPH_FLAG_SORTED);
    put_u64(h + 16, g->n);
    put_u64(h + 24, g->m);
    wl_write_exact(f, h, sizeof h, path);
    wl_write_exact(f, g->offsets, (g->n + 1) * sizeof(uint64_t), path);
    wl_write_exact(f, g->neighbors, g->m * sizeof(vid_t), path);
    if (fclose(f))
        wl_die(WL_EXIT_SYSTEM, "%s: %s", path, strerror(errno));
}

graph *graph_load(const char *path, int check_symmetry)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        wl_die(WL_EXIT_SYSTEM, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st))
        wl_die(WL_EXIT_SYSTEM, "%s: %s", path, strerror(errno));
    unsigned char h[GRAPH_HEADER_BYTES];
    if ((uint64_t)st.st_size < sizeof h || fread(h, 1, sizeof h, f) != sizeof h)
        wl_die(WL_EXIT_USAGE, "%s: not a graph file (too short)", path);
    if (memcmp(h, GRAPH_MAGIC, 8))
        wl_die(WL_EXIT_USAGE, "%s: not a graph file (bad magic)", path);
    uint32_t version = get_u32(h + 8);
    if (version != GRAPH_VERSION)
        wl_die(WL_EXIT_USAGE, "%s: graph file version %u, expected %u", path, version,
               GRAPH_VERSION);
    uint64_t n = get_u64(h + 16), m = get_u64(h + 24);
    if (n == 0 || n > (1ULL << GRAPH_MAX_SCALE) || m > (1ULL << 40))
        wl_die(WL_EXIT_USAGE, "%s: implausible counts n=%llu m=%llu", path, (unsigned long long)n,
               (unsigned long long)m);
    uint64_t expect = GRAPH_HEADER_BYTES + (n + 1) * sizeof(uint64_t) + m * sizeof(vid_t);
    if ((uint64_t)st.st_size != expect)
        wl_die(WL_EXIT_USAGE, "%s: file has %llu bytes, its header implies %llu", path,
               (unsigned long long)st.st_size, (unsigned long long)expect);
    graph *g = wl_calloc(1, sizeof(graph), "graph");
    g->n = n;
    g->m = m;
    g->offsets = wl_malloc((n + 1) * sizeof(uint64_t), "offsets");
    g->neighbors = wl_malloc(m * sizeof(vid_t), "neighbors");
    wl_read_exact(f, g->offsets, (n + 1) * sizeof(uint64_t), path);
    wl_read_exact(f, g->neighbors, m * sizeof(vid_t), path);
    fclose(f);
    const char *problem = graph_check(g, check_symmetry);
    if (problem)
        wl_die(WL_EXIT_USAGE, "%s: invalid graph: %s", path, problem);
    return g;
}

int graph_has_edge(const graph *g, vid_t u, vid_t v)
{
    uint64_t lo = g->offsets[u], hi = g->offsets[u + 1];
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (g->neighbors[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->offsets[u + 1] && g->neighbors[lo] == v;
}

const char *graph_check(const graph *g, int check_symmetry)
{
    if (g->offsets[0] != 0 || g->offsets[g->n] != g->m)
        return "offsets do not span the neighbor array";
    for (uint64_t v = 0; v < g->n; v++)
        if (g->offsets[v] > g->offsets[v + 1])
            return "offsets decrease";
    int bad = 0;
#pragma omp parallel for schedule(dynamic, 1024) reduction(| : bad)
    for (uint64_t u = 0; u < g->n; u++) {
        for (uint64_t e = g->offsets[u]; e < g->offsets[u + 1]; e++) {
            vid_t v = g->neighbors[e];
            if (v >= g->n) {
                bad |= 1;
                break;
            }
            if (v == u)
                bad |= 2;
            if (e > g->offsets[u] && g->neighbors[e - 1] >= v)
                bad |= 4;
            else if (check_symmetry && !graph_has_edge(g, v, (vid_t)u))
                bad |= 8;
        }
    }
    if (bad & 1)
        return "a neighbor id is out of range";
    if (bad & 2)
        return "a self loop";
    if (bad & 4)
        return "an adjacency list is unsorted or has duplicates";
    if (bad & 8)
        return "the graph is not symmetric";
    return NULL;
}

void graph_free(graph *g)
{
    if (!g)
        return;
    free(g->offsets);
    free(g->neighbors);
    free(g);
}

void graph_opts_init(graph_opts *o, uint64_t trials)
{
    memset(o, 0, sizeof *o);
    o->degree = 16;
    o->seed = 1;
    o->trials = trials;
}

int graph_opts_handle(graph_opts *o, int c, const char *arg)
{
    switch (c) {
    case 'f': o->file = arg; return 1;
    case 'g':
    case 'u':
        o->scale = (unsigned)wl_parse_u64(c == 'g' ? "-g" : "-u", arg, 1, GRAPH_MAX_SCALE);
        o->uniform = c == 'u';
        return 1;
    case 'k': o->degree = (unsigned)wl_parse_u64("-k", arg, 1, 1024); return 1;
    case 's': o->seed = wl_parse_u64("-s", arg, 0, UINT64_MAX); return 1;
    case 'n': o->trials = wl_parse_u64("-n", arg, 1, 1000000); return 1;
    case 't': o->threads = wl_parse_u64("-t", arg, 1, 4096); return 1;
    case 'c': o->check_symmetry = 1; return 1;
    default: return 0;
    }
}

void graph_parse_kernel_args(int argc, char **argv, graph_opts *o, int *verify_all,
                             void (*usage)(void))
{
    int c;
    opterr = 0;
    while ((c = getopt(argc, argv, ":" GRAPH_OPTSTRING "vh")) != -1) {
        if (c == 'h') {
            usage();
            exit(0);
        }
        if (c == 'v')
            *verify_all = 1;
        else if (c == '?' || c == ':' || !graph_opts_handle(o, c, optarg))
            wl_bad_option(optopt, NULL);
    }
    if (optind < argc)
        wl_die(WL_EXIT_USAGE, "unexpected argument '%s' (try -h)", argv[optind]);
}

graph *graph_from_opts(const graph_opts *o, unsigned default_scale)
{
    if (o->file && o->scale)
        wl_die(WL_EXIT_USAGE, "give either -f FILE or -g/-u SCALE, not both");
    wl_set_threads(o->threads);
    double t0 = wl_now();
    graph *g;
    if (o->file) {
        g = graph_load(o->file, o->check_symmetry);
        printf("graph: loaded %s: %llu vertices, %llu directed edges in %.3f s\n", o->file,
               (unsigned long long)g->n, (unsigned long long)g->m, wl_now() - t0);
    } else {
        unsigned scale = o->scale ? o->scale : default_scale;
        if ((uint64_t)o->degree << scale > (1ULL << 36))
            wl_die(WL_EXIT_USAGE, "scale %u with edge factor %u is too large", scale, o->degree);
        g = graph_generate(scale, o->degree, o->uniform, o->seed);
        printf("graph: generated %s scale %u edge factor %u seed %llu: %llu vertices, "
               "%llu directed edges in %.3f s\n",
               o->uniform ? "uniform" : "kronecker", scale, o->degree, (unsigned long long)o->seed,
               (unsigned long long)g->n, (unsigned long long)g->m, wl_now() - t0);
    }
    if (g->n > (1ULL << GRAPH_MAX_SCALE))
        wl_die(WL_EXIT_USAGE, "graph too large");
    return g;
}

uint64_t graph_pick_sources(const graph *g, uint64_t seed, vid_t *out, uint64_t count)
{
    wl_rng r = {wl_hash64(seed ^ 0x50C4CEULL)};
    uint64_t found = 0;
    /* Bounded number of draws so that an edgeless graph terminates. */
    for (uint64_t tries = 0; found < count && tries < 64 * count + 1024; tries++) {
        vid_t v = (vid_t)wl_rng_below(&r, g->n);
        if (graph_degree(g, v) > 0)
            out[found++] = v;
    }
    return found;
}
