"""Graph analytics with igraph on a generated Erdős–Rényi graph G(n, m): PageRank, connected
components and breadth-first searches from random sources.

igraph's C generator draws the graph (no Python edge list), and igraph keeps it as edge
vectors and their index vectors, int64 each: about 32 B per edge plus 16 B per vertex.
PageRank (PRPACK) builds its own compressed copy and reads it every iteration; components
and each BFS walk the adjacency of every reached vertex once.

Prints one line `FOM graph=<searches per second> bfs/s time=<seconds>` over the timed
analytics (graph generation is not timed); exits 3 when a check fails.

    python graph_igraph.py [--vertices N] [--edges M] [--searches T] [--seed S]
"""

from __future__ import annotations

import argparse
import random
import sys
import time

import igraph as ig


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vertices", type=int, default=1 << 17)
    parser.add_argument("--edges", type=int, default=1_000_000)
    parser.add_argument("--searches", type=int, default=3, help="BFS trials")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    random.seed(args.seed)
    ig.set_random_number_generator(random)
    graph = ig.Graph.Erdos_Renyi(n=args.vertices, m=args.edges)
    start = time.perf_counter()
    rank = graph.pagerank(damping=0.85)
    parts = graph.connected_components()
    giant = max(parts.sizes())
    for _trial in range(args.searches):
        source = random.randrange(args.vertices)
        order, _layers, _parents = graph.bfs(source)
        if len(order) != parts.size(parts.membership[source]):
            print("graph: verification failed: BFS reach is not the component",
                  file=sys.stderr)
            return 3
    seconds = time.perf_counter() - start
    if abs(sum(rank) - 1.0) > 1e-6:
        print(f"graph: verification failed: PageRank sums to {sum(rank)}", file=sys.stderr)
        return 3
    print(f"graph: {graph.vcount()} vertices, {graph.ecount()} edges; largest component "
          f"{giant} vertices; top PageRank {max(rank):.2e}")
    print("verification: passed")
    print(f"FOM graph={args.searches / seconds:.3f} bfs/s time={seconds:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
