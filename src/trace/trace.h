// Trace contexts: the thread-local stack of active traces, tracer creation,
// lifting of captured arrays, and leak detection.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace kiln::detail {

/// A trace being recorded. Its name, start and liveness (TraceContext) are
/// what tracers carry for error messages; the graph is what it records.
struct TraceState : TraceContext {
  ir::Graph graph;
  TraceState* parent = nullptr;  // the trace that was active when this one began
  std::thread::id thread;
  // Arrays read by the function without being arguments, in graph order.
  std::vector<Array> captured;
  // Lookup only (never iterated): which impl became which implicit input.
  std::unordered_map<const ArrayImpl*, ir::ValueId> capture_ids;

  /// The value id of `array` inside this trace: its own tracers directly;
  /// concrete arrays and tracers of enclosing traces become implicit inputs.
  ir::ValueId value_of(const Array& array, const char* operation, Location use);
  /// Appends a node whose type is already inferred and returns the tracer
  /// for its result.
  Array record(ir::Node node, const std::shared_ptr<TraceState>& owner);
};

/// The innermost active trace on this thread, or null.
TraceState* current_trace();
const std::shared_ptr<TraceState>& current_trace_shared();

}  // namespace kiln::detail
