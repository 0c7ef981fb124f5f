#!/usr/bin/env bash
# Installs the third-party programs of the compare suite (bench/compare_suite.py):
# Python libraries from PyPI into a private venv under build/third-party/venv, and
# Debian packages with apt. Idempotent: a second run installs nothing new.
#
#   bench/third_party/setup.sh            # venv + PyPI libraries + Debian packages
#   NO_APT=1 bench/third_party/setup.sh   # skip apt (PyPI only)
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$root/build/third-party/venv"
python="${PYTHON:-python3}"

# Required: the CG solver and a graph library. Optional: installed when PyPI has them.
required=(numpy scipy igraph)
optional=(networkit hnswlib duckdb)

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

if [ -z "${NO_APT:-}" ] && command -v apt-get >/dev/null; then
    if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            redis-server redis-tools >/dev/null \
            || echo "setup.sh: redis-server did not install" >&2
    fi
fi

echo "third-party venv: $venv"
"$venv/bin/python" - <<'PY'
import importlib
for name in ("scipy", "igraph", "networkit", "hnswlib", "duckdb"):
    try:
        mod = importlib.import_module(name)
        print(f"  {name} {getattr(mod, '__version__', '?')}")
    except ImportError:
        print(f"  {name}: not installed")
PY
