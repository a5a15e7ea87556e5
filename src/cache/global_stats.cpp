// Process-wide cache totals and limits (see the header and <kiln/jit.h>).
#include "cache/global_stats.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "backend/llvm/kernel_cache.h"
#include "cache/graph_cache.h"

namespace kiln {

namespace {

struct GlobalStats {
  std::atomic<int64_t> calls{0}, hits{0}, misses{0}, traces{0}, compiles{0}, persistent_hits{0},
      calls_before_optimized{0};
  std::atomic<double> compile_seconds{0}, trace_seconds{0}, load_seconds{0}, saved_compile_seconds{0};
};

struct GlobalState {
  std::mutex mutex;  // guards limits
  GlobalStats stats;
  CacheLimits limits;
};

// Never destroyed: kiln's compile thread may report a compile while the process exits.
GlobalState& global() {
  static GlobalState& state = *new GlobalState;
  return state;
}

template <class T>
void add(std::atomic<T>& total, T delta) {
  if (delta != T{}) total.fetch_add(delta, std::memory_order_relaxed);
}

}  // namespace

void cache::add_global(const CacheStats& delta) {
  GlobalStats& g = global().stats;
  add(g.calls, delta.calls);
  add(g.hits, delta.hits);
  add(g.misses, delta.misses);
  add(g.traces, delta.traces);
  add(g.compiles, delta.compiles);
  add(g.persistent_hits, delta.persistent_hits);
  add(g.compile_seconds, delta.compile_seconds);
  add(g.trace_seconds, delta.trace_seconds);
  add(g.load_seconds, delta.load_seconds);
  add(g.saved_compile_seconds, delta.saved_compile_seconds);
  add(g.calls_before_optimized, delta.calls_before_optimized);
}

namespace {
// Calls and hits, counted per thread: every jitted call adds to both, and a
// shared atomic costs a locked add on a line every calling thread writes.
// The totals add the live threads' counts to those of threads that ended.
struct ThreadCounts {
  std::atomic<int64_t> calls{0}, hits{0};
};

struct CountRegistry {
  std::mutex mutex;
  std::vector<const ThreadCounts*> live;
};

CountRegistry& count_registry() {
  static CountRegistry& registry = *new CountRegistry;  // threads may end after static destruction began
  return registry;
}

thread_local bool thread_counts_gone = false;  // trivially destructible: readable during thread exit
struct ThreadCountsOwner {
  ThreadCounts counts;
  ThreadCountsOwner() {
    std::lock_guard lock(count_registry().mutex);
    count_registry().live.push_back(&counts);
  }
  ~ThreadCountsOwner() {
    std::lock_guard lock(count_registry().mutex);
    auto& live = count_registry().live;
    live.erase(std::find(live.begin(), live.end(), &counts));
    add(global().stats.calls, counts.calls.load(std::memory_order_relaxed));
    add(global().stats.hits, counts.hits.load(std::memory_order_relaxed));
    thread_counts_gone = true;
  }
};
thread_local ThreadCountsOwner thread_counts;

// Only this thread writes its counts: a relaxed load and store, no locked add.
void bump(std::atomic<int64_t>& count) {
  count.store(count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}
}  // namespace

void cache::count_global_call() {
  if (thread_counts_gone) return add(global().stats.calls, int64_t{1});
  bump(thread_counts.counts.calls);
}

void cache::count_global_hit() {
  if (thread_counts_gone) return add(global().stats.hits, int64_t{1});
  bump(thread_counts.counts.hits);
}

void set_cache_limits(CacheLimits limits) {
  {
    std::lock_guard lock(global().mutex);
    global().limits = limits;
  }
  cache::set_graph_cache_limit(limits.graphs);
  llvm_backend::set_kernel_cache_limit(limits.kernels);
}

CacheLimits cache_limits() {
  std::lock_guard lock(global().mutex);
  return global().limits;
}

CacheStats global_cache_stats() {
  const GlobalStats& g = global().stats;
  int64_t calls = 0, hits = 0;
  {
    // Under the registry's lock: a thread that ends moves its counts to the
    // totals under it too, so none is counted twice or missed.
    std::lock_guard lock(count_registry().mutex);
    for (const ThreadCounts* counts : count_registry().live) {
      calls += counts->calls.load(std::memory_order_relaxed);
      hits += counts->hits.load(std::memory_order_relaxed);
    }
    calls += g.calls.load();
    hits += g.hits.load();
  }
  return CacheStats{calls,
                    hits,
                    g.misses.load(),
                    g.traces.load(),
                    g.compiles.load(),
                    g.persistent_hits.load(),
                    g.compile_seconds.load(),
                    g.trace_seconds.load(),
                    g.load_seconds.load(),
                    g.saved_compile_seconds.load(),
                    g.calls_before_optimized.load()};
}

void clear_graph_cache() {
  cache::set_graph_cache_limit(0);
  cache::set_graph_cache_limit(cache_limits().graphs);
}

}  // namespace kiln
