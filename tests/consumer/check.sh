#!/usr/bin/env bash
# Builds and runs tests/consumer against kiln both ways: installed
# (find_package) and vendored (add_subdirectory).
#   check.sh KILN_SOURCE_DIR KILN_BUILD_DIR WORK_DIR VENDORED_DIR EXTRA_CXX_FLAGS [KILN_CMAKE_ARGS...]
# The installed kiln is the one already built in KILN_BUILD_DIR. The
# vendored one is configured with KILN_CMAKE_ARGS, the options that build
# was made with, in VENDORED_DIR, a directory beside KILN_BUILD_DIR: its
# compile commands are that build's, run from the same depth (ccache's
# base_dir, when set, makes paths relative to it), so the compiler cache kiln
# uses when it is installed serves the objects that build compiled instead
# of compiling kiln a second time.
set -euo pipefail
source_dir=$1 build_dir=$2 work=$3 vendored=$4 flags=${5:-}
kiln_options=("${@:6}")
rm -rf "$work" "$vendored" && mkdir -p "$work"
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$source_dir/tests/consumer" -B "$work/installed" "${generator[@]}" \
  -DKILN_CONSUMER_MODE=find_package -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_CXX_FLAGS="$flags" >/dev/null
cmake --build "$work/installed" >/dev/null
"$work/installed/consumer"

cmake -S "$source_dir/tests/consumer" -B "$vendored" "${generator[@]}" \
  -DKILN_CONSUMER_MODE=subdirectory -DKILN_SOURCE_DIR="$source_dir" "${kiln_options[@]}" \
  -DCMAKE_CXX_FLAGS="$flags" >/dev/null
cmake --build "$vendored" --target consumer >/dev/null
"$vendored/consumer"
rm -rf "$vendored"
# Reached only when both programs built and ran (set -e).
echo "consumer ok: installed and vendored"
