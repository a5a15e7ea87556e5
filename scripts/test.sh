#!/usr/bin/env bash
# Installs what kiln needs, builds it and runs the whole test suite with ctest.
#   scripts/test.sh              Release build
#   scripts/test.sh --sanitize   AddressSanitizer + UndefinedBehaviorSanitizer build
#   scripts/test.sh --thread     ThreadSanitizer build, the concurrency tests only
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# The folders of src/ are layers (README.md, "Layout"): no include goes up one.
python3 scripts/check_layers.py
scripts/format.sh --check

build=build/release
# A new warning in kiln's own sources fails the Release build (KILN_WERROR);
# the sanitizer builds below keep warnings as warnings: instrumented code
# draws reports from GCC's flow analysis that plain builds do not.
options=(-DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_TESTS=ON -DKILN_VERIFY=ON -DKILN_WERROR=ON)
if [ "${1:-}" = "--sanitize" ]; then
  build=build/sanitize
  options=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE=ON -DKILN_BUILD_TESTS=ON -DKILN_VERIFY=ON)
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
selection=()
if [ "${1:-}" = "--thread" ]; then
  build=build/thread
  options=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE_THREAD=ON -DKILN_BUILD_TESTS=ON -DKILN_BUILD_EXAMPLES=OFF)
  export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
  # jit from many threads, the thread pool under parallel kernels, the caches
  # and the allocator shared between threads; loops whose bodies run on the
  # pool; the persistent cache, whose directory other processes share; first
  # calls racing their background compile; the timeline and trace files that
  # every thread records to; queued work on the dispatch thread beside its callers.
  selection=(-R 'Thread|Jit\.|Allocator\.|Buffers\.|Donation\.|LongReductions\.|RowGroups\.|Standalone\.|EagerEqualsCompiled\.|ControlBackends\.|Scan\.|NativeLoops\.|PersistentCache|Tiered|Timeline\.|CompileTrace|AsyncDispatch')
fi
cmake -S . -B "$build" -G Ninja "${options[@]}"
cmake --build "$build"
ctest --test-dir "$build" --output-on-failure --no-tests=error -j "$(nproc)" "${selection[@]}"
