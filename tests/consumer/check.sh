#!/usr/bin/env bash
# Builds and runs tests/consumer against kiln both ways: installed
# (find_package) and vendored (add_subdirectory).
#   check.sh KILN_SOURCE_DIR KILN_BUILD_DIR WORK_DIR [EXTRA_CXX_FLAGS]
set -euo pipefail
source_dir=$1 build_dir=$2 work=$3 flags=${4:-}
rm -rf "$work" && mkdir -p "$work"
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$source_dir/tests/consumer" -B "$work/installed" "${generator[@]}" \
  -DKILN_CONSUMER_MODE=find_package -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_CXX_FLAGS="$flags" >/dev/null
cmake --build "$work/installed" >/dev/null
"$work/installed/consumer"

cmake -S "$source_dir/tests/consumer" -B "$work/vendored" "${generator[@]}" \
  -DKILN_CONSUMER_MODE=subdirectory -DKILN_SOURCE_DIR="$source_dir" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS="$flags" >/dev/null
cmake --build "$work/vendored" --target consumer >/dev/null
"$work/vendored/consumer"
