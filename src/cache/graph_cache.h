// The process-wide cache from graph to executable. Keyed by the structural
// hash and the literal values, confirmed by structural equality, bounded with
// least-recently-used eviction. Concurrent misses on one graph compile once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "ir/graph.h"
#include "kiln/jit.h"
#include "runtime/compile_profile.h"
#include "runtime/executable.h"

namespace kiln::cache {

class TieredExecutable;

/// A graph as a cache knows it: by its key, confirmed by structure and
/// literal values, and by its backend (the same graph on two devices is two
/// entries).
struct CachedGraph {
  uint64_t key = 0;
  std::shared_ptr<const ir::Graph> graph;
  const runtime::Backend* backend = nullptr;  // null: the default backend
};
struct CachedGraphHash {
  size_t operator()(const CachedGraph& cached) const {
    return static_cast<size_t>(cached.key ^ std::hash<const void*>()(cached.backend));
  }
};
struct SameGraph {
  bool operator()(const CachedGraph& a, const CachedGraph& b) const {
    return a.key == b.key && a.backend == b.backend && a.graph->structurally_equal(*b.graph) &&
           a.graph->same_literals(*b.graph);
  }
};

struct GraphLookup {
  std::shared_ptr<const runtime::Executable> executable;
  bool compiled = false;  // this call compiled it (not found), or started its background compile
  double compile_seconds = 0;
  uint64_t key = 0;
  // Loaded from the persistent cache instead: how long loading took, and
  // how long compiling had taken in the process that saved it.
  bool loaded = false;
  double load_seconds = 0;
  double saved_compile_seconds = 0;
  runtime::CompilePhases phases;  // where compile_seconds went
  // Compiling in the background: the executable, whose outcome says when it is ready.
  std::shared_ptr<const TieredExecutable> tiered;
  // When this call compiles the graph while the cache holds it compiled for
  // another device: that device ("cpu", "cuda"), which explanations name.
  std::string held_for_device;
};

/// Finds or compiles the executable for `graph`, whose key is `key`. In
/// background mode a graph that neither memory nor the persistent cache
/// holds gets a TieredExecutable (tiered_compile.h) whose optimized code
/// compiles on kiln's compile thread; where op by op would not give the same
/// bits (op_by_op_exact), it compiles on this thread. `starting` is called
/// before a compile begins. `backend`: another device's (backend_choice.h);
/// null for the default one.
GraphLookup get_or_compile(const std::shared_ptr<const ir::Graph>& graph, uint64_t key, CompileMode mode,
                           const std::function<void()>& starting = {}, const runtime::Backend* backend = nullptr);
/// The executable for `graph` if memory or the persistent cache holds it
/// (a loaded one is kept in memory); null otherwise. Never compiles.
std::shared_ptr<const runtime::Executable> find_compiled(const std::shared_ptr<const ir::Graph>& graph, uint64_t key);
/// Key of a graph in this cache (structure and literal values together).
uint64_t graph_key(const ir::Graph& graph);
uint64_t graph_key(const ir::Graph& graph, uint64_t structure_hash);

void set_graph_cache_limit(size_t limit);

}  // namespace kiln::cache
