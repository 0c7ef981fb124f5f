# XSBench (ANL CESAR), the Monte Carlo neutron-transport cross-section lookup kernel: the
# OpenMP threading version (openmp-threading/), built with its own Makefile (gcc -O3 -flto
# -fopenmp). The seed used history-based lookups on the "large" problem (355 nuclides, 11 303
# grid points per nuclide, 5.6 GB unionized grid); here "small" (68 nuclides, 240 MB) with
# fewer particles keeps a run to a few seconds. Sourced by bench/seeds/build.sh.
#
# Outputs: OUT/XSBench, and OUT/xsbench-run ARGS... which runs it and adds the project's
# `FOM xsbench=<lookups/s> lookups/s time=<s>` line. XSBench exits 1 when its checksum is not
# the one known for the default size; xsbench-run then exits 0 if the simulation finished
# (a "Lookups/s:" line) and says the checksum is unknown for this size.
UPSTREAM=https://github.com/ANL-CESAR/XSBench.git
COMMIT=ba08e5221af6106252b866e50ea123c69d31a4e2

build() { # SRC OUT
    local work="$2/work"
    work_copy "$1/openmp-threading" "$work"
    make -C "$work" -j"$(nproc)" CC=gcc OPTIMIZE=yes OPENMP=yes >"$2/make.log" 2>&1 ||
        { tail -n 5 "$2/make.log" >&2; return 1; }
    install -m 0755 "$work/XSBench" "$2/XSBench"
    cat >"$2/xsbench-run" <<'RUN'
#!/bin/sh
# XSBench with the project's FOM line (written by bench/seeds/recipes/xsbench.sh).
# The program runs under setpriv --pdeathsig KILL: when this wrapper is killed (a sweep
# timeout kills only its direct child), the program dies with it.
out=$(exec setpriv --pdeathsig KILL "$(dirname "$0")/XSBench" "$@")
rc=$?
printf '%s\n' "$out"
rate=$(printf '%s\n' "$out" | sed -n 's/^Lookups\/s: *\([0-9,]*\).*/\1/p' | tr -d ,)
secs=$(printf '%s\n' "$out" | sed -n 's/^Runtime: *\([0-9.]*\) seconds.*/\1/p')
[ -n "$rate" ] && [ -n "$secs" ] || exit $((rc ? rc : 1))
[ "$rc" -eq 0 ] || echo "xsbench-run: checksum not known for this problem size (XSBench exit $rc)"
echo "FOM xsbench=$rate lookups/s time=$secs"
RUN
    chmod 0755 "$2/xsbench-run"
}
