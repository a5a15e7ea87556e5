#!/usr/bin/env bash
# Runs two of kiln's examples with the structured trace on (KILN_TRACE) and
# writes the cache report of the run: build/demo/kiln-report.html, one
# self-contained page (open it in any browser), and a screenshot of it,
# build/demo/kiln-report.png, drawn by headless Chromium.
#   explain     recompiles of every kind, a lifted step counter and a storm
#   train_mlp   an MLP trained for 100 steps: one graph compiled once
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build/demo -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_TESTS=OFF
cmake --build build/demo --target explain train_mlp kiln_tool
# A fresh persistent cache, so that the page shows compiles and their phases
# (run them again with the same cache and it shows persistent hits instead).
trace=build/demo/trace cache=build/demo/report-cache
rm -rf "$trace" "$cache"
KILN_TRACE="$trace" KILN_CACHE_DIR="$cache" build/demo/examples/explain
KILN_TRACE="$trace" KILN_CACHE_DIR="$cache" build/demo/examples/train_mlp 100
build/demo/tools/kiln report "$trace" -o build/demo/kiln-report.html
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,1500 \
  --screenshot="$PWD/build/demo/kiln-report.png" "file://$PWD/build/demo/kiln-report.html" 2>/dev/null
echo "open build/demo/kiln-report.html (a screenshot: build/demo/kiln-report.png)"
