// vmap: automatic batching, and the Jacobians built on it.
//
//   auto per_example = kiln::vmap(kiln::grad(loss), {std::nullopt, 0, 0});
//   auto grads = per_example(params, xs, ys);   // one gradient per row of xs
//   auto dots = kiln::vmap(kiln::vmap(dot), {0, std::nullopt});
//   auto columns = kiln::vmap(f, {1}, 1);       // batch along axis 1, results too
//   Array J = kiln::jacrev(f)(x);               // [*f(x).shape, *x.shape]
//
// The function is traced once for one lane (every batched array without its
// batch axis), and the graph replayed over the whole batch with each
// primitive's batching rule: a matmul by an unbatched matrix stays one
// matmul, loops and branches stay loops and branches (a while_loop whose lanes
// stop at different steps runs until the last one is done). vmap is a graph
// transformation like grad: it composes with grad, vjp, jvp, jit, control
// flow and itself in any order; outside a trace it goes through jit's caches.
// Captured arrays stay inputs, the same in every lane; a random key batched
// along with the arguments gives every lane its own stream (JAX's rule).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kiln/grad.h"
#include "kiln/ops.h"

namespace kiln {

/// Where the batch axis of one argument (or of the result) lies: one axis
/// (negative counts from the end) for every array leaf, std::nullopt for
/// none (the same value in every lane), or one entry per array leaf.
class BatchAxes {
 public:
  BatchAxes(int axis) : every_leaf_(axis) {}
  BatchAxes(std::nullopt_t) {}
  /// One axis (or std::nullopt) per array leaf, in the tree's leaf order.
  static BatchAxes per_leaf(std::vector<std::optional<int>> axes) {
    BatchAxes result(std::nullopt);
    result.per_leaf_ = std::move(axes);
    result.is_per_leaf_ = true;
    return result;
  }
  bool is_per_leaf() const { return is_per_leaf_; }
  const std::vector<std::optional<int>>& leaves() const { return per_leaf_; }
  /// The axis of leaf `k` (of a tree whose leaves per_leaf lists).
  std::optional<int> leaf(size_t k) const { return is_per_leaf_ ? per_leaf_[k] : every_leaf_; }

 private:
  std::optional<int> every_leaf_;
  std::vector<std::optional<int>> per_leaf_;
  bool is_per_leaf_ = false;
};

/// vmap's in_axes: one BatchAxes per argument ({0, std::nullopt}), or one
/// axis for every argument (the default: 0).
class InAxes {
 public:
  InAxes() : InAxes(0) {}
  InAxes(int axis) : every_argument_(axis) {}
  InAxes(std::initializer_list<BatchAxes> per_argument) : per_argument_(per_argument), given_(true) {}
  InAxes(std::vector<BatchAxes> per_argument) : per_argument_(std::move(per_argument)), given_(true) {}
  bool per_argument() const { return given_; }
  size_t size() const { return per_argument_.size(); }
  const BatchAxes& of(size_t argument) const { return given_ ? per_argument_[argument] : every_argument_; }

 private:
  BatchAxes every_argument_{0};
  std::vector<BatchAxes> per_argument_;
  bool given_ = false;
};

namespace detail {

/// Batches a function over the array leaves of its arguments
/// (`argument_leaves`: one list per argument): checks in_axes against them
/// and finds the batch size (throwing kiln::Error naming the argument, the
/// leaf and the sizes for every mismatch), traces `lane` on one placeholder
/// per leaf (one lane's abstract value), replays its graph over the whole
/// batch, and returns the lane's outputs batched, each batch axis where
/// out_axes says.
std::vector<Array> vmap_leaves(const std::vector<std::vector<Array>>& argument_leaves, const InAxes& in_axes,
                               const BatchAxes& out_axes, const std::string& name, Location where,
                               FunctionRef<std::vector<Array>(const std::vector<Array>& placeholders)> lane);

template <class F>
struct VmapFunction {
  F fn;
  InAxes in_axes;
  BatchAxes out_axes;
  std::string name;
  Location where;
  static constexpr bool kiln_stateful = stateful_v<F>;

  template <class... Args>
  auto operator()(const Args&... args) const {
    using Result = std::remove_cvref_t<std::invoke_result_t<const F&, Args&...>>;
    std::optional<Result> result;
    auto lane = [&](const std::vector<Array>& placeholders) {
      size_t next = 0;
      auto placeholder = [&](const Array&) { return placeholders[next++]; };
      // Braced initialization runs left to right, matching the leaves' order.
      std::tuple<Args...> lane_arguments{TreeTraits<Args>::map_arrays(args, placeholder)...};
      result.emplace(std::apply(fn, lane_arguments));
      // Empty arrays in the result (gradient slots not asked for) stay empty.
      std::vector<Array> outputs;
      for (const Array& leaf : tree_leaves(*result))
        if (leaf.defined()) outputs.push_back(leaf);
      return outputs;
    };
    std::vector<Array> outputs = vmap_leaves({tree_leaves(args)...}, in_axes, out_axes, name, where, lane);
    size_t next = 0;
    auto fill = [&](const Array& leaf) { return leaf.defined() ? outputs[next++] : Array(); };
    return TreeTraits<Result>::map_arrays(*result, fill);
  }
};

/// A square identity of `n` rows shaped [n, *shape] (n = the size of shape), in `dtype`.
Array basis(const Shape& shape, DType dtype, Location where);

/// jacrev/jacfwd of fn with respect to its first argument, an Array.
template <class F, bool Reverse>
struct JacobianFunction {
  F fn;
  Location where;
  static constexpr bool kiln_stateful = stateful_v<F>;

  template <class... Rest>
  Array operator()(const Array& x, const Rest&... rest) const {
    Shape x_shape = x.shape();
    if constexpr (Reverse) {
      auto [y, pullback] = kiln::vjp<F, Array, Rest...>(fn, x, rest..., where);
      Shape y_shape = y.shape();
      auto row = [pullback = pullback](const Array& cotangent) { return std::get<0>(pullback(cotangent)); };
      Array rows =
          VmapFunction<decltype(row)>{row, InAxes(0), BatchAxes(0), "jacrev", where}(basis(y_shape, y.dtype(), where));
      Shape shape = y_shape;
      shape.insert(shape.end(), x_shape.begin(), x_shape.end());
      return reshape(rows, shape, where);
    } else {
      auto zero = [&](const Array& leaf) { return zeros_like(leaf, where); };
      auto column = [&](const Array& tangent) {
        return kiln::jvp(fn, std::tuple<Array, Rest...>(x, rest...),
                         std::tuple<Array, Rest...>(tangent, tree_map(zero, rest)...), where)
            .second;
      };
      Array columns = VmapFunction<decltype(column)>{column, InAxes(0), BatchAxes(-1), "jacfwd",
                                                     where}(basis(x_shape, x.dtype(), where));
      Shape shape = columns.shape();
      shape.resize(shape.size() - 1);
      shape.insert(shape.end(), x_shape.begin(), x_shape.end());
      return reshape(columns, shape, where);
    }
  }
};

}  // namespace detail

/// Batches `fn` over the axes `in_axes` names (one per argument, or one for
/// all; std::nullopt for an argument the same in every lane); each result
/// gets its batch axis at `out_axes`.
template <class F>
auto vmap(F fn, InAxes in_axes = {}, BatchAxes out_axes = 0, Location where = Location::current()) {
  std::string name = "vmap(" + detail::location_text(where) + ")";
  detail::VmapFunction<F> function{std::move(fn), std::move(in_axes), std::move(out_axes), name, where};
  return jit(std::move(function), JitOptions{.name = name}, where);
}

/// The Jacobian of fn with respect to its first argument (an Array), shaped
/// [*fn(x).shape, *x.shape], by reverse mode: one vjp per output element,
/// batched. Best when fn has fewer outputs than inputs.
template <class F>
auto jacrev(F fn, Location where = Location::current()) {
  return jit(detail::JacobianFunction<F, true>{std::move(fn), where},
             JitOptions{.name = "jacrev(" + detail::location_text(where) + ")"}, where);
}

/// The same Jacobian by forward mode: one jvp per input element, batched.
/// Best when fn has fewer inputs than outputs.
template <class F>
auto jacfwd(F fn, Location where = Location::current()) {
  return jit(detail::JacobianFunction<F, false>{std::move(fn), where},
             JitOptions{.name = "jacfwd(" + detail::location_text(where) + ")"}, where);
}

/// The Hessian of a scalar fn with respect to its first argument,
/// [*x.shape, *x.shape]: jacfwd of jacrev.
template <class F>
auto hessian(F fn, Location where = Location::current()) {
  return jacfwd(jacrev(std::move(fn), where), where);
}

}  // namespace kiln
