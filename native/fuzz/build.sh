#!/usr/bin/env bash
# Builds the libFuzzer target for the runtime's plan parser, outside the default build:
#   native/fuzz/build.sh [OUT_DIR]      -> OUT_DIR/fuzz_plan (default build/fuzz)
# Run it on the seed corpus (copy the corpus first: libFuzzer adds what it finds to it):
#   cp -r tests/fixtures/plan-seeds /tmp/c && build/fuzz/fuzz_plan -max_total_time=60 /tmp/c
# Needs clang-16 (or CLANG=...) with its libFuzzer runtime.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/build/fuzz}
clang=${CLANG:-clang-16}
mkdir -p "$out"
# OBJTIER_SANITIZED: rt_sys_mmap goes through mmap(), which the sanitizers see.
"$clang" -std=gnu11 -g -O1 -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -DOBJTIER_SANITIZED=1 \
  -I"$root/native/include" -I"$root/native/runtime/core" -I"$root/native/runtime/place" \
  "$here/fuzz_plan.c" "$root/native/runtime/place/plan.c" "$root/native/runtime/core/sys.c" \
  -o "$out/fuzz_plan"
echo "$out/fuzz_plan"
