#!/usr/bin/env bash
# Installs the third-party libraries of the compare suite (bench/compare_suite.py) from
# PyPI into a private venv under build/third-party/venv (the Redis server and its benchmark
# client come from Debian: apt-get install redis-server redis-tools). Idempotent: a second
# run installs nothing new. PYTHON picks the interpreter the venv is made from (default python3).
#
#   bench/third_party/setup.sh
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$root/build/third-party/venv"
python="${PYTHON:-python3}"

# Required: the CG solver and a graph library. Optional: installed when PyPI has them
# (networkx: the small-block graph program; sqlite3 is Python's own, on Debian's libsqlite3).
required=(numpy scipy igraph)
optional=(hnswlib networkx)

if [ ! -x "$venv/bin/python" ]; then
    mkdir -p "$(dirname "$venv")"
    "$python" -m venv "$venv"
fi

have() { "$venv/bin/python" -c "import $1" 2>/dev/null; }

missing=()
for pkg in "${required[@]}"; do have "$pkg" || missing+=("$pkg"); done
if [ ${#missing[@]} -gt 0 ]; then
    "$venv/bin/pip" install --quiet "${missing[@]}"
fi
for pkg in "${optional[@]}"; do
    have "$pkg" || "$venv/bin/pip" install --quiet "$pkg" \
        || echo "setup.sh: optional $pkg did not install; its program is skipped" >&2
done

# Optional: DuckDB with its TPC-H extension. The wheel does not build tpch in and DuckDB would
# download it on first use; duckdb-extension-tpch ships the binary for one DuckDB version,
# so both are pinned to it. Then the TPC-H tables of duckdb_tpch.py are generated once.
duckdb_version=1.5.5
tpch_cache="$root/build/third-party/tpch-sf0.1.duckdb"
if ! "$venv/bin/python" -c "import duckdb, duckdb_extension_tpch, sys
sys.exit(duckdb.__version__ != '$duckdb_version')" 2>/dev/null; then
    "$venv/bin/pip" install --quiet "duckdb==$duckdb_version" \
        "duckdb-extension-tpch==$duckdb_version" \
        || echo "setup.sh: optional duckdb did not install; its program is skipped" >&2
fi
if [ ! -e "$tpch_cache" ] && have duckdb_extension_tpch; then
    "$venv/bin/python" "$root/bench/third_party/programs/duckdb_tpch.py" --sf 0.1 --reps 1 \
        --queries 6 --cache "$tpch_cache" >/dev/null \
        || echo "setup.sh: the TPC-H tables were not generated" >&2
fi

# Boost.Graph's PageRank (Debian libboost-graph-dev, a package of scripts/setup.sh): only the
# driver is ours; built once next to the venv.
boost_src="$root/bench/third_party/programs/boost_pagerank.cc"
boost_bin="$root/build/third-party/boost_pagerank"
if [ -e /usr/include/boost/graph/page_rank.hpp ]; then
    if [ ! -x "$boost_bin" ] || [ "$boost_src" -nt "$boost_bin" ]; then
        g++ -O2 -o "$boost_bin" "$boost_src"
    fi
else
    echo "setup.sh: no Boost.Graph headers (apt-get install libboost-graph-dev); boostpr is skipped" >&2
fi

echo "third-party venv: $venv"
"$venv/bin/python" - <<'PY'
import importlib
for name in ("scipy", "igraph", "hnswlib", "networkx", "duckdb", "sqlite3"):
    try:
        mod = importlib.import_module(name)
        version = getattr(mod, "__version__", None) or getattr(mod, "sqlite_version", "?")
        print(f"  {name} {version}")
    except ImportError:
        print(f"  {name}: not installed")
PY
