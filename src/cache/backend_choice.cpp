// The backend choice (see the header).
#include "cache/backend_choice.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "backend/cuda/cuda_device.h"
#include "backend/cuda/emulated_device.h"
#include "backend/cuda/gpu_backend.h"
#include "backend/interp/interpreter.h"
#include "backend/llvm/backend.h"
#include "core/error_format.h"

namespace kiln::cache {

namespace {
bool interpreter_chosen() {
  static const bool interpreter = [] {
    const char* name = std::getenv("KILN_BACKEND");
    if (!name || !*name || std::strcmp(name, "llvm") == 0) return false;
    if (std::strcmp(name, "interp") == 0) return true;
    std::fprintf(stderr, "kiln: KILN_BACKEND=%s is unknown (llvm or interp); using llvm\n", name);
    return false;
  }();
  return interpreter;
}
}  // namespace

const runtime::Backend& default_backend() {
  return interpreter_chosen() ? interp::interpreter_backend() : llvm_backend::llvm_backend();
}

bool native_backend_chosen() { return !interpreter_chosen(); }

const runtime::Backend* device_backend(const std::string& device, const std::string& name, Location where) {
  if (device == "cpu") return nullptr;
  if (device != "cuda")
    detail::raise("jit", "'" + name + "' asks for device '" + device + "', which kiln does not know", where,
                  "use \"cpu\" or \"cuda\"");
  // KILN_CUDA_EMULATE=1: the GPU path on an emulated device (device.h),
  // to test kiln's GPU backend, or a program's use of it, without a GPU.
  if (const char* emulate = std::getenv("KILN_CUDA_EMULATE"); emulate && std::strcmp(emulate, "1") == 0) {
    static const runtime::Backend* emulated =  // never destroyed: compiles may run at exit
        cuda_backend::make_gpu_backend(cuda_backend::make_emulated_device()).release();
    return emulated;
  }
  static std::once_flag made;
  static const runtime::Backend* backend = nullptr;  // never destroyed: compiles may run at exit
  std::shared_ptr<cuda_backend::Device> gpu;
  try {
    gpu = cuda_backend::cuda_device();
  } catch (const Error& error) {
    detail::raise("jit", "'" + name + "' asks for device 'cuda', which is not available here:\n  " + error.what(),
                  where, "use device \"cpu\" on a machine without an NVIDIA GPU");
  }
  std::call_once(made, [&] { backend = cuda_backend::make_gpu_backend(gpu).release(); });
  return backend;
}

}  // namespace kiln::cache
