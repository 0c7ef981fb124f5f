# Rodinia K-means, OpenMP and serial versions (openmp/kmeans of the Rodinia suite, from the
# yuhc/gpu-rodinia copy of Rodinia 3.1), built with its own Makefiles (gcc -O2 -fopenmp).
# The source tree is the suite's root: SRC/openmp/kmeans must exist. Rodinia's input files
# are not in the repository; the program reads a text file of lines "id f1 f2 ... fN"
# (-i FILE; -k clusters, -n threads for the OpenMP version). Sourced by bench/seeds/build.sh.
UPSTREAM=https://github.com/yuhc/gpu-rodinia.git
COMMIT=9c10d3ea16ddba2ba057cc3951a9efc4c2cc18a4

build() { # SRC OUT
    [ -d "$1/openmp/kmeans" ] || { echo "build.sh: rodinia-kmeans: $1 has no openmp/kmeans" >&2; return 64; }
    local work="$2/work" v
    work_copy "$1/openmp/kmeans" "$work"
    for v in kmeans_openmp kmeans_serial; do
        make -C "$work/$v" kmeans >"$2/make-$v.log" 2>&1 ||
            { tail -n 5 "$2/make-$v.log" >&2; return 1; }
    done
    install -m 0755 "$work/kmeans_openmp/kmeans" "$2/kmeans_openmp"
    install -m 0755 "$work/kmeans_serial/kmeans" "$2/kmeans_serial"
}
