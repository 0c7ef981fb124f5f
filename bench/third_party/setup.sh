#!/usr/bin/env bash
# Installs the third-party libraries of the compare suite (bench/compare_suite.py) from
# PyPI into a private venv under build/third-party/venv. Idempotent: a second run installs
# nothing new. PYTHON picks the interpreter the venv is made from (default python3).
#
#   bench/third_party/setup.sh
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$root/build/third-party/venv"
python="${PYTHON:-python3}"

# Required: the CG solver and a graph library. Optional: installed when PyPI has them.
required=(numpy scipy igraph)
optional=(hnswlib)

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

echo "third-party venv: $venv"
"$venv/bin/python" - <<'PY'
import importlib
for name in ("scipy", "igraph", "hnswlib"):
    try:
        mod = importlib.import_module(name)
        print(f"  {name} {getattr(mod, '__version__', '?')}")
    except ImportError:
        print(f"  {name}: not installed")
PY
