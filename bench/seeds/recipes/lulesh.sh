# LULESH 2.0 (LLNL), the shock-hydrodynamics proxy: serial-MPI-free OpenMP build
# (g++ -DUSE_MPI=0 -O3 -fopenmp) with its own Makefile. The seed ran 50 iterations on a
# 200^3 mesh; here -s 20..30 and fewer iterations keep a run to a few seconds.
# Sourced by bench/seeds/build.sh.
#
# Outputs: OUT/lulesh2.0, and OUT/lulesh-run ARGS... which runs it and adds the project's
# `FOM lulesh=<zones/s> z/s time=<s>` line from LULESH's own "FOM" line (shown as
# "LULESH FOM") and the wall time.
UPSTREAM=https://github.com/LLNL/LULESH.git
COMMIT=3e01c40b3281aadb7f996525cdd4a3354f6d3801

build() { # SRC OUT
    local work="$2/work"
    work_copy "$1" "$work"
    make -C "$work" -j"$(nproc)" CXX="g++ -DUSE_MPI=0" CXXFLAGS="-O3 -fopenmp -I." \
        LDFLAGS="-O3 -fopenmp" >"$2/make.log" 2>&1 || { tail -n 5 "$2/make.log" >&2; return 1; }
    install -m 0755 "$work/lulesh2.0" "$2/lulesh2.0"
    cat >"$2/lulesh-run" <<'RUN'
#!/bin/sh
# LULESH with the project's FOM line (written by bench/seeds/recipes/lulesh.sh).
start=$(date +%s.%N)
# The program runs under setpriv --pdeathsig KILL: when this wrapper is killed (a sweep
# timeout kills only its direct child), the program dies with it.
out=$(exec setpriv --pdeathsig KILL "$(dirname "$0")/lulesh2.0" "$@")
rc=$?
end=$(date +%s.%N)
# LULESH's own "FOM = ..." line would be a second FOM line: it is printed as "LULESH FOM".
printf '%s\n' "$out" | sed 's/^FOM /LULESH FOM /'
[ "$rc" -eq 0 ] || exit "$rc"
fom=$(printf '%s\n' "$out" | sed -n 's/^FOM *= *\([0-9.eE+-]*\).*/\1/p')
[ -n "$fom" ] || { echo "lulesh-run: no FOM in LULESH's output" >&2; exit 1; }
echo "FOM lulesh=$fom z/s time=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')"
RUN
    chmod 0755 "$2/lulesh-run"
}
