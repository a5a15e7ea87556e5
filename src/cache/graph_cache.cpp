// Process-wide graph -> executable cache (see the header).
#include "cache/graph_cache.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <unordered_set>

#include "backend/interp/op_by_op.h"
#include "cache/backend_choice.h"
#include "cache/persistent_cache.h"
#include "cache/tiered_compile.h"
#include "core/lru_map.h"
#include "runtime/compile_profile.h"
#include "runtime/thread_pool.h"
#include "transform/verify.h"

namespace kiln::cache {

namespace {

// The optimized executable of a tiered graph, on kiln's compile thread.
void compile_optimized(const TieredExecutable& tiered, const std::shared_ptr<const ir::Graph>& graph,
                       PersistentCache& disk, const std::string& disk_key, const runtime::Backend& backend) {
  runtime::CompileProfile profile(/*abandonable=*/true);
  runtime::CompileProfileScope scope(&profile);
  auto start = std::chrono::steady_clock::now();
  TierOutcome outcome;
  std::shared_ptr<const runtime::Executable> optimized;
  // With fewer than four cores the compile would take one that the first
  // call runs on: it starts once that call has ended, so the first result
  // comes as fast as op by op gives it (the MLP step's first call, eager
  // kernels compiled, 2 cores: 20.6 -> 16.6 ms). A first call longer than
  // the head start overlaps the compile as before.
  constexpr std::chrono::milliseconds first_run_head_start{100};
  if (runtime::thread_count() < 4) tiered.wait_for_first_run(first_run_head_start);
  try {
    background_compile_fault(*graph);
    optimized = backend.compile(graph);
    outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    outcome.phases = profile.snapshot();
    outcome.ready = true;
    runtime::check_not_abandoned();
    if (!disk_key.empty()) disk.store(*graph, disk_key, backend, *optimized, outcome.seconds);
  } catch (const runtime::CompileAbandoned&) {
    return;  // the process is exiting: no one waits for this executable
  } catch (const std::exception& error) {
    if (!optimized) {
      outcome.ready = false;
      outcome.error = error.what();
      outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  }
  tiered.finish(std::move(optimized), outcome);
}

// The first tier's kernels compiled; false if that failed (the graph then
// compiles on the calling thread, which reports the failure as usual).
bool first_tier_ready(const ir::Graph& graph, const runtime::Backend& backend) {
  try {
    compile_first_tier_kernels(graph, backend);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

class GraphCache {
 public:
  GraphLookup get_or_compile(const std::shared_ptr<const ir::Graph>& graph, uint64_t key, CompileMode mode,
                             const std::function<void()>& starting, const runtime::Backend* device) {
    CachedGraph cached{key, graph, device};
    std::unique_lock lock(mutex_);
    for (;;) {
      // A graph's first tier runs eager operations, which must find compiled
      // code here, never a first tier again (a jitted x * 2 is eager's x * 2).
      auto* executable = executables_.find(cached);
      if (executable && (mode != CompileMode::Sync || !(*executable)->interim())) return {*executable, false, 0, key};
      if (executable) break;
      if (!compiling_.contains(cached)) break;
      // Another thread is compiling this graph: wait for it.
      compiled_.wait(lock);
    }
    compiling_.insert(cached);
    GraphLookup lookup{nullptr, true, 0, key};
    lookup.held_for_device = device_holding(cached);
    backends_seen_.insert(device);
    lock.unlock();

    std::shared_ptr<const runtime::Executable> executable;
    auto start = std::chrono::steady_clock::now();
    try {
      // Traces, derivative replays and lifting all end here.
      transform::verify_after("tracing", *graph);
      const runtime::Backend& backend = device ? *device : default_backend();
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
      if (!executable && starting) starting();
      if (!executable && mode == CompileMode::Background && !device && native_backend_chosen() &&
          interp::op_by_op_exact(*graph) && backend.matches_op_by_op(*graph) && first_tier_ready(*graph, backend)) {
        lookup.tiered = std::make_shared<const TieredExecutable>(interp::op_by_op_executable(graph));
        executable = lookup.tiered;
        backend.prepare_background_compiles();
        compile_in_background([tiered = lookup.tiered, graph, disk, disk_key, &backend] {
          compile_optimized(*tiered, graph, *disk, disk_key, backend);
        });
      }
      if (!executable) {
        runtime::CompileProfile profile;
        {
          runtime::CompileProfileScope scope(&profile);
          executable = backend.compile(graph);
        }
        lookup.phases = profile.snapshot();
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

  std::shared_ptr<const runtime::Executable> find_compiled(const std::shared_ptr<const ir::Graph>& graph,
                                                           uint64_t key) {
    CachedGraph cached{key, graph};
    {
      std::lock_guard lock(mutex_);
      auto* executable = executables_.find(cached);
      if (executable && !(*executable)->interim()) return *executable;
      if (executable || compiling_.contains(cached)) return nullptr;
    }
    const runtime::Backend& backend = default_backend();
    std::shared_ptr<PersistentCache> disk = persistent_cache();
    if (!disk->usable()) return nullptr;
    std::optional<PersistentCache::Loaded> loaded = disk->load(graph, persistent_key(*graph, backend), backend);
    if (!loaded) return nullptr;
    std::lock_guard lock(mutex_);
    if (auto* executable = executables_.find(cached); executable && !(*executable)->interim()) return *executable;
    executables_.insert(cached, loaded->executable);
    return loaded->executable;
  }

  void set_limit(size_t limit) {
    std::lock_guard lock(mutex_);
    executables_.set_limit(limit);
  }

 private:
  // The device of another backend that has `cached`'s graph compiled; empty
  // when none has. Called with the mutex held.
  std::string device_holding(const CachedGraph& cached) const {
    for (const runtime::Backend* backend : backends_seen_) {
      if (backend == cached.backend || !executables_.contains(CachedGraph{cached.key, cached.graph, backend})) continue;
      return backend ? std::string(backend->name()) : "cpu";
    }
    return {};
  }

  std::mutex mutex_;
  std::condition_variable compiled_;
  detail::LruMap<CachedGraph, std::shared_ptr<const runtime::Executable>, CachedGraphHash, SameGraph> executables_{
      CacheLimits{}.graphs};
  std::unordered_set<CachedGraph, CachedGraphHash, SameGraph> compiling_;  // graphs some thread is compiling
  std::set<const runtime::Backend*> backends_seen_;                        // null: the default backend
};

// Never destroyed: kiln's compile thread may use it while the process exits.
GraphCache& instance() {
  static GraphCache& cache = *new GraphCache;
  return cache;
}

}  // namespace

uint64_t graph_key(const ir::Graph& graph, uint64_t structure_hash) {
  return structure_hash * 0x9e3779b97f4a7c15ull ^ graph.literal_hash();
}
uint64_t graph_key(const ir::Graph& graph) { return graph_key(graph, graph.structure_hash()); }

GraphLookup get_or_compile(const std::shared_ptr<const ir::Graph>& graph, uint64_t key, CompileMode mode,
                           const std::function<void()>& starting, const runtime::Backend* backend) {
  // What the graph cache holds serves for good: never quick code.
  runtime::CodeQualityScope optimized(runtime::CodeQuality::optimized);
  return instance().get_or_compile(graph, key, mode, starting, backend);
}
std::shared_ptr<const runtime::Executable> find_compiled(const std::shared_ptr<const ir::Graph>& graph, uint64_t key) {
  return instance().find_compiled(graph, key);
}
void set_graph_cache_limit(size_t limit) { instance().set_limit(limit); }

}  // namespace kiln::cache
