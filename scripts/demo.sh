#!/usr/bin/env bash
# Installs what kiln needs, builds it and runs the main demo: a tour of eager
# operations, printed IR and jit, then an MLP trained with value_and_grad,
# then the same from Python: an MLP on scikit-learn's handwritten digits.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build/demo -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_TESTS=OFF
cmake --build build/demo --target demo train_mlp _kiln
build/demo/examples/demo
echo
build/demo/examples/train_mlp "$@"
echo
PYTHONPATH=build/demo/python /usr/bin/python3 examples/python/digits_mlp.py
