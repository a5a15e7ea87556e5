#!/usr/bin/env bash
# Builds and runs the benchmarks (side by side with libtorch and others).
#   scripts/bench.sh [bench_name] [google-benchmark flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
KILN_EXTRA_PACKAGES="libtorch-dev libeigen3-dev" scripts/install-deps.sh
cmake -S . -B build/bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_TESTS=OFF -DKILN_BUILD_BENCHMARKS=ON
cmake --build build/bench
name=${1:-bench_jit}
shift || true
build/bench/bench/"$name" "$@"
