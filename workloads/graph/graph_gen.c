/*
 * Graph generators: Kronecker (Graph500 parameters) and uniform random, then CSR build.
 *
 * Edge i is drawn from a generator seeded by hash(seed, i), so the edge list is the same for
 * any thread count. Kronecker labels are permuted by a seeded Fisher-Yates shuffle so that
 * high-degree vertices are not clustered at low ids (as Graph500 does).
 */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

#include "../common/wl.h"

/* Graph500 initiator probabilities; D = 1 - A - B - C = 0.05. */
#define KRON_A 0.57
#define KRON_B 0.19
#define KRON_C 0.19

static void draw_edge(unsigned scale, int uniform, uint64_t seed, uint64_t i, vid_t *u, vid_t *v)
{
    wl_rng r = {wl_hash64(seed * 0x100000001B3ULL ^ wl_hash64(i))};
    if (uniform) {
        *u = (vid_t)wl_rng_below(&r, 1ULL << scale);
        *v = (vid_t)wl_rng_below(&r, 1ULL << scale);
        return;
    }
    /* One 32-bit uniform per level, two levels per 64-bit draw. */
    const uint64_t ta = (uint64_t)(KRON_A * 4294967296.0);
    const uint64_t tab = (uint64_t)((KRON_A + KRON_B) * 4294967296.0);
    const uint64_t tabc = (uint64_t)((KRON_A + KRON_B + KRON_C) * 4294967296.0);
    uint64_t a = 0, b = 0, bits = 0;
    for (unsigned level = 0; level < scale; level++) {
        if ((level & 1) == 0)
            bits = wl_rng_next(&r);
        uint64_t p = bits & 0xFFFFFFFFULL;
        bits >>= 32;
        unsigned ubit = p >= tab;                          /* quadrants C or D */
        unsigned vbit = (p >= ta && p < tab) || p >= tabc; /* quadrants B or D */
        a = (a << 1) | ubit;
        b = (b << 1) | vbit;
    }
    *u = (vid_t)a;
    *v = (vid_t)b;
}

static int cmp_vid(const void *x, const void *y)
{
    vid_t a = *(const vid_t *)x, b = *(const vid_t *)y;
    return (a > b) - (a < b);
}

graph *graph_generate(unsigned scale, unsigned degree, int uniform, uint64_t seed)
{
    const uint64_t n = 1ULL << scale;
    const uint64_t ne = (uint64_t)degree * n;

    /* Edge list: ne (u, v) pairs; generation only. */
    vid_t *el = wl_malloc(ne * 2 * sizeof(vid_t), "edge list");
#pragma omp parallel for schedule(static)
    for (uint64_t i = 0; i < ne; i++)
        draw_edge(scale, uniform, seed, i, &el[2 * i], &el[2 * i + 1]);

    if (!uniform) {
        vid_t *perm = wl_malloc(n * sizeof(vid_t), "vertex permutation");
        wl_rng r = {wl_hash64(seed ^ 0x5EEDULL)};
        for (uint64_t i = 0; i < n; i++)
            perm[i] = (vid_t)i;
        for (uint64_t i = n - 1; i > 0; i--) {
            uint64_t j = wl_rng_below(&r, i + 1);
            vid_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
#pragma omp parallel for schedule(static)
        for (uint64_t i = 0; i < 2 * ne; i++)
            el[i] = perm[el[i]];
        free(perm);
    }

    /* Degrees with both directions of every non-loop edge (duplicates still included). */
    uint64_t *pos = wl_calloc(n + 1, sizeof(uint64_t), "edge positions");
#pragma omp parallel for schedule(static)
    for (uint64_t i = 0; i < ne; i++) {
        vid_t u = el[2 * i], v = el[2 * i + 1];
        if (u == v)
            continue;
        __atomic_fetch_add(&pos[u], 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&pos[v], 1, __ATOMIC_RELAXED);
    }
    uint64_t *start = wl_malloc((n + 1) * sizeof(uint64_t), "raw offsets");
    uint64_t total = 0;
    for (uint64_t v = 0; v < n; v++) {
        start[v] = total;
        total += pos[v];
        pos[v] = start[v];
    }
    start[n] = total;

    vid_t *raw = wl_malloc(total * sizeof(vid_t), "raw neighbors");
#pragma omp parallel for schedule(static)
    for (uint64_t i = 0; i < ne; i++) {
        vid_t u = el[2 * i], v = el[2 * i + 1];
        if (u == v)
            continue;
        raw[__atomic_fetch_add(&pos[u], 1, __ATOMIC_RELAXED)] = v;
        raw[__atomic_fetch_add(&pos[v], 1, __ATOMIC_RELAXED)] = u;
    }
    free(el);

    /* Sort and deduplicate each list in place; pos[v] becomes the deduplicated degree. */
#pragma omp parallel for schedule(dynamic, 1024)
    for (uint64_t v = 0; v < n; v++) {
        vid_t *list = raw + start[v];
        uint64_t d = start[v + 1] - start[v], k = 0;
        if (d > 32) {
            qsort(list, d, sizeof(vid_t), cmp_vid);
        } else {
            for (uint64_t j = 1; j < d; j++) { /* insertion sort for short lists */
                vid_t x = list[j];
                uint64_t k2 = j;
                for (; k2 > 0 && list[k2 - 1] > x; k2--)
                    list[k2] = list[k2 - 1];
                list[k2] = x;
            }
        }
        for (uint64_t j = 0; j < d; j++)
            if (k == 0 || list[j] != list[k - 1])
                list[k++] = list[j];
        pos[v] = k;
    }

    graph *g = wl_calloc(1, sizeof(graph), "graph");
    g->n = n;
    g->offsets = wl_malloc((n + 1) * sizeof(uint64_t), "offsets");
    uint64_t m = 0;
    for (uint64_t v = 0; v < n; v++) {
        g->offsets[v] = m;
        m += pos[v];
    }
    g->offsets[n] = m;
    g->m = m;
    g->neighbors = wl_malloc(m * sizeof(vid_t), "neighbors");
#pragma omp parallel for schedule(dynamic, 1024)
    for (uint64_t v = 0; v < n; v++)
        memcpy(g->neighbors + g->offsets[v], raw + start[v], pos[v] * sizeof(vid_t));
    free(raw);
    free(start);
    free(pos);
    return g;
}
