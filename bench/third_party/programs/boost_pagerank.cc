// PageRank of Boost.Graph (Debian libboost-graph-dev) on an R-MAT graph made by Boost's own
// generator: the graph is an adjacency_list<vecS, vecS, bidirectionalS>, whose vertices each
// hold their out- and in-edge lists in std::vectors of their own and whose edges live in a
// std::list — small blocks, a node or a few hundred bytes each, that every iteration sweeps.
// Only this driver is ours: the graph, the generator and page_rank are Boost's.
//
//   boost_pagerank [--scale S] [--degree D] [--iters N] [--seed X]
// Prints the graph, a checksum of the ranks, and one line
// `FOM pagerank=<iterations per second> it/s time=<seconds>` for the iterations alone.
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/page_rank.hpp>
#include <boost/graph/rmat_graph_generator.hpp>
#include <boost/random/linear_congruential.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS>;
using RMat = boost::rmat_iterator<boost::minstd_rand, Graph>;

int main(int argc, char **argv)
{
    int scale = 17, degree = 8, iters = 20;
    unsigned seed = 42;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--scale"))
            scale = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--degree"))
            degree = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--iters"))
            iters = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--seed"))
            seed = (unsigned)std::strtoul(argv[i + 1], nullptr, 10);
        else {
            std::fprintf(stderr, "boost_pagerank: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    std::size_t n = std::size_t(1) << scale, m = n * degree;
    boost::minstd_rand gen(seed);
    Graph g(RMat(gen, n, m, 0.57, 0.19, 0.19, 0.05), RMat(), n);
    std::vector<double> rank(boost::num_vertices(g));
    auto map = boost::make_iterator_property_map(rank.begin(), boost::get(boost::vertex_index, g));
    auto start = std::chrono::steady_clock::now();
    boost::graph::page_rank(g, map, boost::graph::n_iterations(iters));
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double sum = 0;
    for (double r : rank)
        sum += r;
    std::printf("vertices %zu edges %zu iterations %d\n", boost::num_vertices(g),
                boost::num_edges(g), iters);
    std::printf("checksum %.6f\n", sum);
    std::printf("FOM pagerank=%.3f it/s time=%.3f\n", iters / s, s);
    return 0;
}
