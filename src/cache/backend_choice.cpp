// The backend choice (see the header).
#include "cache/backend_choice.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
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

namespace {
// The "cuda" device: an NVIDIA GPU, or with KILN_CUDA_EMULATE=1 the
// emulated one (backend/cuda/device.h), to test kiln's GPU path, or a
// program's use of it, on machines without a GPU. Raises the reason there
// is none: "<asking> device 'cuda', which is not available here".
std::shared_ptr<cuda_backend::Device> gpu(const std::string& operation, const std::string& asking, Location where) {
  if (const char* emulate = std::getenv("KILN_CUDA_EMULATE"); emulate && std::strcmp(emulate, "1") == 0) {
    static auto& emulated = *new std::shared_ptr<cuda_backend::Device>(cuda_backend::make_emulated_device());
    return emulated;
  }
  try {
    return cuda_backend::cuda_device();
  } catch (const Error& error) {
    detail::raise(operation, asking + " device 'cuda', which is not available here:\n  " + std::string(error.what()),
                  where, "use device \"cpu\" on a machine without an NVIDIA GPU");
  }
}

std::shared_ptr<const detail::DeviceStorage> upload(const void* data, size_t bytes, const std::string& device,
                                                    Location where) {
  if (device != "cuda")
    detail::raise("to_device", "device '" + device + "' is not one kiln knows", where, "use \"cpu\" or \"cuda\"");
  return cuda_backend::copy_to_device(*gpu("to_device", "moving an array to", where), data, bytes);
}
}  // namespace

const runtime::Backend* device_backend(const std::string& device, const std::string& name, Location where) {
  if (device == "cpu") return nullptr;
  if (device != "cuda")
    detail::raise("jit", "'" + name + "' asks for device '" + device + "', which kiln does not know", where,
                  "use \"cpu\" or \"cuda\"");
  std::shared_ptr<cuda_backend::Device> chosen = gpu("jit", "'" + name + "' asks for", where);
  // One backend per device (the GPU, the emulated one), never destroyed:
  // compiles may run at exit.
  static std::mutex mutex;
  static auto& backends = *new std::map<const cuda_backend::Device*, std::unique_ptr<runtime::Backend>>;
  std::lock_guard lock(mutex);
  std::unique_ptr<runtime::Backend>& backend = backends[chosen.get()];
  if (!backend) backend = cuda_backend::make_gpu_backend(chosen);
  return backend.get();
}

void connect_devices() { detail::install_device_upload(&upload); }

}  // namespace kiln::cache
