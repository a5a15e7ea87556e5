// A map bounded by least-recently-used eviction, for the process-wide caches
// (compiled kernels, graph executables). Not thread-safe: each cache holds it
// under its own mutex, since what a cache does around a lookup (wait for a
// compile under way, say) is its own.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <unordered_map>
#include <utility>

namespace kiln::detail {

template <class Key, class Value, class Hash = std::hash<Key>, class Equal = std::equal_to<Key>>
class LruMap {
 public:
  explicit LruMap(size_t limit) : limit_(limit) {}

  /// The value held under `key`, marked most recently used; null if absent.
  Value* find(const Key& key) {
    auto found = index_.find(std::cref(key));
    if (found == index_.end()) return nullptr;
    recency_.splice(recency_.begin(), recency_, found->second);
    return &found->second->second;
  }

  /// Whether `key` is held, leaving the order of use as it is.
  bool contains(const Key& key) const { return index_.contains(std::cref(key)); }

  /// Holds `value` under `key`, which must be absent, as the most recently
  /// used; then forgets the least recently used beyond the limit (this one
  /// too, when the limit is 0).
  void insert(Key key, Value value) {
    recency_.emplace_front(std::move(key), std::move(value));
    index_.emplace(std::cref(recency_.front().first), recency_.begin());
    evict();
  }

  /// At most `limit` entries are kept; 0 keeps none.
  void set_limit(size_t limit) {
    limit_ = limit;
    evict();
  }
  size_t size() const { return recency_.size(); }
  void clear() {
    index_.clear();
    recency_.clear();
  }

 private:
  using Entry = std::pair<Key, Value>;
  using KeyRef = std::reference_wrapper<const Key>;
  struct RefHash {
    size_t operator()(KeyRef key) const { return Hash{}(key.get()); }
  };
  struct RefEqual {
    bool operator()(KeyRef a, KeyRef b) const { return Equal{}(a.get(), b.get()); }
  };

  void evict() {
    while (recency_.size() > limit_) {
      index_.erase(std::cref(recency_.back().first));
      recency_.pop_back();
    }
  }

  std::list<Entry> recency_;  // most recently used first
  // Keyed by references to the entries' keys, which list nodes keep in place.
  std::unordered_map<KeyRef, typename std::list<Entry>::iterator, RefHash, RefEqual> index_;
  size_t limit_;
};

}  // namespace kiln::detail
