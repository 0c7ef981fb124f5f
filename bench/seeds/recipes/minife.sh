# miniFE (Mantevo), the implicit finite-element proxy: the optimized OpenMP version
# (openmp-opt/src, CSR matrix, double), built with its own Makefile and g++ -O3 -fopenmp
# -mavx without MPI. The seed ran 256^3; here -nx 40..60 keeps a run to a few seconds
# (miniFE's CG always takes at most 200 iterations). Sourced by bench/seeds/build.sh.
#
# Outputs: OUT/miniFE.x, and OUT/minife-run ARGS... which runs it in a private scratch
# directory (miniFE writes its YAML report to the working directory), prints the report and
# adds the project's `FOM minife=<CG Mflops> Mflops time=<s>` line ("Total CG Mflops").
UPSTREAM=https://github.com/Mantevo/miniFE.git
COMMIT=c79e0f7f7afdd6c8191936efce7a668316159cc3

build() { # SRC OUT
    local work="$2/work"
    work_copy "$1/openmp-opt" "$work"
    make -C "$work/src" -j"$(nproc)" CXX=g++ CC=gcc \
        CPPFLAGS="-I. -I../utils -I../fem -DMINIFE_SCALAR=double -DMINIFE_LOCAL_ORDINAL=int \
-DMINIFE_GLOBAL_ORDINAL=int -DMINIFE_CSR_MATRIX -DMINIFE_RESTRICT=__restrict__" \
        >"$2/make.log" 2>&1 || { tail -n 5 "$2/make.log" >&2; return 1; }
    install -m 0755 "$work/src/miniFE.x" "$2/miniFE.x"
    cat >"$2/minife-run" <<'RUN'
#!/bin/sh
# miniFE with the project's FOM line (written by bench/seeds/recipes/minife.sh).
exe="$(cd "$(dirname "$0")" && pwd)/miniFE.x"
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
start=$(date +%s.%N)
# The program runs under setpriv --pdeathsig KILL: when this wrapper is killed (a sweep
# timeout kills only its direct child), the program dies with it.
(cd "$dir" && exec setpriv --pdeathsig KILL "$exe" "$@")
rc=$?
end=$(date +%s.%N)
[ "$rc" -eq 0 ] || exit "$rc"
cat "$dir"/*.yaml
fom=$(sed -n 's/^ *Total CG Mflops: *\([0-9.eE+-]*\).*/\1/p' "$dir"/*.yaml)
[ -n "$fom" ] || { echo "minife-run: no Total CG Mflops in miniFE's report" >&2; exit 1; }
echo "FOM minife=$fom Mflops time=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')"
RUN
    chmod 0755 "$2/minife-run"
}
