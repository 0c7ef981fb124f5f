#!/usr/bin/env bash
# The main job end to end on the default workload: generate a Kronecker graph, record BFS on it,
# write the characterization report. Output goes to the directory given as $1 (default demo-out).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-demo-out}
objtier=.venv/bin/objtier
bin=src/objtier/_native/bin
mkdir -p "$out"

echo "== graph: Kronecker, scale 20, edge factor 16"
[[ -f $out/kron20.graph ]] || "$bin/graphgen" -g 20 -k 16 -o "$out/kron20.graph"

echo "== record: BFS on the graph"
"$objtier" record --force -o "$out/bfs.otr" -- "$bin/bfs" -f "$out/kron20.graph" -n 64

echo "== report"
"$objtier" report "$out/bfs.otr" -o "$out/report"

echo "== plan: what to lock at 50 % of the footprint, chosen by the kernel model's prediction"
"$objtier" plan "$out/bfs.otr" --local 50% -o "$out/plan.json"

echo "== next: measure it against the kernel (needs root; a few minutes), e.g."
echo "   $objtier compare --tier swap --local 50% --repeat 3 -o $out/compare -- $bin/bfs -f $out/kron20.graph -n 64"
echo "   $objtier run --plan $out/plan.json --local 50% -- $bin/bfs -f $out/kron20.graph -n 64"
