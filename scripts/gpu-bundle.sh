#!/usr/bin/env bash
# Packs kiln's GPU test suite and GPU benchmark for an NVIDIA GPU machine that
# may have no package registry and another base system than this one (a
# CUDA image without Debian's LLVM or OpenBLAS): both are built here and
# packed with every shared library they load, except the C library and the
# CUDA driver, into one archive under 60 MiB.
#
#   scripts/gpu-bundle.sh        -> build/gpu-bundle/kiln-gpu.tar.xz
# then, on the GPU machine:
#   tar xf kiln-gpu.tar.xz && kiln-gpu/run.sh [tests|bench|all]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build/gpu-bundle"
"$root/scripts/install-deps.sh"

cmake -S "$root" -B "$build/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_TESTS=ON \
  -DKILN_BUILD_EXAMPLES=OFF -DKILN_BUILD_PYTHON=OFF -DKILN_BUILD_GPU_BENCHMARK=ON > /dev/null
cmake --build "$build/build" --target kiln_gpu_tests bench_gpu

stage="$build/stage/kiln-gpu"
rm -rf "$build/stage"
mkdir -p "$stage/bin" "$stage/lib"
cp "$build/build/tests/kiln_gpu_tests" "$build/build/bench/gpu/bench_gpu" "$stage/bin/"
cp "$root/bench/gpu/torch_mlp_step.py" "$stage/"
# What the binaries load, but what every Linux has in its own version (the C
# library and its loader) and the driver, which must be the GPU machine's.
for binary in "$stage"/bin/*; do
  ldd "$binary" | awk '/=> \// {print $3}'
done | sort -u | while read -r library; do
  case "$(basename "$library")" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libcuda.so.*) ;;
    *) cp -L "$library" "$stage/lib/" ;;
  esac
done
strip --strip-unneeded "$stage"/bin/* "$stage"/lib/* 2> /dev/null || true

cat > "$stage/run.sh" << 'RUN'
#!/usr/bin/env bash
# kiln on this GPU machine: `run.sh tests`, `run.sh bench` or `run.sh all`.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KILN_CACHE=off
# The CUDA toolkit's libdevice and cuBLAS, wherever this machine keeps them.
if [ -z "${KILN_LIBDEVICE:-}" ]; then
  KILN_LIBDEVICE="$(find /usr/local /opt / -name libdevice.10.bc -print -quit 2> /dev/null)"
  export KILN_LIBDEVICE
fi
if [ -z "${KILN_CUBLAS:-}" ] && ! ldconfig -p 2> /dev/null | grep -q 'libcublas\.so\.1[0-9]'; then
  KILN_CUBLAS="$(find /usr/local /opt / -name 'libcublas.so.1[0-9]*' -print -quit 2> /dev/null)"
  export KILN_CUBLAS
fi
echo "libdevice: ${KILN_LIBDEVICE:-none}; cuBLAS: ${KILN_CUBLAS:-found by the dynamic linker}"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
what="${1:-all}"
status=0
if [ "$what" = tests ] || [ "$what" = all ]; then
  "$here/bin/kiln_gpu_tests" --gtest_brief=1 || status=1
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  torch_line="$(python3 "$here/torch_mlp_step.py" 2>&1 | tail -1)"
  echo "$torch_line"
  KILN_TORCH_STEP_MS="$(echo "$torch_line" | sed -n 's/.*median \([0-9.]*\).*/\1/p')" "$here/bin/bench_gpu" || status=1
fi
exit $status
RUN
chmod +x "$stage/run.sh"

archive="$build/kiln-gpu.tar.xz"
tar -C "$build/stage" -cf - kiln-gpu | xz -T0 -9 > "$archive"
size=$(stat -c %s "$archive")
echo "$archive: $((size / 1024 / 1024)) MiB ($(ls "$stage/lib" | wc -l) libraries)"
if [ "$size" -gt $((60 * 1024 * 1024)) ]; then
  echo "the bundle is over 60 MiB" >&2
  exit 1
fi
