/*
 * graphgen: generate a Kronecker or uniform random graph and save it as a CSR file
 * (layout in graph.h and docs/workloads.md) for bfs/bc/cc -f FILE.
 * Timed region: generation and CSR build (not the file write). FoM: million input
 * edges (degree x 2^scale) generated and built per second.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../common/wl.h"
#include "graph.h"

static void usage(void)
{
    printf("usage: graphgen (-g SCALE | -u SCALE) [-k DEGREE] [-s SEED] [-t THREADS] -o FILE\n"
           "Generate a symmetric, deduplicated CSR graph and write it to FILE.\n"
           "  -g SCALE   Kronecker graph (Graph500 A=0.57 B=0.19 C=0.19), 2^SCALE vertices\n"
           "  -u SCALE   uniform random graph, 2^SCALE vertices\n"
           "  -k DEGREE  edge factor: generated edges per vertex (default 16)\n"
           "  -s SEED    generator seed (default 1)\n"
           "  -t THREADS OpenMP threads\n"
           "  -o FILE    output file\n"
           "  -h         this help\n");
}

int main(int argc, char **argv)
{
    wl_init(argv[0]);
    graph_opts o;
    graph_opts_init(&o, 1);
    const char *out = NULL;
    int c;
    opterr = 0;
    while ((c = getopt(argc, argv, ":g:u:k:s:t:o:h")) != -1) {
        if (c == 'h') {
            usage();
            return 0;
        }
        if (c == 'o')
            out = optarg;
        else if (c == '?' || c == ':' || !graph_opts_handle(&o, c, optarg))
            wl_bad_option(optopt, NULL);
    }
    if (optind < argc)
        wl_die(WL_EXIT_USAGE, "unexpected argument '%s' (try -h)", argv[optind]);
    if (!o.scale)
        wl_die(WL_EXIT_USAGE, "give -g SCALE or -u SCALE (try -h)");
    if (!out)
        wl_die(WL_EXIT_USAGE, "give the output file with -o FILE");
    if ((uint64_t)o.degree << o.scale > (1ULL << 36))
        wl_die(WL_EXIT_USAGE, "scale %u with edge factor %u is too large", o.scale, o.degree);
    wl_set_threads(o.threads);

    double t0 = wl_now();
    graph *g = graph_generate(o.scale, o.degree, o.uniform, o.seed);
    double secs = wl_now() - t0;
    const char *problem = graph_check(g, 1);
    if (problem)
        wl_die(WL_EXIT_FAIL, "generated graph is invalid: %s", problem);
    graph_save(g, out);
    printf("graphgen: %s scale %u edge factor %u seed %llu: %llu vertices, %llu directed edges "
           "-> %s\n",
           o.uniform ? "uniform" : "kronecker", o.scale, o.degree, (unsigned long long)o.seed,
           (unsigned long long)g->n, (unsigned long long)g->m, out);
    double input_edges = (double)o.degree * (double)(1ULL << o.scale);
    wl_fom("graphgen", input_edges / secs / 1e6, "MEdges/s", secs);
    graph_free(g);
    return 0;
}
