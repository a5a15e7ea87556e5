#!/usr/bin/env bash
# Installs what kiln needs, builds it and runs the whole test suite with ctest.
#   scripts/test.sh              Release build
#   scripts/test.sh --sanitize   AddressSanitizer + UndefinedBehaviorSanitizer build
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# The folders of src/ are layers (README.md, "Layout"): no include goes up one.
python3 scripts/check_layers.py
scripts/format.sh --check

build=build/release
options=(-DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_TESTS=ON -DKILN_VERIFY=ON)
if [ "${1:-}" = "--sanitize" ]; then
  build=build/sanitize
  options=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE=ON -DKILN_BUILD_TESTS=ON -DKILN_VERIFY=ON)
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
cmake -S . -B "$build" -G Ninja "${options[@]}"
cmake --build "$build"
ctest --test-dir "$build" --output-on-failure --no-tests=error -j "$(nproc)"
