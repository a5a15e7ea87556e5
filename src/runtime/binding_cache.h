// What an executable of a symbolic graph prepares once per binding of its
// symbols (the concrete graph, ranges, constants), kept for the most
// recently used bindings so a call at a size seen before costs one lookup.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace kiln::runtime {

template <class Prepared>
class BindingCache {
 public:
  explicit BindingCache(size_t capacity = 16) : capacity_(capacity) {}

  /// The prepared value for `values`, made by `prepare(values)` on a miss
  /// (outside the lock: concurrent misses may both prepare; one is kept).
  template <class Prepare>
  std::shared_ptr<const Prepared> get(const std::vector<int64_t>& values, Prepare prepare) const {
    {
      std::lock_guard lock(mutex_);
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->first != values) continue;
        if (it != entries_.begin()) entries_.splice(entries_.begin(), entries_, it);
        return entries_.front().second;
      }
    }
    auto prepared = std::make_shared<const Prepared>(prepare(values));
    std::lock_guard lock(mutex_);
    entries_.emplace_front(values, prepared);
    while (entries_.size() > capacity_) entries_.pop_back();
    return prepared;
  }

 private:
  size_t capacity_;
  mutable std::mutex mutex_;
  mutable std::list<std::pair<std::vector<int64_t>, std::shared_ptr<const Prepared>>> entries_;
};

}  // namespace kiln::runtime
