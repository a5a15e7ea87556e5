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
if [ "$name" = bench_python ]; then
  cmake --build build/bench --target bench_python_reference
  # Debian's python3 (python3-numpy, python3-torch), with the package this build assembled.
  PYTHONPATH=build/bench/python exec /usr/bin/python3 bench/python/bench_python.py build/bench/bench/bench_python_reference "$@"
fi
build/bench/bench/"$name" "$@"
