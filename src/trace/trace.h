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
  // The same, owned: arrays made during this trace keep it (made_during), and
  // asking whether that trace is nested in another walks these links after
  // the traces have ended.
  std::shared_ptr<TraceState> enclosing;
  std::thread::id thread;
  // Arrays read by the function without being arguments, in graph order.
  std::vector<Array> captured;
  // Lookup only (never iterated): which impl became which implicit input.
  std::unordered_map<const ArrayImpl*, ir::ValueId> capture_ids;

  /// The value id of `array` inside this trace: its own tracers directly;
  /// concrete arrays and tracers of enclosing traces become implicit inputs
  /// (captures), except arrays made from host data during this trace or one
  /// nested in it, which are constants: implicit inputs marked as such, their
  /// contents part of the graph's key.
  ir::ValueId value_of(const Array& array, const char* operation, Location use);
  /// Appends a node whose type is already inferred and returns the tracer
  /// for its result.
  Array record(ir::Node node, const std::shared_ptr<TraceState>& owner);
  /// Whether `context` is this trace or one nested in it.
  bool made_within(const TraceContext* context) const;
};

/// An active trace on this thread (traces nest). Operations on its
/// placeholders are recorded; concrete arrays they meet become implicit inputs.
class TraceSession {
 public:
  TraceSession(std::string name, Location where);
  ~TraceSession();
  TraceSession(const TraceSession&) = delete;
  TraceSession& operator=(const TraceSession&) = delete;

  /// A placeholder with the abstract value (dtype, shape, weak flag) of `example`.
  Array argument(const Array& example);
  /// Traces at other sizes: the k-th placeholder made takes shapes[k]
  /// instead of its example's shape (same rank), and C++ reads of the
  /// tracers' shapes are recorded.
  void trace_at_shapes(std::vector<Shape> shapes);
  /// The recorded shape reads: (the shape read, the line that read it).
  std::vector<std::pair<Shape, Location>> shape_reads() const;
  /// Ends the trace and returns its graph with `outputs` as results.
  Graph finish(const std::vector<Array>& outputs);
  /// The arrays lifted to implicit inputs, in the graph's order.
  std::vector<Array> captured() const;

 private:
  std::shared_ptr<TraceState> state_;
  std::vector<Shape> argument_shapes_;
};

/// The innermost active trace on this thread, or null.
TraceState* current_trace();
const std::shared_ptr<TraceState>& current_trace_shared();

}  // namespace kiln::detail
