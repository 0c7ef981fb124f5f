# NPB BT (NAS Parallel Benchmarks 3.4, OpenMP Fortran, NPB3.4-OMP/BT) from a public copy of
# NPB on GitHub (the seed used NPB 3.4.2 from nas.nasa.gov; NASA's site is not a git
# repository). Built with the suite's own Makefiles, config/make.def for gfortran/gcc -O3
# -fopenmp (Debian: apt-get install gfortran). Classes: NPB_BT_CLASSES (default "A W").
# The seed ran class C (162^3, 200 time steps); class C is built on request, but a run here
# uses the class-A grid (64^3) with fewer time steps (inputbt.data), which NPB then reports
# as "Verification = UNSUCCESSFUL" (the reference norms are for 200 steps).
# Sourced by bench/seeds/build.sh.
#
# Outputs: OUT/bt.<CLASS>.x, and OUT/bt-run CLASS [STEPS [GRID]] which runs bt.CLASS.x in a
# private scratch directory (with an inputbt.data when STEPS is given) and adds the project's
# `FOM npb-bt=<Mop/s total> Mop/s time=<Time in seconds>` line.
UPSTREAM=https://github.com/mbdevpl/nas-parallel-benchmarks.git
COMMIT=6f8ec75d6951629d2eb7e3001433295d407230aa

build() { # SRC OUT
    local work="$2/work" class
    command -v gfortran >/dev/null || fail "npb-bt: no gfortran (apt-get install gfortran)"
    work_copy "$1/NPB3.4-OMP" "$work"
    mkdir -p "$work/bin"
    sed -e 's/^FFLAGS[[:space:]]*=.*/FFLAGS = -O3 -fopenmp/' \
        -e 's/^CFLAGS[[:space:]]*=.*/CFLAGS = -O3 -fopenmp/' \
        "$work/config/make.def.template" >"$work/config/make.def"
    : >"$2/make.log"
    for class in ${NPB_BT_CLASSES:-A W}; do
        # The BT Makefile's ${ver:3} needs bash.
        make -C "$work" BT CLASS="$class" SHELL=/bin/bash >>"$2/make.log" 2>&1 ||
            { tail -n 5 "$2/make.log" >&2; return 1; }
        install -m 0755 "$work/bin/bt.$class.x" "$2/bt.$class.x"
    done
    cat >"$2/bt-run" <<'RUN'
#!/bin/sh
# NPB BT with the project's FOM line (written by bench/seeds/recipes/npb-bt.sh).
# bt-run CLASS [STEPS [GRID]]: STEPS time steps (dt of the class) on a GRID^3 mesh.
[ $# -ge 1 ] || { echo "usage: bt-run CLASS [STEPS [GRID]]" >&2; exit 2; }
exe="$(cd "$(dirname "$0")" && pwd)/bt.$1.x"
[ -x "$exe" ] || { echo "bt-run: no $exe (build with NPB_BT_CLASSES=\"$1\")" >&2; exit 2; }
case "$1" in S) dt=0.01d0 g=12 ;; W) dt=0.0008d0 g=24 ;; A) dt=0.0008d0 g=64 ;;
    B) dt=0.0003d0 g=102 ;; C) dt=0.0001d0 g=162 ;; *) dt=0.0001d0 g=0 ;; esac
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
[ $# -lt 2 ] || printf '%s\n%s\n%s %s %s\n' "$2" "$dt" "${3:-$g}" "${3:-$g}" "${3:-$g}" \
    >"$dir/inputbt.data"
# The program runs under setpriv --pdeathsig KILL: when this wrapper is killed (a sweep
# timeout kills only its direct child), the program dies with it.
out=$(cd "$dir" && exec setpriv --pdeathsig KILL "$exe")
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || exit "$rc"
mops=$(printf '%s\n' "$out" | sed -n 's/^ *Mop\/s total *= *\([0-9.eE+-]*\).*/\1/p')
secs=$(printf '%s\n' "$out" | sed -n 's/^ *Time in seconds *= *\([0-9.eE+-]*\).*/\1/p')
[ -n "$mops" ] && [ -n "$secs" ] || { echo "bt-run: no Mop/s in BT's output" >&2; exit 1; }
echo "FOM npb-bt=$mops Mop/s time=$secs"
RUN
    chmod 0755 "$2/bt-run"
}
