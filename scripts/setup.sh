#!/usr/bin/env bash
# Idempotent set-up on Debian 12: system packages, a virtualenv in .venv, and the
# objtier package installed into it (editable). Re-running does only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config python3-venv
  libunwind-dev libnuma-dev zlib1g-dev libelf-dev
  clang-16 libclang-rt-16-dev libomp-16-dev clang-format-16
  linux-perf util-linux procps numactl
  qemu-system-x86 busybox-static cpio
  chromium
  sqlite3 xz-utils
  libboost-graph-dev
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "objtier setup: missing packages (${missing[*]}); run as root or install them" >&2
    exit 1
  fi
  echo "objtier setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ ! -x .venv/bin/python ]]; then
  python3 -m venv .venv
fi
stamp=.venv/.objtier-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
  echo "objtier setup: installing Python dependencies"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[test]"
  echo "$want" > "$stamp"
fi
