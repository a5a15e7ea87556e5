#!/usr/bin/env bash
# Builds and runs the native-backend fuzzer: random graphs compiled and
# compared with the reference interpreter.
#   scripts/fuzz.sh [--graphs N] [--seed S]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_TESTS=ON -DKILN_VERIFY=ON
cmake --build build/release --target fuzz_backend
build/release/tools/fuzz_backend "$@"
