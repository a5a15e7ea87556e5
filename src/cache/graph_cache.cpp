// Process-wide graph -> executable cache (see the header).
#include "cache/graph_cache.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <unordered_set>

#include "cache/backend_choice.h"
#include "cache/persistent_cache.h"
#include "core/lru_map.h"
#include "transform/verify.h"

namespace kiln::cache {

namespace {

// A graph as the cache knows it: by its key, confirmed by structure and literal values.
struct CachedGraph {
  uint64_t key = 0;
  std::shared_ptr<const ir::Graph> graph;
};
struct CachedGraphHash {
  size_t operator()(const CachedGraph& cached) const { return static_cast<size_t>(cached.key); }
};
struct SameGraph {
  bool operator()(const CachedGraph& a, const CachedGraph& b) const {
    return a.key == b.key && a.graph->structurally_equal(*b.graph) && a.graph->same_literals(*b.graph);
  }
};

class GraphCache {
 public:
  GraphLookup get_or_compile(const std::shared_ptr<const ir::Graph>& graph, uint64_t key) {
    CachedGraph cached{key, graph};
    std::unique_lock lock(mutex_);
    for (;;) {
      if (auto* executable = executables_.find(cached)) return {*executable, false, 0, key};
      if (!compiling_.contains(cached)) break;
      // Another thread is compiling this graph: wait for it.
      compiled_.wait(lock);
    }
    compiling_.insert(cached);
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
      compiling_.erase(cached);
      compiled_.notify_all();
      throw;
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    lookup.executable = executable;
    if (lookup.loaded) lookup.load_seconds = seconds;

    lock.lock();
    compiling_.erase(cached);
    executables_.insert(cached, executable);
    compiled_.notify_all();
    return lookup;
  }

  void set_limit(size_t limit) {
    std::lock_guard lock(mutex_);
    executables_.set_limit(limit);
  }

 private:
  std::mutex mutex_;
  std::condition_variable compiled_;
  detail::LruMap<CachedGraph, std::shared_ptr<const runtime::Executable>, CachedGraphHash, SameGraph> executables_{
      CacheLimits{}.graphs};
  std::unordered_set<CachedGraph, CachedGraphHash, SameGraph> compiling_;  // graphs some thread is compiling
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
void set_graph_cache_limit(size_t limit) { instance().set_limit(limit); }

}  // namespace kiln::cache
