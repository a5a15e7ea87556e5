// Device memory and its cache (see the header).
#include "backend/cuda/device.h"

#include "core/error_format.h"

namespace kiln::cuda_backend {

namespace {
// Sizes as the cache rounds them: 512 bytes up to 1 MiB, then 2 MiB, so a
// block freed by one call serves the next call's value of about that size.
size_t rounded_device_size(size_t bytes) {
  constexpr size_t small = 512, large = size_t{2} << 20;
  if (bytes == 0) bytes = 1;
  size_t unit = bytes <= (size_t{1} << 20) ? small : large;
  return (bytes + unit - 1) / unit * unit;
}
}  // namespace

DeviceBuffer::~DeviceBuffer() { device_->give_back(address_, bytes_); }

std::shared_ptr<const LoadedProgram> Device::load(const ir::Graph& graph, const llvm_backend::Plan& plan,
                                                  const std::string& name) {
  std::shared_ptr<LoadedProgram> program = make_program();
  compile_program(*program, graph, plan, name);
  ++programs_compiled_;
  if (!program->kernels.empty()) link_program(*program, name);
  return program;
}

std::shared_ptr<const LoadedProgram> Device::load_saved(std::vector<GpuKernel> kernels, std::string code,
                                                        const std::string& name) {
  std::shared_ptr<LoadedProgram> program = make_program();
  program->kernels = std::move(kernels);
  program->code = std::move(code);
  if (!program->kernels.empty()) link_program(*program, name);
  return program;
}

std::shared_ptr<DeviceBuffer> Device::allocate(size_t bytes, const std::string& operation) {
  size_t size = rounded_device_size(bytes);
  {
    std::lock_guard lock(memory_mutex_);
    if (auto found = cached_.find(size); found != cached_.end()) {
      DeviceAddress address = found->second;
      cached_.erase(found);
      cached_bytes_ -= size;
      used_bytes_ += size;
      return std::make_shared<DeviceBuffer>(shared_from_this(), address, size);
    }
  }
  DeviceAddress address = fresh_memory(size);
  if (!address) {
    // Blocks of other sizes go back to the device first, as PyTorch's allocator does.
    release_cache();
    address = fresh_memory(size);
  }
  if (!address) {
    std::lock_guard lock(memory_mutex_);
    detail::raise(operation,
                  "out of memory on " + name() + " allocating " + std::to_string(size) + " bytes (" +
                      std::to_string(used_bytes_) + " bytes in use by kiln)",
                  Location(), "free arrays you no longer need, or use smaller batches");
  }
  std::lock_guard lock(memory_mutex_);
  used_bytes_ += size;
  return std::make_shared<DeviceBuffer>(shared_from_this(), address, size);
}

void Device::give_back(DeviceAddress address, size_t bytes) {
  std::lock_guard lock(memory_mutex_);
  cached_.emplace(bytes, address);
  cached_bytes_ += bytes;
  used_bytes_ -= bytes;
}

void Device::release_cache() {
  std::multimap<size_t, DeviceAddress> released;
  {
    std::lock_guard lock(memory_mutex_);
    released.swap(cached_);
    cached_bytes_ = 0;
  }
  for (const auto& [size, address] : released) free_memory(address);
}

size_t Device::cached_bytes() const {
  std::lock_guard lock(memory_mutex_);
  return cached_bytes_;
}

size_t Device::used_bytes() const {
  std::lock_guard lock(memory_mutex_);
  return used_bytes_;
}

}  // namespace kiln::cuda_backend
