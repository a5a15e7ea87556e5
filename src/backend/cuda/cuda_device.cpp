// An NVIDIA GPU through the CUDA driver (see the header).
#include "backend/cuda/cuda_device.h"

#include <cstdlib>
#include <mutex>
#include <vector>

#include "backend/cuda/cuda_driver.h"
#include "core/error_format.h"

namespace kiln::cuda_backend {

namespace {

// Threads of a block: 8 warps, so that a multiprocessor of 2048 threads
// holds 8 blocks and a kernel's blocks spread over every multiprocessor.
constexpr int64_t block_threads = 256;

class CudaProgram final : public LoadedProgram {
 public:
  CudaProgram(const CudaDriver& driver, driver::Context context) : driver_(driver), context_(context) {}
  ~CudaProgram() override {
    if (!module) return;
    driver_.context_set_current(context_);
    driver_.module_unload(module);
  }
  driver::Module module = nullptr;
  std::vector<driver::Function> functions;

 private:
  const CudaDriver& driver_;
  driver::Context context_;
};

class CudaDevice final : public Device {
 public:
  CudaDevice(CudaDriver driver, int ordinal) : driver_(std::move(driver)), ordinal_(ordinal) {
    driver_.check(driver_.init(0), "cuInit");
    int count = 0;
    driver_.check(driver_.device_count(&count), "cuDeviceGetCount");
    if (ordinal >= count)
      detail::raise(
          "cuda",
          "there is no CUDA GPU " + std::to_string(ordinal) + " (the driver sees " + std::to_string(count) + ")",
          Location(), count ? "set KILN_CUDA_DEVICE below " + std::to_string(count) : "use device \"cpu\"");
    driver_.check(driver_.device_get(&device_, ordinal), "cuDeviceGet");
    char name[256] = {};
    driver_.check(driver_.device_name(name, sizeof name, device_), "cuDeviceGetName");
    gpu_name_ = name;
    int major = 0, minor = 0, multiprocessors = 0, threads = 0;
    driver_.check(driver_.device_attribute(&major, driver::compute_capability_major, device_), "cuDeviceGetAttribute");
    driver_.check(driver_.device_attribute(&minor, driver::compute_capability_minor, device_), "cuDeviceGetAttribute");
    driver_.check(driver_.device_attribute(&multiprocessors, driver::multiprocessor_count, device_),
                  "cuDeviceGetAttribute");
    driver_.check(driver_.device_attribute(&threads, driver::max_threads_per_multiprocessor, device_),
                  "cuDeviceGetAttribute");
    driver_.check(driver_.driver_version(&driver_version_), "cuDriverGetVersion");
    target_ = gpu_target(major, minor, driver_version_);
    resident_blocks_ = int64_t{multiprocessors} * std::max<int64_t>(threads / block_threads, 1);
    // The primary context: the one the CUDA runtime (and cuBLAS) uses too.
    driver_.check(driver_.primary_context_retain(&context_, device_), "cuDevicePrimaryCtxRetain");
    make_current();
  }

  std::string name() const override {
    return "cuda:" + std::to_string(ordinal_) + " (" + gpu_name_ + ", " + target_.architecture_name() + ")";
  }
  std::string target() const override {
    return "cuda " + target_.architecture_name() + " ptx" + std::to_string(target_.ptx_version) + " on " + gpu_name_ +
           " driver " + std::to_string(driver_version_);
  }
  int64_t resident_blocks() const override { return resident_blocks_; }
  int64_t threads_per_block() const override { return block_threads; }

  void copy_to_device(DeviceAddress destination, const void* source, size_t bytes) override {
    if (!bytes) return;
    make_current();
    driver_.check(driver_.copy_host_to_device(destination, source, bytes), "cuMemcpyHtoD");
  }
  void copy_to_host(void* destination, DeviceAddress source, size_t bytes) override {
    if (!bytes) return;
    make_current();
    driver_.check(driver_.copy_device_to_host(destination, source, bytes), "cuMemcpyDtoH");
  }
  void copy_on_device(DeviceAddress destination, DeviceAddress source, size_t bytes) override {
    if (!bytes) return;
    make_current();
    driver_.check(driver_.copy_device_to_device(destination, source, bytes), "cuMemcpyDtoD");
  }

  std::shared_ptr<LoadedProgram> make_program() override { return std::make_shared<CudaProgram>(driver_, context_); }

  void compile_program(LoadedProgram& program, const ir::Graph& graph, const llvm_backend::Plan& plan,
                       const std::string& name) override {
    if (plan.kernels.empty()) return;
    PtxModule ptx = compile_ptx(graph, plan, target_, name, libdevice());
    if (!ptx.libdevice_functions.empty())
      detail::raise("cuda",
                    "'" + name + "' calls " + ptx.libdevice_functions.front() +
                        ", which comes from the CUDA toolkit's libdevice, and none was found",
                    Location(), "point KILN_LIBDEVICE at nvvm/libdevice/libdevice.10.bc of a CUDA toolkit");
    program.kernels = std::move(ptx.kernels);
    program.code = std::move(ptx.ptx);
  }

  // The driver compiles the PTX for this GPU (and keeps what it compiled in
  // its own cache, ~/.nv/ComputeCache, so a saved entry loads quickly).
  void link_program(LoadedProgram& loaded, const std::string& name) override {
    auto& program = static_cast<CudaProgram&>(loaded);
    make_current();
    std::vector<char> error_log(16384, 0), info_log(4096, 0);
    int options[] = {driver::jit_error_log_buffer, driver::jit_error_log_buffer_size, driver::jit_info_log_buffer,
                     driver::jit_info_log_buffer_size};
    void* values[] = {error_log.data(), reinterpret_cast<void*>(error_log.size()), info_log.data(),
                      reinterpret_cast<void*>(info_log.size())};
    driver::Result loaded_module = driver_.module_load(&program.module, program.code.c_str(), 4, options, values);
    if (loaded_module != 0) {
      program.module = nullptr;
      const char* error = nullptr;
      driver_.error_name(loaded_module, &error);
      detail::raise("cuda",
                    "the GPU driver refused the PTX of '" + name + "' (" + (error ? error : "error") +
                        "): " + std::string(error_log.data()),
                    Location(), "report this as a kiln bug, with the graph (KILN_DUMP)");
    }
    for (const GpuKernel& kernel : program.kernels) {
      driver::Function function = nullptr;
      driver_.check(driver_.module_function(&function, program.module, kernel.entry.c_str()), "cuModuleGetFunction");
      program.functions.push_back(function);
    }
  }

  void launch(const LoadedProgram& loaded, const Launch& launch) override {
    const auto& program = static_cast<const CudaProgram&>(loaded);
    std::vector<uint64_t> values(launch.buffers.begin(), launch.buffers.end());
    values.insert(values.end(), {static_cast<uint64_t>(launch.range), static_cast<uint64_t>(launch.chunk),
                                 static_cast<uint64_t>(launch.stride)});
    std::vector<void*> parameters;
    for (uint64_t& value : values) parameters.push_back(&value);
    make_current();
    driver_.check(driver_.launch_kernel(
                      program.functions.at(static_cast<size_t>(launch.kernel)), static_cast<unsigned>(launch.blocks), 1,
                      1, static_cast<unsigned>(launch.threads), 1, 1, 0, nullptr, parameters.data(), nullptr),
                  "cuLaunchKernel");
  }

  void multiply(const ColumnMajorProduct& p) override {
    make_current();
    driver::BlasHandle handle = blas_handle();
    auto operation = [](bool transpose) { return transpose ? 1 : 0; };  // CUBLAS_OP_T, CUBLAS_OP_N
    int status = 0;
    if (p.dtype == DType::f32) {
      const float one = 1, zero = 0;
      status = blas_.sgemm_strided_batched(handle, operation(p.transpose_a), operation(p.transpose_b), int(p.m),
                                           int(p.n), int(p.k), &one, reinterpret_cast<const float*>(p.a), int(p.lda),
                                           p.stride_a, reinterpret_cast<const float*>(p.b), int(p.ldb), p.stride_b,
                                           &zero, reinterpret_cast<float*>(p.c), int(p.ldc), p.stride_c, int(p.batch));
    } else {
      const double one = 1, zero = 0;
      status = blas_.dgemm_strided_batched(handle, operation(p.transpose_a), operation(p.transpose_b), int(p.m),
                                           int(p.n), int(p.k), &one, reinterpret_cast<const double*>(p.a), int(p.lda),
                                           p.stride_a, reinterpret_cast<const double*>(p.b), int(p.ldb), p.stride_b,
                                           &zero, reinterpret_cast<double*>(p.c), int(p.ldc), p.stride_c, int(p.batch));
    }
    if (status != 0)
      detail::raise("matmul", "cuBLAS's product failed with status " + std::to_string(status) + " on " + name(),
                    Location(), "");
  }

  void synchronize() override {
    make_current();
    driver_.check(driver_.context_synchronize(), "cuCtxSynchronize");
  }

 protected:
  DeviceAddress fresh_memory(size_t bytes) override {
    make_current();
    driver::Pointer address = 0;
    constexpr driver::Result out_of_memory = 2;
    driver::Result result = driver_.memory_allocate(&address, bytes);
    if (result == out_of_memory) return 0;
    driver_.check(result, "cuMemAlloc");
    return address;
  }
  void free_memory(DeviceAddress address) override {
    make_current();
    driver_.memory_free(address);
  }

 private:
  void make_current() const { driver_.check(driver_.context_set_current(context_), "cuCtxSetCurrent"); }

  const std::string& libdevice() {
    std::call_once(libdevice_found_, [this] { libdevice_ = find_libdevice(); });
    return libdevice_;
  }

  driver::BlasHandle blas_handle() {
    std::lock_guard lock(blas_mutex_);
    if (blas_handle_) return blas_handle_;
    std::string tried;
    blas_ = CublasLibrary::open(tried);
    if (blas_.path.empty())
      detail::raise("matmul", "matrix products on " + name() + " need cuBLAS, which did not open:" + tried, Location(),
                    "install CUDA's cuBLAS or point KILN_CUBLAS at libcublas.so");
    int status = blas_.create(&blas_handle_);
    if (status != 0)
      detail::raise("matmul", "cublasCreate failed with status " + std::to_string(status) + " on " + name(), Location(),
                    "");
    return blas_handle_;
  }

  CudaDriver driver_;
  int ordinal_;
  driver::DeviceHandle device_ = 0;
  driver::Context context_ = nullptr;
  std::string gpu_name_;
  int driver_version_ = 0;
  GpuTarget target_;
  int64_t resident_blocks_ = 1;
  std::once_flag libdevice_found_;
  std::string libdevice_;
  std::mutex blas_mutex_;
  CublasLibrary blas_;
  driver::BlasHandle blas_handle_ = nullptr;
};

}  // namespace

std::shared_ptr<Device> cuda_device() {
  // Opened once; a failure is remembered and raised again with its message.
  static std::once_flag opened;
  static std::shared_ptr<Device>* device = nullptr;  // never destroyed: kernels may still run at exit
  static std::string* failure = nullptr;
  std::call_once(opened, [] {
    try {
      const char* path = std::getenv("KILN_CUDA_DRIVER");
      const char* ordinal = std::getenv("KILN_CUDA_DEVICE");
      device = new std::shared_ptr<Device>(std::make_shared<CudaDevice>(
          CudaDriver::open(path && *path ? path : "libcuda.so.1"), ordinal && *ordinal ? std::atoi(ordinal) : 0));
    } catch (const Error& error) {
      failure = new std::string(error.what());
    }
  });
  if (failure) throw Error(*failure);
  return *device;
}

}  // namespace kiln::cuda_backend
