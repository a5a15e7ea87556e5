// Process-wide kernel cache (see the header).
#include "backend/llvm/kernel_cache.h"

#include <list>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "backend/llvm/engine.h"
#include "kiln/jit.h"

namespace kiln::llvm_backend {

namespace {

class KernelCache {
 public:
  std::optional<CompiledKernel> find(const std::string& key) {
    std::lock_guard lock(mutex_);
    auto found = index_.find(key);
    if (found == index_.end()) return std::nullopt;
    recency_.splice(recency_.begin(), recency_, found->second);
    return found->second->kernel;
  }

  CompiledKernel remember(const std::string& key, const CompiledKernel& kernel) {
    std::lock_guard lock(mutex_);
    if (auto found = index_.find(key); found != index_.end()) {
      recency_.splice(recency_.begin(), recency_, found->second);
      return found->second->kernel;
    }
    recency_.push_front({key, kernel});
    index_.emplace(recency_.front().key, recency_.begin());
    evict();
    return kernel;
  }

  void clear() {
    std::lock_guard lock(mutex_);
    index_.clear();
    recency_.clear();
  }

  size_t size() {
    std::lock_guard lock(mutex_);
    return recency_.size();
  }

  void set_limit(size_t limit) {
    std::lock_guard lock(mutex_);
    limit_ = limit;
    evict();
  }

 private:
  struct Item {
    std::string key;
    CompiledKernel kernel;
  };

  void evict() {
    while (recency_.size() > limit_) {
      index_.erase(recency_.back().key);
      recency_.pop_back();
    }
  }

  std::mutex mutex_;
  std::list<Item> recency_;  // most recently used first
  // Views into the items' keys, which list nodes keep in place.
  std::unordered_map<std::string_view, std::list<Item>::iterator> index_;
  size_t limit_ = CacheLimits{}.kernels;
};

KernelCache& instance() {
  static KernelCache cache;
  return cache;
}

}  // namespace

std::optional<CompiledKernel> find_compiled_kernel(const std::string& key) { return instance().find(key); }
CompiledKernel remember_compiled_kernel(const std::string& key, const CompiledKernel& kernel) {
  return instance().remember(key, kernel);
}
void clear_kernel_cache() { instance().clear(); }
size_t kernel_cache_size() { return instance().size(); }
size_t linked_modules() { return Engine::instance().linked_modules(); }
void set_kernel_cache_limit(size_t limit) { instance().set_limit(limit); }

}  // namespace kiln::llvm_backend
