// Process-wide kernel cache (see the header).
#include "backend/llvm/kernel_cache.h"

#include <mutex>

#include "backend/llvm/engine.h"
#include "core/lru_map.h"
#include "kiln/jit.h"

namespace kiln::llvm_backend {

namespace {

class KernelCache {
 public:
  std::optional<CompiledKernel> find(const std::string& key, bool accept_quick) {
    std::lock_guard lock(mutex_);
    if (const CompiledKernel* held = kernels_.find(key); held && (accept_quick || !held->quick)) return *held;
    return std::nullopt;
  }

  CompiledKernel remember(const std::string& key, const CompiledKernel& kernel) {
    std::lock_guard lock(mutex_);
    if (CompiledKernel* held = kernels_.find(key)) {
      if (held->quick && !kernel.quick) *held = kernel;
      return *held;
    }
    kernels_.insert(key, kernel);
    return kernel;
  }

  void clear() {
    std::lock_guard lock(mutex_);
    kernels_.clear();
  }

  size_t size() {
    std::lock_guard lock(mutex_);
    return kernels_.size();
  }

  void set_limit(size_t limit) {
    std::lock_guard lock(mutex_);
    kernels_.set_limit(limit);
  }

 private:
  std::mutex mutex_;
  detail::LruMap<std::string, CompiledKernel> kernels_{CacheLimits{}.kernels};
};

// Never destroyed: kiln's compile thread may use it while the process exits.
KernelCache& instance() {
  static KernelCache& cache = *new KernelCache;
  return cache;
}

}  // namespace

std::optional<CompiledKernel> find_compiled_kernel(const std::string& key, bool accept_quick) {
  return instance().find(key, accept_quick);
}
CompiledKernel remember_compiled_kernel(const std::string& key, const CompiledKernel& kernel) {
  return instance().remember(key, kernel);
}
void clear_kernel_cache() { instance().clear(); }
size_t kernel_cache_size() { return instance().size(); }
size_t linked_modules() { return Engine::instance().linked_modules(); }
void set_kernel_cache_limit(size_t limit) { instance().set_limit(limit); }

}  // namespace kiln::llvm_backend
