// Automatic differentiation: value_and_grad, grad, vjp, jvp.
//
//   auto vg = kiln::value_and_grad(loss);            // d/d(first argument)
//   auto [value, grads] = vg(params, batch);          // grads has params' type
//   auto both = kiln::grad(loss, {0, 1});             // a tuple over all arguments;
//                                                     // slots not asked for hold empty arrays
//   auto [y, pullback] = kiln::vjp(fn, x);  auto [dx] = pullback(dy);
//   auto [y, dy] = kiln::jvp(fn, std::tuple{x}, std::tuple{dx});
//
// Derivatives are graph transformations: the function is traced, and its
// graph replayed with each primitive's derivative rule. Called outside a
// trace, value_and_grad and grad go through jit's caches (a function called in
// a loop compiles once); inside jit they become part of the enclosing graph.
// Captured arrays are constants of differentiation and stay implicit inputs.
// Integer and bool leaves carry no derivative; asking for one is an error.
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/jit.h"

namespace kiln {

/// Which arguments to differentiate with respect to.
class Argnums {
 public:
  Argnums() = default;
  Argnums(int index) : list_{index}, given_(true) {}
  Argnums(std::initializer_list<int> list) : list_(list), given_(true) {}
  bool given() const { return given_; }
  /// Whether argument `index` of `arity` is asked for; a negative entry
  /// counts from the end, as in JAX (-1 is the last argument).
  bool contains(size_t index, size_t arity) const {
    if (!given_) return index == 0;
    for (int i : list_)
      if ((i >= 0 ? static_cast<size_t>(i) : arity - static_cast<size_t>(-i)) == index) return true;
    return false;
  }
  const std::vector<int>& list() const { return list_; }

 private:
  std::vector<int> list_;
  bool given_ = false;
};

namespace detail {

/// A function traced on placeholders for every array leaf of its arguments.
struct TracedFunction {
  std::optional<Graph> graph;
  std::vector<Array> leaves;          // the real leaves, in order
  std::vector<size_t> leaf_argument;  // the argument each leaf belongs to
  std::vector<Array> captures;
};

struct ReplayState;

/// Replays the traced graph, seeds its first output (a floating scalar) with
/// 1, and returns the outputs and one cotangent per leaf: zeros where a wanted
/// leaf got none, empty where not wanted. Throws for a wanted integer leaf.
std::pair<std::vector<Array>, std::vector<Array>> differentiate(const TracedFunction& traced,
                                                                const std::vector<char>& wanted,
                                                                const std::string& name, Location where);
std::shared_ptr<ReplayState> replay_graph(const TracedFunction& traced, std::vector<Array>& outputs);
std::vector<Array> pull_back(const ReplayState& state, const std::vector<Array>& output_cotangents, Location where);
std::vector<Array> push_forward(const TracedFunction& traced, const std::vector<Array>& tangents,
                                std::vector<Array>& outputs, Location where);
/// Throws kiln::Error for argnums that are empty, repeated (also through a
/// negative alias) or out of range for `arity` arguments.
void check_argnums(const Argnums& argnums, size_t arity, const std::string& name, Location where);
[[noreturn]] void raise_aux_mismatch(const std::string& name, bool has_aux, Location where);
std::string location_text(Location where);

template <class T>
struct IsPair : std::false_type {};
template <class A, class B>
struct IsPair<std::pair<A, B>> : std::true_type {};

/// Traces `fn` for differentiation: `out` gets the graph, the captures and
/// each real leaf with the argument it belongs to. Returns fn's result (its
/// array leaves are dead tracers: a skeleton for fill_leaves).
template <class F, class... Args>
auto trace_for_derivative(const F& fn, const std::string& name, Location where, TracedFunction& out,
                          const Args&... args) {
  auto record = [&](const Array& leaf, size_t argument) {
    out.leaves.push_back(leaf);
    out.leaf_argument.push_back(argument);
  };
  auto [traced, result] = trace_function(name, where, fn, record, args...);
  out.graph = std::move(traced.graph);
  out.captures = std::move(traced.captured);
  return std::move(result);
}

/// The traceable form of value_and_grad / grad. `AllArguments`: gradients
/// for every argument in a tuple (argnums given) instead of the first alone.
template <class F, bool OnlyGrad, bool AllArguments>
struct GradFunction {
  F fn;
  Argnums argnums;
  bool has_aux = false;
  std::string name;
  Location where;
  static constexpr bool kiln_stateful = stateful_v<F>;

  template <class... Args>
  auto operator()(const Args&... args) const {
    static_assert(sizeof...(Args) > 0, "value_and_grad/grad need at least one argument to differentiate");
    TracedFunction traced;
    auto skeleton = trace_for_derivative(fn, name, where, traced, args...);
    using Result = decltype(skeleton);
    if (IsPair<Result>::value != has_aux) raise_aux_mismatch(name, has_aux, where);
    std::vector<char> wanted;
    check_argnums(argnums, sizeof...(Args), name, where);
    for (size_t argument : traced.leaf_argument) wanted.push_back(argnums.contains(argument, sizeof...(Args)));
    auto [outputs, cotangents] = differentiate(traced, wanted, name, where);
    size_t next = 0;
    Result value = fill_leaves(skeleton, outputs, next);
    next = 0;
    // Braced initialization runs left to right, matching the leaves' order.
    std::tuple<Args...> all{fill_leaves(args, cotangents, next)...};
    auto gradients = [&] {
      if constexpr (AllArguments) return all;
      else return std::get<0>(all);
    }();
    if constexpr (OnlyGrad) return gradients;
    else return std::pair<Result, decltype(gradients)>{std::move(value), std::move(gradients)};
  }
};

template <class F, bool OnlyGrad, bool AllArguments>
auto make_grad(F fn, Argnums argnums, bool has_aux, const char* kind, Location where) {
  std::string name = std::string(kind) + "(" + location_text(where) + ")";
  GradFunction<F, OnlyGrad, AllArguments> function{std::move(fn), std::move(argnums), has_aux, name, where};
  return jit(std::move(function), JitOptions{.name = name}, where);
}

}  // namespace detail

/// (value, gradient with respect to the first argument).
template <class F>
auto value_and_grad(F fn, Location where = Location::current()) {
  return detail::make_grad<F, false, false>(std::move(fn), Argnums(), false, "value_and_grad", where);
}
/// (value, tuple of gradients for every argument; those not in `argnums` hold empty arrays).
/// With `has_aux`, the function returns (loss, aux) and the value is that pair.
template <class F>
auto value_and_grad(F fn, Argnums argnums, bool has_aux = false, Location where = Location::current()) {
  return detail::make_grad<F, false, true>(std::move(fn), std::move(argnums), has_aux, "value_and_grad", where);
}
/// (value, gradient with respect to the first argument) of a function returning (loss, aux).
template <class F>
auto value_and_grad_with_aux(F fn, Location where = Location::current()) {
  return detail::make_grad<F, false, false>(std::move(fn), Argnums(), true, "value_and_grad", where);
}
/// Gradient with respect to the first argument.
template <class F>
auto grad(F fn, Location where = Location::current()) {
  return detail::make_grad<F, true, false>(std::move(fn), Argnums(), false, "grad", where);
}
/// Tuple of gradients for every argument; those not in `argnums` hold empty arrays.
template <class F>
auto grad(F fn, Argnums argnums, bool has_aux = false, Location where = Location::current()) {
  return detail::make_grad<F, true, true>(std::move(fn), std::move(argnums), has_aux, "grad", where);
}

namespace detail {
/// The value type of fn on traced arguments (as trace_arguments calls it).
template <class F, class... Args>
using ResultOf = std::remove_cvref_t<std::invoke_result_t<const F&, Args&...>>;

/// Maps a cotangent of the value (same tree) to a tuple of cotangents, one per argument.
template <class Result, class... Args>
struct Pullback {
  std::shared_ptr<ReplayState> state;
  std::tuple<Args...> primals;
  Location where;  // of the vjp call
  std::tuple<Args...> operator()(const Result& cotangent) const {
    std::vector<Array> cotangents = pull_back(*state, tree_leaves(cotangent), where);
    size_t index = 0;
    return std::apply([&](const auto&... p) { return std::tuple<Args...>{fill_leaves(p, cotangents, index)...}; },
                      primals);
  }
};
}  // namespace detail

/// The function's value and a pullback mapping an output cotangent (same
/// tree as the value) to a tuple of input cotangents (one per argument):
///   auto [y, pullback] = kiln::vjp(fn, x);
/// A class rather than a function so that the caller's line (a default
/// argument after the primals) names the traced graph; the deduction guide
/// below makes `kiln::vjp(fn, x)` read as a call.
template <class F, class... Args>
struct vjp : std::pair<detail::ResultOf<F, Args...>, detail::Pullback<detail::ResultOf<F, Args...>, Args...>> {
  vjp(const F& fn, const Args&... primals, Location where = Location::current()) {
    detail::TracedFunction traced;
    auto skeleton = detail::trace_for_derivative(fn, "vjp", where, traced, primals...);
    static_assert(std::is_same_v<decltype(skeleton), detail::ResultOf<F, Args...>>);
    std::vector<Array> outputs;
    std::shared_ptr<detail::ReplayState> state = detail::replay_graph(traced, outputs);
    size_t next = 0;
    this->first = detail::fill_leaves(skeleton, outputs, next);
    this->second = {std::move(state), std::tuple<Args...>(primals...), where};
  }
};
template <class F, class... Args>
vjp(const F&, const Args&...) -> vjp<F, Args...>;

/// Forward mode: (value, tangent of the value) for `tangents` of the
/// arguments (same trees as `primals`). An integer or bool primal has no
/// derivative: its tangent is an empty Array() (JAX's float0).
template <class F, class... Args>
auto jvp(const F& fn, const std::tuple<Args...>& primals, const std::tuple<Args...>& tangents,
         Location where = Location::current()) {
  detail::TracedFunction traced;
  auto skeleton = std::apply(
      [&](const auto&... p) { return detail::trace_for_derivative(fn, "jvp", where, traced, p...); }, primals);
  using Result = decltype(skeleton);
  std::vector<Array> tangent_leaves = tree_leaves(tangents);
  std::vector<Array> outputs;
  std::vector<Array> output_tangents = detail::push_forward(traced, tangent_leaves, outputs, where);
  size_t next = 0;
  Result value = detail::fill_leaves(skeleton, outputs, next);
  next = 0;
  Result tangent = detail::fill_leaves(skeleton, output_tangents, next);
  return std::pair<Result, Result>{std::move(value), std::move(tangent)};
}

}  // namespace kiln
