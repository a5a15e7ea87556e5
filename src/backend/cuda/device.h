// A GPU as the executables see it: memory, copies, programs of fused kernels
// and matrix products. Two kinds: the CUDA driver's (cuda_device.h) and an
// emulated one (emulated_device.h) that compiles the same GPU entries for the
// host and runs the grid's threads one after another, so that the whole GPU
// path (launch parameters, grid-stride iterations, chunked reductions, the
// column-major products) is tested on machines without a GPU.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/cuda/ptx.h"

namespace kiln::cuda_backend {

using DeviceAddress = uint64_t;

class Device;

/// A block of device memory; its destruction returns it to the device's cache.
class DeviceBuffer {
 public:
  DeviceBuffer(std::shared_ptr<Device> device, DeviceAddress address, size_t bytes)
      : device_(std::move(device)), address_(address), bytes_(bytes) {}
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceAddress address() const { return address_; }
  size_t bytes() const { return bytes_; }
  Device& device() const { return *device_; }

 private:
  std::shared_ptr<Device> device_;
  DeviceAddress address_;
  size_t bytes_;
};

/// A plan's kernels loaded on a device.
class LoadedProgram {
 public:
  virtual ~LoadedProgram() = default;
  std::vector<GpuKernel> kernels;  // by the plan's kernel index
  /// The kernels' code as Device::load_saved takes it back in a later
  /// process: PTX on a GPU, an object file on the emulated device.
  std::string code;
};

/// One launch of a kernel: its buffers (constants, outputs, leaves), then
/// range, chunk and output stride (ptx.h), on a grid of blocks x threads.
struct Launch {
  int kernel = 0;
  std::vector<DeviceAddress> buffers;
  int64_t range = 0, chunk = 1, stride = 0;
  int64_t blocks = 1, threads = 1;
};

/// A (batched) matrix product as cuBLAS takes it, column-major: C = op(A) op(B)
/// with C m x n, op(A) m x k, op(B) k x n; matrix i of a batch at i * stride.
struct ColumnMajorProduct {
  DType dtype = DType::f32;
  bool transpose_a = false, transpose_b = false;
  int64_t m = 0, n = 0, k = 0;
  DeviceAddress a = 0, b = 0, c = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0, batch = 1;
};

class Device : public std::enable_shared_from_this<Device> {
 public:
  virtual ~Device() = default;
  /// "cuda:0 (NVIDIA H200, sm_90)", for messages.
  virtual std::string name() const = 0;
  /// What compiled code depends on (the GPU's architecture, the PTX version,
  /// the driver): part of every cache key, so code is never loaded elsewhere.
  virtual std::string target() const = 0;
  /// How many blocks run at once, which sizes grids.
  virtual int64_t resident_blocks() const = 0;
  virtual int64_t threads_per_block() const = 0;

  /// Memory from the device's cache of freed blocks, else fresh; raises
  /// kiln::Error naming `operation` when the device has none left.
  std::shared_ptr<DeviceBuffer> allocate(size_t bytes, const std::string& operation);
  virtual void copy_to_device(DeviceAddress destination, const void* source, size_t bytes) = 0;
  virtual void copy_to_host(void* destination, DeviceAddress source, size_t bytes) = 0;
  virtual void copy_on_device(DeviceAddress destination, DeviceAddress source, size_t bytes) = 0;

  /// Compiles and loads the plan's kernels.
  std::shared_ptr<const LoadedProgram> load(const ir::Graph& graph, const llvm_backend::Plan& plan,
                                            const std::string& name);
  /// Loads `code` (LoadedProgram::code of an earlier load of the same plan)
  /// as the program of `kernels`, generating no code.
  std::shared_ptr<const LoadedProgram> load_saved(std::vector<GpuKernel> kernels, std::string code,
                                                  const std::string& name);
  /// How many programs load has compiled in this process.
  size_t programs_compiled() const { return programs_compiled_.load(); }
  virtual void launch(const LoadedProgram& program, const Launch& launch) = 0;
  /// f32 and f64 products.
  virtual void multiply(const ColumnMajorProduct& product) = 0;
  /// Waits for everything queued on the device.
  virtual void synchronize() = 0;

  /// Held by a run from its first copy to its last: runs on one device take
  /// turns (a loop's body runs inside its loop's run, on the same thread).
  std::recursive_mutex& run_mutex() { return run_mutex_; }

  /// Bytes held in the cache of freed blocks, and in use.
  size_t cached_bytes() const;
  size_t used_bytes() const;

 protected:
  /// A program of this device's kind with nothing in it.
  virtual std::shared_ptr<LoadedProgram> make_program() = 0;
  /// Sets `program`'s kernels and code to the plan's, compiled.
  virtual void compile_program(LoadedProgram& program, const ir::Graph& graph, const llvm_backend::Plan& plan,
                               const std::string& name) = 0;
  /// Makes `program`'s code (of one or more kernels) ready to launch.
  virtual void link_program(LoadedProgram& program, const std::string& name) = 0;
  /// Fresh device memory, or 0 when there is none.
  virtual DeviceAddress fresh_memory(size_t bytes) = 0;
  virtual void free_memory(DeviceAddress address) = 0;
  /// Frees every cached block (when memory runs out, and before the device goes).
  void release_cache();

 private:
  friend class DeviceBuffer;
  void give_back(DeviceAddress address, size_t bytes);

  mutable std::mutex memory_mutex_;
  std::multimap<size_t, DeviceAddress> cached_;  // by rounded size
  size_t cached_bytes_ = 0, used_bytes_ = 0;
  std::recursive_mutex run_mutex_;
  std::atomic<size_t> programs_compiled_{0};
};

}  // namespace kiln::cuda_backend
