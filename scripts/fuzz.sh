#!/usr/bin/env bash
# Builds and runs the native-backend fuzzer: random graphs compiled and
# compared with the reference interpreter.
#   scripts/fuzz.sh [--graphs N] [--seed S]
# With --dynamic, random shape-generic functions instead: each traced at
# probe sizes and fitted to one symbolic graph, compiled once and run at R
# sizes of its one or two dynamic dimensions (2, 3, then random ones up to M),
# against the interpreter at each:
#   scripts/fuzz.sh --dynamic [--graphs N] [--seed S] [--runs R] [--max-size M]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_TESTS=ON -DKILN_VERIFY=ON
cmake --build build/release --target fuzz_backend
build/release/tools/fuzz_backend "$@"
