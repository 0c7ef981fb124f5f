"""Graph analytics with networkx on a generated Erdős–Rényi graph G(n, m): PageRank, connected
components and breadth-first searches from random sources.

networkx keeps a graph as a dict of dicts of dicts: one adjacency dict per vertex, one entry
per neighbour pointing at the edge's attribute dict (shared by both directions), all of them
interpreter objects — many small blocks and no large array (about 300 B per edge here).
PageRank is networkx's pure-Python power iteration (its default, pagerank(), would convert the
graph to a scipy sparse matrix first: large arrays, not this program's point); it reads every
adjacency dict once per iteration. Components and each BFS walk the adjacency of every
reached vertex once.

Prints one line `FOM smallgraph=<searches per second> bfs/s time=<seconds>` over the timed
analytics (graph generation is not timed); exits 3 when a check fails (--perturb removes the
first source's edges after the components are counted, so the check must fail).

    python graph_networkx.py [--vertices N] [--edges M] [--searches T] [--seed S] [--perturb]
"""

from __future__ import annotations

import argparse
import random
import sys
import time

import networkx as nx
from networkx.algorithms.link_analysis.pagerank_alg import _pagerank_python


def positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {text}")
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vertices", type=positive, default=25_000)
    parser.add_argument("--edges", type=positive, default=100_000)
    parser.add_argument("--searches", type=positive, default=3, help="BFS trials")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--perturb", action="store_true",
                        help="break the searched component after counting it (check fails)")
    args = parser.parse_args()
    if args.edges > args.vertices * (args.vertices - 1) // 2:
        parser.error(f"{args.edges} edges do not fit in a simple graph of "
                     f"{args.vertices} vertices")

    graph = nx.gnm_random_graph(args.vertices, args.edges, seed=args.seed)
    rng = random.Random(args.seed)
    start = time.perf_counter()
    rank = _pagerank_python(graph, alpha=0.85, max_iter=100, tol=1e-6)
    component = {}
    sizes = []
    for index, part in enumerate(nx.connected_components(graph)):
        sizes.append(len(part))
        component.update(dict.fromkeys(part, index))
    for trial in range(args.searches):
        source = rng.randrange(args.vertices)
        if args.perturb and trial == 0:
            # isolates the source: its BFS reaches only itself, its component counted more
            graph.remove_edges_from(list(graph.edges(source)))
        reach = 1 + sum(1 for _edge in nx.bfs_edges(graph, source))
        if reach != sizes[component[source]]:
            print(f"smallgraph: verification failed: BFS from {source} reached {reach} "
                  f"vertices, its component has {sizes[component[source]]}", file=sys.stderr)
            return 3
    seconds = time.perf_counter() - start
    total = sum(rank.values())
    if abs(total - 1.0) > 1e-6:
        print(f"smallgraph: verification failed: PageRank sums to {total}", file=sys.stderr)
        return 3
    print(f"smallgraph: {graph.number_of_nodes()} vertices, {graph.number_of_edges()} edges; "
          f"largest component {max(sizes)} vertices; top PageRank {max(rank.values()):.2e}")
    print("verification: passed")
    print(f"FOM smallgraph={args.searches / seconds:.3f} bfs/s time={seconds:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
