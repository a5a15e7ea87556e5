#!/usr/bin/env bash
# Installs the Debian packages kiln builds, tests and benchmarks with.
set -euo pipefail

packages=(
  g++ cmake ninja-build ccache pkg-config clang-format
  libxxhash-dev nlohmann-json3-dev libopenblas-dev liblapacke-dev libkissfft-dev llvm-16-dev libopenmpi-dev openmpi-bin libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-dev python3-numpy python3-torch python3-pytest python3-venv python3-sklearn pybind11-dev libdlpack-dev
  graphviz chromium
)

packages+=(${KILN_EXTRA_PACKAGES:-})
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
