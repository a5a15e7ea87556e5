#!/usr/bin/env bash
# Compiled reductions and fused chains at 2^20 ... 2^26 elements (and fused
# broadcasts of 2^32) against NumPy float64; CI runs the same test up to 2^22.
# Prints the worst error of each case in units of its bound's scale.
#   scripts/large-oracle.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_TESTS=ON -DKILN_VERIFY=ON
cmake --build build/release --target kiln_backend_tests
KILN_ORACLE_MAX_LOG2=26 build/release/tests/kiln_backend_tests --gtest_filter='LargeOracle.*'
