// Graph: the printable IR a function traces to (what `jit(...).lower(...)` and
// `make_graph` return). One SSA node per line, with its shape, dtype and the
// user's source line.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kiln/array.h"
#include "kiln/tree.h"

namespace kiln {

namespace ir {
class Graph;
}
namespace detail {
struct GraphAccess;
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
  friend struct detail::GraphAccess;
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
/// Receives each real array leaf and the index of the argument it belongs to.
template <class C>
concept LeafCallback = std::invocable<C&, const Array&, size_t>;

/// Calls `fn` inside `session` on placeholders for the array leaves of
/// `args` (in order) and returns its result, whose array leaves are tracers
/// of the session. `on_leaf` sees each real leaf just before its placeholder
/// is made, for callers that map placeholders back to the arrays and
/// arguments they stand for (autodiff).
template <class F, LeafCallback OnLeaf, class... Args>
auto trace_arguments(TraceSession& session, F&& fn, OnLeaf&& on_leaf, const Args&... args) {
  size_t argument = 0;
  auto placeholder = [&](const Array& leaf) {
    on_leaf(leaf, argument);
    return session.argument(leaf);
  };
  // Braced initialization runs left to right, so placeholders are numbered
  // in the order of the arguments' leaves.
  auto traced = [&]<size_t... I>(std::index_sequence<I...>) {
    return std::tuple<Args...>{(argument = I, TreeTraits<Args>::map_arrays(args, placeholder))...};
  }
  (std::index_sequence_for<Args...>());
  return std::apply(fn, traced);
}

/// `skeleton` with its array leaves replaced by values[next], values[next + 1], ...
/// (advancing `next`): rebuilds a traced result's tree from computed arrays.
template <class Tree>
Tree fill_leaves(const Tree& skeleton, const std::vector<Array>& values, size_t& next) {
  auto fill = [&](const Array&) { return values[next++]; };
  return TreeTraits<Tree>::map_arrays(skeleton, fill);
}

// Not constrained to trees: a non-tree argument must reach TreeTraits'
// readable static_assert rather than fail overload resolution.
template <class F, class... Args>
requires(!(LeafCallback<Args> || ...)) auto trace_arguments(TraceSession& session, F&& fn, const Args&... args) {
  return trace_arguments(
      session, fn, [](const Array&, size_t) {}, args...);
}
}  // namespace detail

/// Traces `fn` on placeholders shaped like `args` and returns its graph.
template <class F, Tree... Args>
Graph make_graph(const TraceName& name, F&& fn, const Args&... args) {
  detail::TraceSession session(name.name, name.where);
  return session.finish(tree_leaves(detail::trace_arguments(session, fn, args...)));
}

}  // namespace kiln
