// Graph: the printable IR a function traces to (what `jit(...).lower(...)` and
// `make_graph` return). One SSA node per line, with its shape, dtype and the
// user's source line.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/array.h"
#include "kiln/tree.h"

namespace kiln {

// Internal to the library: the graph itself, and the library's way to it.
namespace ir {
class Graph;
}
namespace detail {
struct GraphAccess;
}

class Graph {
 public:
  std::string to_string() const;
  /// Graphviz DOT of the graph as kiln compiles it (simplified): a box per
  /// node with its primitive, type and source line, and each fused kernel a
  /// cluster (one box each in graphs above 150 nodes). `dot -Tsvg` draws it.
  std::string to_dot() const;
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

 private:
  friend struct detail::GraphAccess;
  explicit Graph(std::shared_ptr<const ir::Graph> graph) : graph_(std::move(graph)) {}

  std::shared_ptr<const ir::Graph> graph_;
};

std::ostream& operator<<(std::ostream& out, const Graph& graph);

/// A function name for printed IR, remembering where the user wrote it.
struct TraceName {
  TraceName(const char* name, Location where = Location::current()) : name(name), where(where) {}
  TraceName(std::string name, Location where = Location::current()) : name(std::move(name)), where(where) {}
  std::string name;
  Location where;
};

namespace detail {

/// A non-owning reference to a callable.
template <class Signature>
class FunctionRef;
template <class R, class... A>
class FunctionRef<R(A...)> {
 public:
  // Constrained so that copying a FunctionRef copies it rather than
  // wrapping a reference to the (possibly temporary) copy source.
  template <class F>
  requires(!std::is_same_v<std::remove_cv_t<F>, FunctionRef>) FunctionRef(F& fn)
      : object_(&fn),
        call_([](void* object, A... args) -> R { return (*static_cast<F*>(object))(std::forward<A>(args)...); }) {}
  R operator()(A... args) const { return call_(object_, std::forward<A>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, A...);
};

/// An active trace on this thread (traces nest): operations on its
/// placeholders are recorded; concrete arrays they meet become implicit
/// inputs. Internal to the library; the templates below reach it through
/// trace and trace_argument.
class TraceSession;

/// A placeholder of `session` with the abstract value (dtype, shape, weak flag) of `example`.
Array trace_argument(TraceSession& session, const Array& example);

/// A function traced into a graph, with the arrays it read without
/// receiving them (its implicit inputs, in the graph's order).
struct TracedGraph {
  Graph graph;
  std::vector<Array> captured;
};

/// Runs `record` inside a new trace named `name`: it makes placeholders with
/// trace_argument, calls the function on them and returns the graph's outputs.
TracedGraph trace(const std::string& name, Location where, FunctionRef<std::vector<Array>(TraceSession&)> record);

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
  auto map_argument = [&](const auto& argument, size_t index) {
    auto placeholder = [&](const Array& leaf) {
      on_leaf(leaf, index);
      return trace_argument(session, leaf);
    };
    return TreeTraits<std::remove_cvref_t<decltype(argument)>>::map_arrays(argument, placeholder);
  };
  // Braced initialization runs left to right, so placeholders are numbered
  // in the order of the arguments' leaves.
  auto traced = [&]<size_t... I>(std::index_sequence<I...>) { return std::tuple<Args...>{map_argument(args, I)...}; }
  (std::index_sequence_for<Args...>());
  return std::apply(fn, traced);
}

// Not constrained to trees: a non-tree argument must reach TreeTraits'
// readable static_assert rather than fail overload resolution.
template <class F, class... Args>
requires(!(LeafCallback<Args> || ...)) auto trace_arguments(TraceSession& session, F&& fn, const Args&... args) {
  return trace_arguments(
      session, fn, [](const Array&, size_t) {}, args...);
}

/// Traces `fn` on placeholders for the array leaves of `args` (as
/// trace_arguments does) in a trace named `name`, with every array leaf of
/// its result an output. Returns the traced graph and fn's result, whose
/// array leaves are tracers of the ended trace: a skeleton for fill_leaves.
template <class F, LeafCallback OnLeaf, class... Args>
auto trace_function(const std::string& name, Location where, F&& fn, OnLeaf&& on_leaf, const Args&... args) {
  using Result = decltype(trace_arguments(std::declval<TraceSession&>(), fn, on_leaf, args...));
  std::optional<Result> result;
  auto record = [&](TraceSession& session) {
    result.emplace(trace_arguments(session, fn, on_leaf, args...));
    return tree_leaves(*result);
  };
  TracedGraph traced = trace(name, where, record);
  return std::pair<TracedGraph, Result>{std::move(traced), std::move(*result)};
}

template <class F, class... Args>
requires(!(LeafCallback<Args> || ...)) auto trace_function(const std::string& name, Location where, F&& fn,
                                                           const Args&... args) {
  return trace_function(
      name, where, fn, [](const Array&, size_t) {}, args...);
}

/// `skeleton` with its array leaves replaced by values[next], values[next + 1], ...
/// (advancing `next`): rebuilds a traced result's tree from computed arrays.
template <class Tree>
Tree fill_leaves(const Tree& skeleton, const std::vector<Array>& values, size_t& next) {
  auto fill = [&](const Array&) { return values[next++]; };
  return TreeTraits<Tree>::map_arrays(skeleton, fill);
}

}  // namespace detail

/// Traces `fn` on placeholders shaped like `args` and returns its graph.
template <class F, Tree... Args>
Graph make_graph(const TraceName& name, F&& fn, const Args&... args) {
  return detail::trace_function(name.name, name.where, fn, args...).first.graph;
}

}  // namespace kiln
