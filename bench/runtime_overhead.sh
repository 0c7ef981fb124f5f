#!/bin/sh
# Overhead of libobjtier.so (default settings: fault sampler, rate 2000) on a workload:
# interleaved runs with and without the runtime; prints each run's wall time, samples,
# and the medians. Usage: bench/runtime_overhead.sh [runs] [workload args...]
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
lib=$here/src/objtier/_native/lib/libobjtier.so
runs=${1:-5}; shift || true
cmd=${*:-$here/src/objtier/_native/bin/bfs}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq "$runs"); do
  t0=$(date +%s.%N); $cmd >/dev/null; t1=$(date +%s.%N)
  echo "plain $(echo "$t1 - $t0" | bc)"
  rm -rf "$out/t"
  t0=$(date +%s.%N); OBJTIER_OUTPUT=$out/t LD_PRELOAD=$lib $cmd >/dev/null; t1=$(date +%s.%N)
  echo "traced $(echo "$t1 - $t0" | bc) $(stat -c %s "$out"/t/*.otr)"
done | tee "$out/log"
python3 - "$out/log" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
p = statistics.median(float(r[1]) for r in rows if r[0] == "plain")
t = statistics.median(float(r[1]) for r in rows if r[0] == "traced")
b = statistics.median(int(r[2]) for r in rows if r[0] == "traced")
print(f"median plain {p:.3f}s traced {t:.3f}s ratio {t / p:.3f} trace bytes {b}")
PY
