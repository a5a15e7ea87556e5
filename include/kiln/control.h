// Control flow in traced code: loops and branches whose bodies are traced
// once into sub-graphs and run as real loops and branches — never unrolled,
// so a loop of a million steps is a graph of a few nodes. Carries, operands
// and results are trees (see <kiln/tree.h>). Outside a trace they run now,
// with the same semantics.
//
//   // Halve until below 1, counting the steps.
//   auto [x, steps] = kiln::while_loop(
//       [](const auto& c) { return c.first >= 1.0f; },
//       [](const auto& c) { return std::pair{c.first * 0.5f, c.second + 1}; },
//       std::pair{x0, kiln::zeros({}, kiln::i32)});
//   Array y = kiln::cond(x > 0, [](const Array& v) { return v; }, [](const Array& v) { return -v; }, x);
//   Array total = kiln::fori_loop(0, 10, [](const Array& i, const Array& acc) { return acc + i; }, zero);
//   auto [h, hs] = kiln::scan([](const Array& h, const Array& x) { return std::pair{tanh(h + x), h}; }, h0, xs);
//
// Arrays a body reads from outside (captured arrays, tracers of the
// enclosing function) become inputs of its sub-graph, never constants, and
// C++ numbers inside a body are literals like any other: the cache lifts the
// ones that change between calls and names their line.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kiln/graph.h"
#include "kiln/ops.h"

namespace kiln {

namespace detail {

/// What a tree looks like: its structure (containers, keys, static leaves)
/// as text, and its array leaves with their paths (`.first`, `[2]`).
struct TreeShape {
  std::string structure;
  std::vector<std::string> paths;
  std::vector<Array> leaves;
};

struct TreeShapeVisitor {
  TreeShape& shape;
  std::vector<std::string> path;
  std::string joined() const {
    std::string text;
    for (const std::string& segment : path) text += segment;
    return text.empty() ? "(the whole value)" : text;
  }
  void array(const Array& leaf) {
    shape.structure += "array;";
    shape.paths.push_back(joined());
    shape.leaves.push_back(leaf);
  }
  void static_leaf(uint64_t, const std::string& text) { shape.structure += "static " + text + ";"; }
  void key(uint64_t, const std::string& name) { shape.structure += "key " + name + ";"; }
  void node(std::string_view kind, size_t size) {
    shape.structure += std::string(kind) + "(" + std::to_string(size) + ");";
  }
  void enter(const std::string& segment) { path.push_back(segment); }
  void leave() { path.pop_back(); }
};

template <class T>
TreeShape tree_shape(const T& tree) {
  TreeShape shape;
  TreeShapeVisitor visitor{shape, {}};
  TreeTraits<std::remove_cvref_t<T>>::visit(tree, visitor);
  return shape;
}

/// Raises kiln::Error naming the first difference (structure, or the path of
/// a leaf whose dtype, shape or weak type differs) between what a body
/// returned and what it had to return.
void check_same_tree(const char* operation, const TreeShape& expected, const std::string& expected_what,
                     const TreeShape& got, const std::string& got_what, Location where);
/// A loop condition's or branch selector's value: one 0-d bool or integer.
void check_predicate(const char* operation, const TreeShape& value, const std::string& what, Location where);
/// The branch index, i32 and in [0, branches) (a bool selects 0 or 1; an
/// integer is clamped, as in JAX).
Array branch_index(const char* operation, const Array& index, size_t branches, Location where);
/// cond's predicate as a branch index: 1 where it is true (any nonzero integer), else 0.
Array predicate_index(const Array& predicate, Location where);
/// The length of a scan over `xs` (every leaf's leading extent, which must agree with `length` if given).
int64_t scan_length(const TreeShape& xs, std::optional<int64_t> length, Location where);
/// A placeholder of the type of one row of `x` (its leading axis dropped), for tracing a body.
Array row_placeholder(const Array& x);
/// fori_loop's traced bounds as 0-d integers of one dtype.
std::pair<Array, Array> loop_bounds(const Array& lo, const Array& hi, Location where);

enum class ControlKind : uint8_t { while_loop, cond, scan };
/// Builds the control node from the traced bodies: recorded in the active
/// trace, or run now. `leading`: the carries (while_loop), the index and the
/// operands (cond), the carries and the scanned arrays (scan). Returns every result.
std::vector<Array> control_flow(ControlKind kind, const std::vector<Array>& leading, std::vector<TracedGraph> bodies,
                                std::vector<int64_t> ints, Location where);

/// Traces a loop body or branch into a sub-graph appended to `bodies`;
/// returns its result (a skeleton, as trace_function's).
template <class F, class... Args>
auto trace_body(const std::string& name, Location where, std::vector<TracedGraph>& bodies, const F& fn,
                const Args&... examples) {
  auto [traced, result] = trace_function(name, where, fn, examples...);
  bodies.push_back(std::move(traced));
  return std::move(result);
}

/// An array argument and the caller's line (a default argument of the
/// implicit conversion, so calls keep their natural form).
struct Located {
  Located(const Array& value, Location where = Location::current()) : value(value), where(where) {}
  Array value;
  Location where;
};

template <class Carry, class CondFn, class BodyFn>
Carry while_loop_named(const char* operation, const CondFn& cond_fn, const BodyFn& body_fn, const Carry& init,
                       Location where) {
  std::vector<TracedGraph> bodies;  // the condition, then the body
  auto predicate = trace_body(std::string(operation) + " condition", where, bodies, cond_fn, init);
  check_predicate(operation, tree_shape(predicate), "the condition's result", where);
  auto result = trace_body(std::string(operation) + " body", where, bodies, body_fn, init);
  TreeShape carry = tree_shape(init);
  check_same_tree(operation, carry, "the initial carry", tree_shape(result), "the body's result", where);
  std::vector<Array> results = control_flow(ControlKind::while_loop, carry.leaves, std::move(bodies), {}, where);
  size_t next = 0;
  return fill_leaves(init, results, next);
}

template <class Fn, class Carry, class Xs>
auto scan_named(const char* operation, const Fn& fn, const Carry& init, const Xs& xs, std::optional<int64_t> length,
                bool reverse, Location where) {
  TreeShape scanned = tree_shape(xs);
  int64_t steps = scan_length(scanned, length, where);
  auto row = [](const Array& x) { return row_placeholder(x); };
  Xs rows = TreeTraits<Xs>::map_arrays(xs, row);
  std::vector<TracedGraph> bodies;
  auto step = [&fn](const Carry& carry, const Xs& x) {
    auto [next_carry, y] = fn(carry, x);
    return std::pair<Carry, decltype(y)>{std::move(next_carry), std::move(y)};
  };
  auto result = trace_body(std::string(operation) + " body", where, bodies, step, init, rows);
  TreeShape carry = tree_shape(init);
  check_same_tree(operation, carry, "the initial carry", tree_shape(result.first), "the carry the body returns", where);
  std::vector<Array> leading = carry.leaves;
  leading.insert(leading.end(), scanned.leaves.begin(), scanned.leaves.end());
  std::vector<Array> results = control_flow(ControlKind::scan, leading, std::move(bodies),
                                            {static_cast<int64_t>(carry.leaves.size()), steps, reverse ? 1 : 0}, where);
  size_t next = 0;
  Carry final_carry = fill_leaves(init, results, next);
  auto stacked = fill_leaves(result.second, results, next);
  return std::pair<Carry, decltype(stacked)>{std::move(final_carry), std::move(stacked)};
}

// `index` is the i32 branch index (branch_index, predicate_index).
template <class Results, class... Operands>
Results cond_from_bodies(const char* operation, const Array& index, std::vector<TracedGraph> bodies,
                         const std::vector<Results>& results, const std::vector<std::string>& names, Location where,
                         const Operands&... operands) {
  TreeShape first = tree_shape(results[0]);
  for (size_t b = 1; b < results.size(); ++b)
    check_same_tree(operation, first, names[0], tree_shape(results[b]), names[b], where);
  std::vector<Array> leading{index};
  (
      [&] {
        for (const Array& leaf : tree_leaves(operands)) leading.push_back(leaf);
      }(),
      ...);
  std::vector<Array> values = control_flow(ControlKind::cond, leading, std::move(bodies), {}, where);
  size_t next = 0;
  return fill_leaves(results[0], values, next);
}

}  // namespace detail

/// Runs `body_fn` on the carry while `cond_fn` of it is true (a 0-d bool or
/// integer array) and returns the last carry, which keeps the initial
/// carry's structure, dtypes and shapes. Forward-mode derivatives only: for
/// reverse mode use fori_loop with static bounds or scan.
template <class Carry, class CondFn, class BodyFn>
Carry while_loop(const CondFn& cond_fn, const BodyFn& body_fn, const Carry& init,
                 Location where = Location::current()) {
  return detail::while_loop_named("while_loop", cond_fn, body_fn, init, where);
}

/// true_fn(operands...) where `predicate` (a 0-d bool or integer array) is
/// true, else false_fn(operands...); both are traced and must return the same
/// structure, dtypes and shapes.
template <class TrueFn, class FalseFn, class... Operands>
auto cond(const detail::Located& predicate, const TrueFn& true_fn, const FalseFn& false_fn,
          const Operands&... operands) {
  std::vector<detail::TracedGraph> bodies;  // the false branch, then the true one
  using Result = std::remove_cvref_t<std::invoke_result_t<const FalseFn&, const Operands&...>>;
  std::vector<Result> results;
  results.push_back(detail::trace_body("cond false branch", predicate.where, bodies, false_fn, operands...));
  results.push_back(detail::trace_body("cond true branch", predicate.where, bodies, true_fn, operands...));
  Array index = detail::predicate_index(predicate.value, predicate.where);
  return detail::cond_from_bodies<Result>("cond", index, std::move(bodies), results,
                                          {"the false branch's result", "the true branch's result"}, predicate.where,
                                          operands...);
}

/// branches[index](operands...), the index (a 0-d integer array) clamped
/// into range as in JAX. `branches` is a std::tuple of callables (they may
/// differ in type) or a std::vector of one callable type; every branch must
/// return the same structure, dtypes and shapes.
template <class... Branches, class... Operands>
auto switch_(const detail::Located& index, const std::tuple<Branches...>& branches, const Operands&... operands) {
  constexpr size_t count = sizeof...(Branches);
  static_assert(count > 0, "kiln::switch_ needs at least one branch");
  using First = std::tuple_element_t<0, std::tuple<Branches...>>;
  using Result = std::remove_cvref_t<std::invoke_result_t<const First&, const Operands&...>>;
  std::vector<detail::TracedGraph> bodies;
  std::vector<Result> results;
  std::vector<std::string> names;
  [&]<size_t... B>(std::index_sequence<B...>) {
    ((results.push_back(detail::trace_body("switch_ branch " + std::to_string(B), index.where, bodies,
                                           std::get<B>(branches), operands...)),
      names.push_back("branch " + std::to_string(B) + "'s result")),
     ...);
  }
  (std::make_index_sequence<count>());
  Array chosen = detail::branch_index("switch_", index.value, bodies.size(), index.where);
  return detail::cond_from_bodies<Result>("switch_", chosen, std::move(bodies), results, names, index.where,
                                          operands...);
}

template <class Branch, class... Operands>
auto switch_(const detail::Located& index, const std::vector<Branch>& branches, const Operands&... operands) {
  using Result = std::remove_cvref_t<std::invoke_result_t<const Branch&, const Operands&...>>;
  if (branches.empty()) detail::branch_index("switch_", index.value, 0, index.where);
  std::vector<detail::TracedGraph> bodies;
  std::vector<Result> results;
  std::vector<std::string> names;
  for (size_t b = 0; b < branches.size(); ++b) {
    results.push_back(
        detail::trace_body("switch_ branch " + std::to_string(b), index.where, bodies, branches[b], operands...));
    names.push_back("branch " + std::to_string(b) + "'s result");
  }
  Array chosen = detail::branch_index("switch_", index.value, bodies.size(), index.where);
  return detail::cond_from_bodies<Result>("switch_", chosen, std::move(bodies), results, names, index.where,
                                          operands...);
}

/// Loops `fn(carry, x) -> (carry, y)` over the leading axis of every leaf of
/// `xs` (reversed with `reverse`) and returns (final carry, the ys stacked
/// along a new leading axis). Without scanned arrays pass `kiln::no_xs` and a
/// `length`.
template <class Fn, class Carry, class Xs>
auto scan(const Fn& fn, const Carry& init, const Xs& xs, std::optional<int64_t> length = std::nullopt,
          bool reverse = false, Location where = Location::current()) {
  return detail::scan_named("scan", fn, init, xs, length, reverse, where);
}

/// The `xs` of a scan that scans no array.
inline const std::tuple<> no_xs{};

/// body(i, carry) for i = lo, ..., hi - 1. Bounds known when tracing (C++
/// integers) make a scan with a static trip count (differentiable in both
/// modes); traced bounds (0-d integer arrays) make a while loop.
template <class Body, class Carry>
Carry fori_loop(int64_t lo, int64_t hi, const Body& body, const Carry& init, Location where = Location::current()) {
  using State = std::pair<Array, Carry>;
  auto step = [&body](const State& state, const std::tuple<>&) {
    return std::pair<State, std::tuple<>>{State{state.first + 1, body(state.first, state.second)}, {}};
  };
  State start{full({}, lo, DType::i32, where), init};
  auto result = detail::scan_named("fori_loop", step, start, no_xs, std::max<int64_t>(hi - lo, 0), false, where);
  return result.first.second;
}

template <class Body, class Carry>
Carry fori_loop(const Array& lo, const Array& hi, const Body& body, const Carry& init,
                Location where = Location::current()) {
  using State = std::pair<Array, Carry>;
  auto [first, last] = detail::loop_bounds(lo, hi, where);
  auto more = [last = last](const State& state) { return state.first < last; };
  auto step = [&body](const State& state) { return State{state.first + 1, body(state.first, state.second)}; };
  return detail::while_loop_named("fori_loop", more, step, State{first, init}, where).second;
}

}  // namespace kiln
