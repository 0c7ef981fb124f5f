# GAP Benchmark Suite (Beamer, Asanović, Patterson): bfs, bc, cc, cc_sv, pr, pr_spmv, sssp,
# tc and converter, built with its own Makefile (g++ -std=c++11 -O3 -fopenmp; -g added
# through CXX so that allocation sites get source lines, flags otherwise the suite's own).
# Sourced by bench/seeds/build.sh.
UPSTREAM=https://github.com/sbeamer/gapbs.git
COMMIT=b5e3e19c2845f22fb338f4a4bc4b1ccee861d026

build() { # SRC OUT
    local work="$2/work"
    work_copy "$1" "$work"
    make -C "$work" -j"$(nproc)" CXX="${CXX:-g++} -g" bc bfs cc cc_sv pr pr_spmv sssp tc converter >"$2/make.log" 2>&1 ||
        { tail -n 5 "$2/make.log" >&2; return 1; }
    local k
    for k in bc bfs cc cc_sv pr pr_spmv sssp tc converter; do
        install -m 0755 "$work/$k" "$2/$k"
    done
}
