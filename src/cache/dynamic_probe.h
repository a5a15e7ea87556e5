// Probing: a dynamic compile traces the function at other sizes of its
// symbols and fits every number that moves to a polynomial in them
// (transform/symbolic_fit.h). Probes go where the function is valid: inside
// each symbol's bounds, above the call's sizes and below them, further out
// when a nearer size fails. A size where the trace fails bounds the range the
// fit is valid on (a positional table of 128 rows: no probe past 128 counts,
// and the entry serves sizes up to the first failure). The probe also finds
// the C++ lines that read a dynamic size while tracing, for explanations.
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
  std::vector<SizeRange> ranges;           // per symbol: the sizes the fitted graph serves
  std::string failure;
  bool trace_failed = false;                   // no fit could be tried: the trace fails at every size near the call's
  bool no_room = false;                        // the call's sizes traced and fit, but too near an edge to check the fit
  std::vector<int> culprits;                   // the symbols to blame for a failure
  std::vector<Location> reads;                 // lines that read a dynamic size in C++
  std::vector<std::vector<int64_t>> failures;  // the sizes where the trace failed
};

/// Traces around the call's sizes through `trace_at` (which traces the
/// function with the leaves' shapes given) and fits the symbols; where a
/// size fails, finds the edge of the valid range by bisection. `failed`:
/// sizes an earlier probe of these symbols saw fail, which bound the range
/// too. An error at the call's own sizes is the user's and propagates.
ProbeResult probe(const detail::CallArguments& arguments, const SymbolAssignment& symbols,
                  const std::vector<std::vector<int64_t>>& failed,
                  detail::FunctionRef<ProbeTrace(const std::vector<Shape>&)> trace_at);

}  // namespace kiln::cache
