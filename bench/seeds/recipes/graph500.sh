# Graph500 reference code, version 2 (master branch: Kronecker generator, BFS kernel with
# validation): the OpenMP CSR implementation omp-csr/omp-csr and the sequential seq-csr,
# built with its own Makefile and a make.inc for gcc -O3 -fopenmp. No MPI needed.
# Sourced by bench/seeds/build.sh.
UPSTREAM=https://github.com/graph500/graph500.git
COMMIT=6a21c992273f2ba7f742bb64af7bdfe1bc81f101

build() { # SRC OUT
    local work="$2/work"
    work_copy "$1" "$work"
    cat >"$work/make.inc" <<'INC'
CC = gcc
CFLAGS = -g -std=c99 -Wall -O3
LDLIBS = -lm -lrt
BUILD_OPENMP = Yes
CFLAGS_OPENMP = -fopenmp
INC
    make -C "$work" -j"$(nproc)" seq-csr/seq-csr omp-csr/omp-csr >"$2/make.log" 2>&1 ||
        { tail -n 5 "$2/make.log" >&2; return 1; }
    install -m 0755 "$work/omp-csr/omp-csr" "$2/omp-csr"
    install -m 0755 "$work/seq-csr/seq-csr" "$2/seq-csr"
}
