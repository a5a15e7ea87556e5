// Process-wide graph -> executable cache (see the header).
#include "cache/graph_cache.h"

#include <chrono>
#include <condition_variable>
#include <list>
#include <mutex>
#include <unordered_map>

#include "cache/backend_choice.h"
#include "cache/persistent_cache.h"
#include "transform/verify.h"

namespace kiln::cache {

namespace {

struct Slot {
  std::shared_ptr<const ir::Graph> graph;
  std::shared_ptr<const runtime::Executable> executable;  // null while compiling
  uint64_t key = 0;
  std::list<Slot*>::iterator recency;
};

class GraphCache {
 public:
  GraphLookup get_or_compile(const std::shared_ptr<const ir::Graph>& graph, uint64_t key) {
    std::unique_lock lock(mutex_);
    for (;;) {
      Slot* slot = find(key, *graph);
      if (!slot) break;
      if (slot->executable) {
        touch(slot);
        return {slot->executable, false, 0, key};
      }
      // Another thread is compiling this graph: wait for it.
      compiled_.wait(lock);
    }
    auto slot = std::make_unique<Slot>();
    slot->graph = graph;
    slot->key = key;
    Slot* placeholder = slot.get();
    slots_.emplace(key, std::move(slot));
    lock.unlock();

    std::shared_ptr<const runtime::Executable> executable;
    GraphLookup lookup{nullptr, true, 0, key};
    auto start = std::chrono::steady_clock::now();
    try {
      // Traces, derivative replays and lifting all end here.
      transform::verify_after("tracing", *graph);
      const runtime::Backend& backend = default_backend();
      std::shared_ptr<PersistentCache> disk = persistent_cache();
      std::string disk_key = disk->usable() ? persistent_key(*graph, backend) : std::string();
      if (!disk_key.empty()) {
        if (auto loaded = disk->load(graph, disk_key, backend)) {
          executable = loaded->executable;
          lookup.compiled = false;
          lookup.loaded = true;
          lookup.saved_compile_seconds = loaded->compile_seconds;
        }
      }
      if (!executable) {
        executable = backend.compile(graph);
        lookup.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (!disk_key.empty()) disk->store(*graph, disk_key, backend, *executable, lookup.compile_seconds);
      }
    } catch (...) {
      lock.lock();
      erase(placeholder, key);
      compiled_.notify_all();
      throw;
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    lookup.executable = executable;
    if (lookup.loaded) lookup.load_seconds = seconds;

    lock.lock();
    placeholder->executable = executable;
    recency_.push_front(placeholder);
    placeholder->recency = recency_.begin();
    evict();
    compiled_.notify_all();
    return lookup;
  }

  size_t size() {
    std::lock_guard lock(mutex_);
    return slots_.size();
  }

  void set_limit(size_t limit) {
    std::lock_guard lock(mutex_);
    limit_ = limit;
    evict();
  }

 private:
  Slot* find(uint64_t key, const ir::Graph& graph) {
    auto [begin, end] = slots_.equal_range(key);
    for (auto it = begin; it != end; ++it)
      if (it->second->graph->structurally_equal(graph) && it->second->graph->same_literals(graph))
        return it->second.get();
    return nullptr;
  }

  void touch(Slot* slot) { recency_.splice(recency_.begin(), recency_, slot->recency); }

  void erase(Slot* slot, uint64_t key) {
    auto [begin, end] = slots_.equal_range(key);
    for (auto it = begin; it != end; ++it)
      if (it->second.get() == slot) {
        slots_.erase(it);
        return;
      }
  }

  void evict() {
    while (recency_.size() > limit_) {
      Slot* oldest = recency_.back();
      recency_.pop_back();
      erase(oldest, oldest->key);
    }
  }

  std::mutex mutex_;
  std::condition_variable compiled_;
  std::unordered_multimap<uint64_t, std::unique_ptr<Slot>> slots_;
  std::list<Slot*> recency_;  // compiled slots, most recent first
  size_t limit_ = CacheLimits{}.graphs;
};

GraphCache& instance() {
  static GraphCache cache;
  return cache;
}

}  // namespace

uint64_t graph_key(const ir::Graph& graph, uint64_t structure_hash) {
  return structure_hash * 0x9e3779b97f4a7c15ull ^ graph.literal_hash();
}
uint64_t graph_key(const ir::Graph& graph) { return graph_key(graph, graph.structure_hash()); }

GraphLookup get_or_compile(const std::shared_ptr<const ir::Graph>& graph, uint64_t key) {
  return instance().get_or_compile(graph, key);
}
size_t graph_cache_size() { return instance().size(); }
void set_graph_cache_limit(size_t limit) { instance().set_limit(limit); }

}  // namespace kiln::cache
