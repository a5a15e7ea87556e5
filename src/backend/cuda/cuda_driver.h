// The CUDA driver and cuBLAS, opened at run time with dlopen: kiln builds
// and runs without CUDA, and only asking for the "cuda" device needs
// libcuda.so.1 (the driver, installed with the NVIDIA kernel module) and,
// for matrix products, libcublas. The declarations are the driver API's
// stable C ABI (cuda.h, cublas_api.h), written out so that building kiln
// needs no CUDA headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln::cuda_backend {

namespace driver {
using Result = int;  // CUresult; 0 is success
using DeviceHandle = int;
using Context = struct ContextOpaque*;
using Module = struct ModuleOpaque*;
using Function = struct FunctionOpaque*;
using Stream = struct StreamOpaque*;
using Pointer = unsigned long long;  // CUdeviceptr
using BlasHandle = struct BlasOpaque*;

// CUdevice_attribute values.
constexpr int multiprocessor_count = 16;
constexpr int compute_capability_major = 75;
constexpr int compute_capability_minor = 76;
constexpr int max_threads_per_multiprocessor = 39;
// CUjit_option values.
constexpr int jit_info_log_buffer = 3;
constexpr int jit_info_log_buffer_size = 4;
constexpr int jit_error_log_buffer = 5;
constexpr int jit_error_log_buffer_size = 6;
constexpr Result no_device = 100;
}  // namespace driver

/// The driver's entry points kiln calls.
struct CudaDriver {
  driver::Result (*init)(unsigned flags) = nullptr;
  driver::Result (*driver_version)(int*) = nullptr;
  driver::Result (*device_count)(int*) = nullptr;
  driver::Result (*device_get)(driver::DeviceHandle*, int) = nullptr;
  driver::Result (*device_name)(char*, int, driver::DeviceHandle) = nullptr;
  driver::Result (*device_attribute)(int*, int, driver::DeviceHandle) = nullptr;
  driver::Result (*primary_context_retain)(driver::Context*, driver::DeviceHandle) = nullptr;
  driver::Result (*context_set_current)(driver::Context) = nullptr;
  driver::Result (*context_synchronize)() = nullptr;
  driver::Result (*memory_allocate)(driver::Pointer*, size_t) = nullptr;
  driver::Result (*memory_free)(driver::Pointer) = nullptr;
  driver::Result (*copy_host_to_device)(driver::Pointer, const void*, size_t) = nullptr;
  driver::Result (*copy_device_to_host)(void*, driver::Pointer, size_t) = nullptr;
  driver::Result (*copy_device_to_device)(driver::Pointer, driver::Pointer, size_t) = nullptr;
  driver::Result (*module_load)(driver::Module*, const void*, unsigned, int*, void**) = nullptr;
  driver::Result (*module_function)(driver::Function*, driver::Module, const char*) = nullptr;
  driver::Result (*module_unload)(driver::Module) = nullptr;
  driver::Result (*launch_kernel)(driver::Function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  unsigned, driver::Stream, void**, void**) = nullptr;
  driver::Result (*error_name)(driver::Result, const char**) = nullptr;
  driver::Result (*error_string)(driver::Result, const char**) = nullptr;

  /// Opens the driver library at `path` ("libcuda.so.1": the dynamic
  /// linker's search) and finds every entry point. Raises kiln::Error naming
  /// the library, what is missing, and the fix.
  static CudaDriver open(const std::string& path);

  /// Raises kiln::Error naming `call` and the driver's name for `result`
  /// unless it is success.
  void check(driver::Result result, const char* call) const;
};

/// cuBLAS's products, the two kiln uses.
struct CublasLibrary {
  using Gemm32 = int (*)(driver::BlasHandle, int, int, int, int, int, const float*, const float*, int, long long,
                         const float*, int, long long, const float*, float*, int, long long, int);
  using Gemm64 = int (*)(driver::BlasHandle, int, int, int, int, int, const double*, const double*, int, long long,
                         const double*, int, long long, const double*, double*, int, long long, int);
  int (*create)(driver::BlasHandle*) = nullptr;
  Gemm32 sgemm_strided_batched = nullptr;
  Gemm64 dgemm_strided_batched = nullptr;
  std::string path;  // the library opened

  /// Opens cuBLAS: KILN_CUBLAS, else libcublas.so.13, .12 and .11 through the
  /// dynamic linker, else under CUDA_HOME or /usr/local/cuda. Empty `path`
  /// (and no entry points) when none opens; `why` then says what was tried.
  static CublasLibrary open(std::string& why);
};

}  // namespace kiln::cuda_backend
