// Graph: the printable IR a function traces to (what `jit(...).lower(...)` and
// `make_graph` return). One SSA node per line, with its shape, dtype and the
// user's source line.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "kiln/array.h"
#include "kiln/tree.h"

namespace kiln {

namespace ir {
class Graph;
}

class Graph {
 public:
  explicit Graph(std::shared_ptr<const ir::Graph> graph) : graph_(std::move(graph)) {}

  std::string to_string() const;
  size_t num_nodes() const;
  size_t num_arguments() const;
  /// Implicit inputs: arrays the function read without receiving them.
  size_t num_captures() const;
  /// Hash of everything but the values of literals (C++ numbers).
  uint64_t structure_hash() const;
  /// Hash of the literal values alone.
  uint64_t literal_hash() const;
  /// Same structure and same literal values.
  bool operator==(const Graph& other) const;

  const ir::Graph& ir() const { return *graph_; }
  const std::shared_ptr<const ir::Graph>& shared() const { return graph_; }

 private:
  std::shared_ptr<const ir::Graph> graph_;
};

std::ostream& operator<<(std::ostream& out, const Graph& graph);

namespace detail {
struct TraceState;

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
  /// Ends the trace and returns its graph with `outputs` as results.
  Graph finish(const std::vector<Array>& outputs);
  /// The arrays lifted to implicit inputs, in the graph's order.
  std::vector<Array> captured() const;

 private:
  std::shared_ptr<TraceState> state_;
};

/// Runs a graph with the reference interpreter.
std::vector<Array> interpret(const Graph& graph, const std::vector<Array>& arguments,
                             const std::vector<Array>& captures);
}  // namespace detail

/// A function name for printed IR, remembering where the user wrote it.
struct TraceName {
  TraceName(const char* name, Location where = Location::current()) : name(name), where(where) {}
  TraceName(std::string name, Location where = Location::current()) : name(std::move(name)), where(where) {}
  std::string name;
  Location where;
};

namespace detail {
/// Calls `fn` inside `session` on placeholders shaped like `args`; returns
/// the leaves of its result, for session.finish.
template <class F, Tree... Args>
std::vector<Array> trace_call(TraceSession& session, F&& fn, const Args&... args) {
  auto placeholder = [&](const Array& a) { return session.argument(a); };
  auto result = [&]<size_t... I>(std::index_sequence<I...>) {
    std::tuple<Args...> traced{TreeTraits<Args>::map_arrays(args, placeholder)...};
    return fn(std::get<I>(traced)...);
  }(std::index_sequence_for<Args...>());
  return tree_leaves(result);
}
}  // namespace detail

/// Traces `fn` on placeholders shaped like `args` and returns its graph.
template <class F, Tree... Args>
Graph make_graph(const TraceName& name, F&& fn, const Args&... args) {
  detail::TraceSession session(name.name, name.where);
  return session.finish(detail::trace_call(session, fn, args...));
}

}  // namespace kiln
