#!/usr/bin/env bash
# Installs what kiln needs, builds it and runs the main demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_TESTS=OFF
cmake --build build/release --target demo
build/release/examples/demo
