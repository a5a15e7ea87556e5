// Probing: a dynamic compile traces the function at other sizes of its
// symbols and fits every number that moves to a polynomial in them
// (transform/symbolic_fit.h). The probe also finds the C++ lines that read a
// dynamic size while tracing, for explanations.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cache/dynamic_dims.h"
#include "ir/graph.h"

namespace kiln::cache {

/// One trace at given argument shapes: its graph and the shape reads it recorded.
struct ProbeTrace {
  std::shared_ptr<const ir::Graph> graph;
  std::vector<std::pair<Shape, Location>> reads;  // (the shape read, the line that read it)
};

struct ProbeResult {
  std::shared_ptr<const ir::Graph> graph;  // the fitted symbolic graph; null when the fit failed
  std::string failure;
  bool trace_failed = false;    // a trace at other sizes raised (not a fit failure)
  std::vector<int> culprits;    // the symbols to blame for a failure
  std::vector<Location> reads;  // lines that read a dynamic size in C++
};

/// Traces at the probe points of `symbols` through `trace_at` (which traces
/// the function with the leaves' shapes given) and fits the symbols. An
/// error at the call's own sizes is the user's and propagates.
ProbeResult probe(const detail::CallArguments& arguments, const SymbolAssignment& symbols,
                  detail::FunctionRef<ProbeTrace(const std::vector<Shape>&)> trace_at);

}  // namespace kiln::cache
