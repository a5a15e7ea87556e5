// The process-wide cache from graph to executable. Keyed by the structural
// hash and the literal values, confirmed by structural equality, bounded with
// least-recently-used eviction. Concurrent misses on one graph compile once.
#pragma once

#include <cstdint>
#include <memory>

#include "kiln/jit.h"
#include "runtime/executable.h"

namespace kiln::cache {

struct GraphLookup {
  std::shared_ptr<const runtime::Executable> executable;
  bool compiled = false;  // this call compiled it (not found)
  double compile_seconds = 0;
  uint64_t key = 0;
  // Loaded from the persistent cache instead: how long loading took, and
  // how long compiling had taken in the process that saved it.
  bool loaded = false;
  double load_seconds = 0;
  double saved_compile_seconds = 0;
};

/// Finds or compiles the executable for `graph`, whose key is `key`.
GraphLookup get_or_compile(const std::shared_ptr<const ir::Graph>& graph, uint64_t key);
/// Key of a graph in this cache (structure and literal values together).
uint64_t graph_key(const ir::Graph& graph);
uint64_t graph_key(const ir::Graph& graph, uint64_t structure_hash);

void set_graph_cache_limit(size_t limit);

}  // namespace kiln::cache
