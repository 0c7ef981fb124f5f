# HPC Challenge 1.5.0 (ICL): DGEMM, STREAM and RandomAccess (GUPS) come from Debian's `hpcc`
# package (apt-get install hpcc; Open MPI, Debian's reference BLAS), which is upstream 1.5.0,
# the tag pinned below. The source tree is not compiled: the recipe checks that it is that
# release (include/hpccver.h says 1.5) and records the Debian package version in
# OUT/SOURCE. One hpcc run executes every HPCC test at one matrix order N; the tests'
# memory is sized from N (STREAM arrays and the RandomAccess table scale with N^2).
# Sourced by bench/seeds/build.sh.
#
# Outputs: OUT/hpcc-run [--fom KEY] N [RANKS], which runs `mpirun -np RANKS hpcc` (default 2
# ranks, P=1, Q=RANKS) in a private scratch directory with hpccinf.txt at order N, prints
# hpcc's summary (key=value) and the project's FOM line for KEY (default StarSTREAM_Triad;
# e.g. StarDGEMM_Gflops, StarRandomAccess_GUPs). With HPCC_SUMMARY_LOG=FILE it also appends
# one line per run to FILE: the memory cgroup's limit in bytes ("-" when none) and the
# summary's key=value pairs, so that one run gives every test's figure.
UPSTREAM=https://github.com/icl-utk-edu/hpcc.git
COMMIT=007ca9badab2eb7e4033f56e018480651697f877

build() { # SRC OUT
    local version
    version="$(dpkg-query -W -f '${Version}' hpcc 2>/dev/null)" ||
        fail "hpcc: Debian's hpcc package is not installed (apt-get install hpcc)"
    [ -f /usr/share/doc/hpcc/examples/_hpccinf.txt ] && command -v mpirun >/dev/null ||
        fail "hpcc: the hpcc package's _hpccinf.txt or mpirun is missing"
    grep -Eq 'HPCC_VERSION_MAJOR +1$' "$1/include/hpccver.h" 2>/dev/null &&
        grep -Eq 'HPCC_VERSION_MINOR +5$' "$1/include/hpccver.h" ||
        fail "hpcc: $1 is not the HPCC 1.5 source tree"
    printf 'Debian package hpcc %s (/usr/bin/hpcc); upstream source %s\n' "$version" "$1" \
        >"$2/SOURCE"
    cat >"$2/hpcc-run" <<'RUN'
#!/bin/sh
# HPCC with the project's FOM line (written by bench/seeds/recipes/hpcc.sh).
key=StarSTREAM_Triad
if [ "$1" = --fom ]; then key=$2; shift 2; fi
case "$1" in '' | *[!0-9]*) echo "usage: hpcc-run [--fom KEY] N [RANKS]" >&2; exit 2 ;; esac
n=$1 ranks=${2:-2}
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
sed -e "s/^[0-9]* *Ns\$/$n         Ns/" -e "s/^[0-9]* *Ps\$/1            Ps/" \
    -e "s/^[0-9]* *Qs\$/$ranks            Qs/" /usr/share/doc/hpcc/examples/_hpccinf.txt \
    >"$dir/hpccinf.txt"
# The program runs under setpriv --pdeathsig KILL: when this wrapper is killed (a sweep
# timeout kills only its direct child), the program dies with it.
start=$(date +%s.%N)
(cd "$dir" && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    exec setpriv --pdeathsig KILL mpirun --oversubscribe -np "$ranks" hpcc >/dev/null 2>"$dir/err")
rc=$?
end=$(date +%s.%N)
[ "$rc" -eq 0 ] || { tail -n 3 "$dir/err" >&2; exit "$rc"; }
summary=$(sed -n '/^Begin of Summary section/,/^End of Summary section/p' "$dir/hpccoutf.txt" |
    grep '^[A-Za-z_0-9]*=')
printf '%s\n' "$summary"
value=$(printf '%s\n' "$summary" | sed -n "s/^$key=\\(.*\\)/\\1/p")
[ -n "$value" ] || { echo "hpcc-run: no $key in hpcc's summary" >&2; exit 1; }
if [ -n "$HPCC_SUMMARY_LOG" ]; then
    cg=$(sed -n 's/^[0-9]*:memory:\(.*\)/\1/p' /proc/self/cgroup)
    limit=$(cat "/sys/fs/cgroup/memory$cg/memory.limit_in_bytes" 2>/dev/null ||
        cat "/sys/fs/cgroup$(sed -n 's/^0::\(.*\)/\1/p' /proc/self/cgroup)/memory.max" 2>/dev/null)
    echo "limit=${limit:--} wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')" \
        $(printf '%s\n' "$summary" | grep -E '^(StarDGEMM_Gflops|StarSTREAM_Triad|StarRandomAccess_GUPs|HPL_Tflops)=') \
        >>"$HPCC_SUMMARY_LOG"
fi
echo "FOM hpcc=$value $key time=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')"
RUN
    chmod 0755 "$2/hpcc-run"
}
