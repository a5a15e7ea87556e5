// The CUDA driver and cuBLAS, opened at run time (see the header).
#include "backend/cuda/cuda_driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

#include "core/error_format.h"

namespace kiln::cuda_backend {

namespace {

template <class Function>
void find(void* library, const std::string& path, const char* symbol, Function& function) {
  function = reinterpret_cast<Function>(::dlsym(library, symbol));
  if (!function)
    detail::raise("cuda", "'" + path + "' has no " + symbol + ": it is not the CUDA driver, or one too old for kiln",
                  Location(), "install the NVIDIA driver (its libcuda.so.1), or point KILN_CUDA_DRIVER at it");
}

}  // namespace

CudaDriver CudaDriver::open(const std::string& path) {
  // Never closed: the driver stays loaded for the process, as the CUDA runtime keeps it.
  void* library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* why = ::dlerror();
    detail::raise("cuda", "cannot open the CUDA driver '" + path + "' (" + std::string(why ? why : "unknown") + ")",
                  Location(),
                  "on a machine with an NVIDIA GPU, install its driver (libcuda.so.1) or point KILN_CUDA_DRIVER at "
                  "it; elsewhere use device \"cpu\"");
  }
  CudaDriver d;
  find(library, path, "cuInit", d.init);
  find(library, path, "cuDriverGetVersion", d.driver_version);
  find(library, path, "cuDeviceGetCount", d.device_count);
  find(library, path, "cuDeviceGet", d.device_get);
  find(library, path, "cuDeviceGetName", d.device_name);
  find(library, path, "cuDeviceGetAttribute", d.device_attribute);
  find(library, path, "cuDevicePrimaryCtxRetain", d.primary_context_retain);
  find(library, path, "cuCtxSetCurrent", d.context_set_current);
  find(library, path, "cuCtxSynchronize", d.context_synchronize);
  find(library, path, "cuMemAlloc_v2", d.memory_allocate);
  find(library, path, "cuMemFree_v2", d.memory_free);
  find(library, path, "cuMemcpyHtoD_v2", d.copy_host_to_device);
  find(library, path, "cuMemcpyDtoH_v2", d.copy_device_to_host);
  find(library, path, "cuMemcpyDtoD_v2", d.copy_device_to_device);
  find(library, path, "cuModuleLoadDataEx", d.module_load);
  find(library, path, "cuModuleGetFunction", d.module_function);
  find(library, path, "cuModuleUnload", d.module_unload);
  find(library, path, "cuLaunchKernel", d.launch_kernel);
  find(library, path, "cuGetErrorName", d.error_name);
  find(library, path, "cuGetErrorString", d.error_string);
  return d;
}

void CudaDriver::check(driver::Result result, const char* call) const {
  if (result == 0) return;
  const char* name = nullptr;
  const char* text = nullptr;
  if (error_name) error_name(result, &name);
  if (error_string) error_string(result, &text);
  detail::raise("cuda",
                std::string(call) + " failed: " + (name ? name : "error " + std::to_string(result)) +
                    (text ? std::string(" (") + text + ")" : std::string()),
                Location(), result == driver::no_device ? "use device \"cpu\" on a machine without a GPU" : "");
}

CublasLibrary CublasLibrary::open(std::string& why) {
  std::vector<std::string> candidates;
  if (const char* chosen = std::getenv("KILN_CUBLAS"); chosen && *chosen) {
    candidates.push_back(chosen);
  } else {
    for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"}) candidates.push_back(name);
    std::vector<std::string> roots;
    for (const char* variable : {"CUDA_HOME", "CUDA_PATH"})
      if (const char* root = std::getenv(variable); root && *root) roots.push_back(root);
    roots.push_back("/usr/local/cuda");
    for (const std::string& root : roots)
      for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"})
        candidates.push_back(root + "/lib64/" + name);
  }
  CublasLibrary blas;
  for (const std::string& candidate : candidates) {
    void* library = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      const char* error = ::dlerror();
      why += "\n  " + candidate + ": " + (error ? error : "cannot open");
      continue;
    }
    blas.create = reinterpret_cast<decltype(blas.create)>(::dlsym(library, "cublasCreate_v2"));
    blas.sgemm_strided_batched = reinterpret_cast<Gemm32>(::dlsym(library, "cublasSgemmStridedBatched"));
    blas.dgemm_strided_batched = reinterpret_cast<Gemm64>(::dlsym(library, "cublasDgemmStridedBatched"));
    if (blas.create && blas.sgemm_strided_batched && blas.dgemm_strided_batched) {
      blas.path = candidate;
      return blas;
    }
    why += "\n  " + candidate + ": lacks cublasCreate_v2 or the strided batched products";
    blas = {};
  }
  return blas;
}

}  // namespace kiln::cuda_backend
