// Reduction primitives (reduce_sum, reduce_prod, reduce_max, reduce_min,
// argmax, argmin, cumsum): shape/dtype rules, reference kernels, derivative
// rules and the public builders sum, mean, max, min, prod, argmax, argmin,
// cumsum, with the composites logsumexp, softmax and log_softmax.
//
// The primitives keep the input dtype and are total: reducing an empty axis
// gives the operation's identity (-inf for reduce_max, index 0 for argmax).
// NumPy's errors for reductions without an identity live in the builders.
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include "core/dispatch.h"
#include "core/error_format.h"
#include "core/wrapping.h"
#include "ops/common/apply.h"
#include "ops/common/axes.h"
#include "ops/common/batching.h"
#include "ops/common/promotion.h"

namespace kiln {
namespace ops {
namespace {

// ---- Shape and dtype rules ------------------------------------------------------

void check_arity(const Node& node, std::span<const AbstractValue* const> inputs) {
  if (inputs.size() != 1)
    detail::raise(ir::primitive_name(node.op), "takes 1 operand, got " + std::to_string(inputs.size()), node.where);
}

AbstractValue infer_reduce(const Node& node, std::span<const AbstractValue* const> inputs) {
  check_arity(node, inputs);
  const AbstractValue& x = *inputs[0];
  if (node.op == Primitive::reduce_max || node.op == Primitive::reduce_min)
    check_ordered(ir::primitive_name(node.op), x, node.where);
  const std::vector<int64_t>& axes = node.attrs.ints;
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] < 0 || axes[i] >= x.ndim() || (i > 0 && axes[i] <= axes[i - 1]))
      detail::raise(ir::primitive_name(node.op),
                    "axes " + ints_string(axes) + " must be sorted, unique and within the rank of " + x.to_string(),
                    node.where);
  Shape shape;
  for (int64_t a = 0, next = 0; a < x.ndim(); ++a) {
    if (next < static_cast<int64_t>(axes.size()) && axes[static_cast<size_t>(next)] == a) {
      ++next;
      continue;
    }
    shape.push_back(x.shape[static_cast<size_t>(a)]);
  }
  return {x.dtype, x.weak, shape};
}

int64_t checked_axis(const Node& node, const AbstractValue& x) {
  int64_t axis = node.attrs.ints.empty() ? -1 : node.attrs.ints[0];
  if (axis < 0 || axis >= x.ndim())
    detail::raise(ir::primitive_name(node.op), "axis " + std::to_string(axis) + " is out of range for " + x.to_string(),
                  node.where);
  return axis;
}

AbstractValue infer_argument_reduce(const Node& node, std::span<const AbstractValue* const> inputs) {
  check_arity(node, inputs);
  const AbstractValue& x = *inputs[0];
  check_ordered(ir::primitive_name(node.op), x, node.where);
  int64_t axis = checked_axis(node, x);
  Shape shape = x.shape;
  shape.erase(shape.begin() + axis);
  return {DType::i32, false, shape};
}

AbstractValue infer_cumsum(const Node& node, std::span<const AbstractValue* const> inputs) {
  check_arity(node, inputs);
  const AbstractValue& x = *inputs[0];
  checked_axis(node, x);
  if (node.attrs.ints.size() != 2 || (node.attrs.ints[1] != 0 && node.attrs.ints[1] != 1))
    detail::raise("cumsum", "attributes must be {axis, reverse (0 or 1)}, got " + ints_string(node.attrs.ints),
                  node.where);
  return x;
}

// ---- Reference kernels -------------------------------------------------------------

// f32 sums and products accumulate in double: the reference then carries
// only the final rounding, so it stays within tolerance of NumPy's pairwise
// f32 sums and of any compiled f32 kernel (each differs from it by its own
// error alone, not by the sum of two f32 roundings).
// f16 and bf16 likewise.
// c64 likewise in complex<double>.
template <class T>
using Accumulator =
    std::conditional_t<std::is_same_v<T, float> || HalfFloat<T>, double,
                       std::conditional_t<std::is_same_v<T, std::complex<float>>, std::complex<double>, T>>;

// The reference's combining step of each Reduction (the row's), so a
// reduction primitive without one fails the registry instead of computing
// another reduction.
template <class A>
A reduce_identity(Reduction reduction) {
  constexpr bool floating = detail::is_floating_element<A>;
  switch (reduction) {
    case Reduction::sum: return A(0);
    case Reduction::product: return A(1);
    case Reduction::max:
      if constexpr (std::is_same_v<A, bool>) return false;
      else if constexpr (detail::is_complex_element<A>) break;  // refused by infer_reduce
      else return floating ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::lowest();
    case Reduction::min:
      if constexpr (std::is_same_v<A, bool>) return true;
      else if constexpr (detail::is_complex_element<A>) break;
      else return floating ? std::numeric_limits<A>::infinity() : std::numeric_limits<A>::max();
    case Reduction::none: break;
  }
  KILN_CHECK(false, "reference reduction for a primitive that names no combining operation");
  return A(0);
}

template <class A>
A reduce_combine(Reduction reduction, A acc, A value) {
  if constexpr (std::is_same_v<A, bool>) {
    // Like the binary kernels on bool: sum and max are "or", prod and min "and".
    return reduction == Reduction::sum || reduction == Reduction::max ? (acc || value) : (acc && value);
  } else {
    // Integers wrap on overflow, as NumPy does, through unsigned arithmetic (no UB).
    using U = detail::wrapping_type<std::conditional_t<std::is_integral_v<A>, A, int>>;
    switch (reduction) {
      case Reduction::sum:
        if constexpr (std::is_integral_v<A>) return static_cast<A>(static_cast<U>(acc) + static_cast<U>(value));
        else return acc + value;
      case Reduction::product:
        if constexpr (std::is_integral_v<A>) return static_cast<A>(static_cast<U>(acc) * static_cast<U>(value));
        else return acc * value;
      case Reduction::max:
      case Reduction::min:
        if constexpr (detail::is_complex_element<A>) break;  // refused by infer_reduce
        else {
          if constexpr (detail::is_floating_element<A>) {
            // NaN propagates: once the accumulator is NaN it stays NaN.
            if (std::isnan(acc) || std::isnan(value)) return std::isnan(acc) ? acc : value;
          }
          if (reduction == Reduction::max) return value > acc ? value : acc;
          return value < acc ? value : acc;
        }
      case Reduction::none: break;
    }
    KILN_CHECK(false, "reference reduction for a primitive that names no combining operation");
    return acc;
  }
}

Array evaluate_reduce(const Node& node, std::span<const Array> inputs) {
  const detail::ArrayImpl& x = *detail::impl(inputs[0]);
  Array result = detail::allocate(node.type);
  const Shape& shape = x.type.shape;
  size_t rank = shape.size();
  // Stride of each input axis in the output; 0 along reduced axes.
  std::vector<int64_t> output_strides(rank, 0);
  std::vector<bool> reduced(rank, false);
  for (int64_t axis : node.attrs.ints) reduced[static_cast<size_t>(axis)] = true;
  int64_t stride = 1;
  for (size_t a = rank; a-- > 0;) {
    if (reduced[a]) continue;
    output_strides[a] = stride;
    stride *= shape[a];
  }
  Reduction reduction = rules(node.op).reduction;
  detail::dispatch(x.type.dtype, [&]<class T>() {
    using A = Accumulator<T>;
    std::vector<A> accumulators(static_cast<size_t>(node.type.size()), reduce_identity<A>(reduction));
    const T* in = x.data<T>();
    std::vector<int64_t> index(rank, 0);
    for (int64_t i = 0, n = x.type.size(); i < n; ++i) {
      int64_t target = 0;
      for (size_t a = 0; a < rank; ++a) target += index[a] * output_strides[a];
      auto slot = static_cast<size_t>(target);
      accumulators[slot] = reduce_combine<A>(reduction, accumulators[slot], static_cast<A>(in[i]));
      for (size_t a = rank; a-- > 0;) {
        if (++index[a] < shape[a]) break;
        index[a] = 0;
      }
    }
    T* out = detail::impl(result)->mutable_data<T>();
    for (size_t i = 0; i < accumulators.size(); ++i) out[i] = static_cast<T>(accumulators[i]);
  });
  return result;
}

// Whether `value` displaces `best` as the extreme. A NaN is the extreme (as
// in NumPy), and ties keep the first occurrence.
template <class T>
bool displaces(Primitive op, T value, T best) {
  if constexpr (detail::is_floating_element<T>) {
    if (std::isnan(best)) return false;
    if (std::isnan(value)) return true;
  }
  return op == Primitive::argmax ? value > best : value < best;
}

Array evaluate_argument_reduce(const Node& node, std::span<const Array> inputs) {
  const detail::ArrayImpl& x = *detail::impl(inputs[0]);
  Array result = detail::allocate(node.type);
  AxisSplit split = split_at(x.type.shape, node.attrs.ints[0]);
  int32_t* out = detail::impl(result)->mutable_data<int32_t>();
  detail::dispatch(x.type.dtype, [&]<class T>() {
    if constexpr (detail::is_complex_element<T>) {
      KILN_CHECK(false, "complex operands reached a kernel whose shape rule refuses them");
    } else {
      const T* in = x.data<T>();
      for (int64_t o = 0; o < split.outer; ++o) {
        for (int64_t i = 0; i < split.inner; ++i) {
          const T* line = in + o * split.extent * split.inner + i;
          int64_t best = 0;
          for (int64_t j = 1; j < split.extent; ++j)
            if (displaces(node.op, line[j * split.inner], line[best * split.inner])) best = j;
          out[o * split.inner + i] = static_cast<int32_t>(best);
        }
      }
    }
  });
  return result;
}

Array evaluate_cumsum(const Node& node, std::span<const Array> inputs) {
  const detail::ArrayImpl& x = *detail::impl(inputs[0]);
  Array result = detail::allocate(node.type);
  AxisSplit split = split_at(x.type.shape, node.attrs.ints[0]);
  bool reverse = node.attrs.ints[1] != 0;
  detail::dispatch(x.type.dtype, [&]<class T>() {
    using A = Accumulator<T>;
    const T* in = x.data<T>();
    T* out = detail::impl(result)->mutable_data<T>();
    for (int64_t o = 0; o < split.outer; ++o) {
      for (int64_t i = 0; i < split.inner; ++i) {
        int64_t base = o * split.extent * split.inner + i;
        A running = reduce_identity<A>(Reduction::sum);
        for (int64_t step = 0; step < split.extent; ++step) {
          int64_t j = reverse ? split.extent - 1 - step : step;
          int64_t position = base + j * split.inner;
          running = reduce_combine<A>(Reduction::sum, running, static_cast<A>(in[position]));
          out[position] = static_cast<T>(running);
        }
      }
    }
  });
  return result;
}

std::string describe_reduce(const Node& node) { return "axes=" + ints_string(node.attrs.ints); }
std::string describe_argument_reduce(const Node& node) { return "axis=" + std::to_string(node.attrs.ints.at(0)); }
std::string describe_cumsum(const Node& node) {
  return "axis=" + std::to_string(node.attrs.ints.at(0)) + (node.attrs.ints.at(1) ? " reverse" : "");
}

// ---- Builder helpers --------------------------------------------------------------------

// The reshape primitive directly (not the public builder), skipping no-ops.
Array reshape_to(const Array& x, const Shape& shape, Location where) {
  if (detail::impl_of(x, "reshape", where).type.shape == shape) return x;
  ir::Attributes attrs;
  attrs.shape = shape;
  return detail::apply(Primitive::reshape, {x}, std::move(attrs), where);
}

/// `shape` with each of the (sorted) `axes` set to extent 1.
Shape kept_shape(Shape shape, const std::vector<int64_t>& axes) {
  for (int64_t axis : axes) shape[static_cast<size_t>(axis)] = 1;
  return shape;
}

/// Applies a reduction primitive; an empty axis list reduces nothing.
Array reduce(Primitive op, const Array& x, const std::vector<int64_t>& axes, bool keepdims, Location where) {
  if (axes.empty()) return x;
  ir::Attributes attrs;
  attrs.ints = axes;
  Array result = detail::apply(op, {x}, std::move(attrs), where);
  if (!keepdims) return result;
  return reshape_to(result, kept_shape(detail::impl_of(x, "reduce", where).type.shape, axes), where);
}

/// JAX's accumulation dtype for sum, prod and cumsum: bool, i8 and i16 give
/// i32; u8 and u16 give u32.
Array as_accumulation_dtype(const Array& x, const AbstractValue& type, Location where) {
  if (type.dtype == DType::bool_ || type.dtype == DType::i8 || type.dtype == DType::i16)
    return convert_to(x, DType::i32, false, where);
  if (type.dtype == DType::u8 || type.dtype == DType::u16) return convert_to(x, DType::u32, false, where);
  return x;
}

void require_nonempty_axes(std::string_view operation, std::string_view numpy_name, const AbstractValue& type,
                           const std::vector<int64_t>& axes, Location where) {
  for (int64_t axis : axes)
    if (type.shape[static_cast<size_t>(axis)] == 0)
      detail::raise(operation,
                    "zero-size array to reduction operation " + std::string(numpy_name) +
                        " which has no identity: axis " + std::to_string(axis) + " of " + type.to_string() +
                        " (reducing axes " + ints_string(axes) + ") is empty",
                    where, "reduce over non-empty axes only, or check the size before reducing");
}

Array extreme(Primitive op, std::string_view name, const Array& x, const Axes& axes, bool keepdims, Location where) {
  const AbstractValue& type = detail::impl_of(x, name.data(), where).type;
  std::vector<int64_t> normalized = normalize_axes(axes, type.ndim(), name, type.shape, where);
  require_nonempty_axes(name, op == Primitive::reduce_max ? "maximum" : "minimum", type, normalized, where);
  return reduce(op, x, normalized, keepdims, where);
}

Array accumulate(Primitive op, std::string_view name, const Array& x, const Axes& axes, bool keepdims, Location where) {
  const AbstractValue& type = detail::impl_of(x, name.data(), where).type;
  std::vector<int64_t> normalized = normalize_axes(axes, type.ndim(), name, type.shape, where);
  return reduce(op, as_accumulation_dtype(x, type, where), normalized, keepdims, where);
}

/// The operand of argmax/argmin/cumsum along `axis`: flattened when no axis
/// is given, and a 0-d array counts as 1-d (NumPy accepts axis 0 or -1 for it).
std::pair<Array, int64_t> along_axis(std::string_view name, const Array& x, std::optional<int64_t> axis,
                                     Location where) {
  const AbstractValue& type = detail::impl_of(x, name.data(), where).type;
  if (axis && type.ndim() > 0) return {x, normalize_axis(*axis, type.ndim(), name, type.shape, where)};
  if (axis && *axis != 0 && *axis != -1) normalize_axis(*axis, 0, name, type.shape, where);  // raises
  return {reshape_to(x, {type.size()}, where), 0};
}

Array argument_reduce(Primitive op, std::string_view name, const Array& x, std::optional<int64_t> axis, bool keepdims,
                      Location where) {
  const AbstractValue& type = detail::impl_of(x, name.data(), where).type;
  auto [operand, normalized] = along_axis(name, x, axis, where);
  const AbstractValue& operand_type = detail::impl_of(operand, name.data(), where).type;
  if (operand_type.shape[static_cast<size_t>(normalized)] == 0)
    detail::raise(name,
                  "attempt to get " + std::string(name) + " of an empty sequence: " +
                      (axis ? "axis " + std::to_string(*axis) + " of " : std::string("the flattened ")) +
                      type.to_string() + " is empty",
                  where, "take the " + std::string(name) + " of a non-empty axis, or check the size first");
  ir::Attributes attrs;
  attrs.ints = {normalized};
  Array result = detail::apply(op, {operand}, std::move(attrs), where);
  if (!keepdims) return result;
  if (!axis) return reshape_to(result, Shape(static_cast<size_t>(type.ndim()), 1), where);
  return reshape_to(result, type.ndim() == 0 ? Shape{} : kept_shape(type.shape, {normalized}), where);
}

/// The max along `axes` (kept as size-1 dims), with non-finite maxima
/// replaced by 0 so rows of -inf (or +inf) do not produce inf - inf; held
/// constant under differentiation. Called inside logsumexp's scope.
Array finite_shift(const Array& x, const std::vector<int64_t>& axes, Location where) {
  Array maximum = reduce(Primitive::reduce_max, x, axes, true, where);
  return stop_gradient(kiln::where(abs(maximum) < std::numeric_limits<double>::infinity(), maximum, 0.0));
}

// ---- Derivative rules -------------------------------------------------------------------

const AbstractValue& type_of(const Array& x, Location where) { return detail::impl_of(x, "reduce", where).type; }

Array apply_with_ints(Primitive op, const Array& x, std::vector<int64_t> ints, Location where) {
  ir::Attributes attrs;
  attrs.ints = std::move(ints);
  return detail::apply(op, {x}, std::move(attrs), where);
}

/// A reduction's result (or cotangent) brought back to the input's shape: the
/// reduced dims reinserted as 1, then broadcast.
Array expand_reduced(const Array& reduced, const Node& node, const Shape& input_shape) {
  Array kept = reshape_to(reduced, kept_shape(input_shape, node.attrs.ints), node.where);
  return broadcast_to_shape(kept, input_shape, node.where);
}

/// For each element of `x`, the product of the other elements along `axes`.
/// Built as a pairwise product tree, JAX's construction for reduce_prod: with
/// multiplications only, it is exact with zeros (one zero leaves the product of
/// the others at its position and zero elsewhere; two zeros give zero
/// everywhere), and differentiating it again gives the exact higher
/// derivatives. Dividing the product by x would do neither.
Array product_of_others(const Array& x, const std::vector<int64_t>& axes, Location where) {
  const AbstractValue& type = type_of(x, where);
  auto rank = static_cast<size_t>(type.ndim());
  // The kept axes first and the reduced ones last, seen as a [kept, count] matrix.
  std::vector<bool> reduced(rank, false);
  for (int64_t axis : axes) reduced[static_cast<size_t>(axis)] = true;
  std::vector<int64_t> permutation;
  int64_t kept = 1, count = 1;
  for (size_t a = 0; a < rank; ++a)
    if (!reduced[a]) {
      permutation.push_back(static_cast<int64_t>(a));
      kept *= type.shape[a];
    }
  for (int64_t axis : axes) {
    permutation.push_back(axis);
    count *= type.shape[static_cast<size_t>(axis)];
  }
  Shape moved_shape;
  std::vector<int64_t> inverse(rank);
  for (size_t a = 0; a < rank; ++a) {
    moved_shape.push_back(type.shape[static_cast<size_t>(permutation[a])]);
    inverse[static_cast<size_t>(permutation[a])] = static_cast<int64_t>(a);
  }
  if (count <= 1) return broadcast_to_shape(detail::literal(1, type.dtype, type.weak, where), type.shape, where);

  // Leaves padded with ones to a power of two; each level multiplies pairs.
  int64_t width = 1;
  while (width < count) width *= 2;
  Array level = reshape_to(transpose(x, permutation, where), {kept, count}, where);
  level = pad(level, {0, 0}, {0, width - count}, 1, where);
  std::vector<std::pair<Array, Array>> pairs;
  for (int64_t half = width / 2; half >= 1; half /= 2) {
    Array paired = reshape_to(level, {kept, half, 2}, where);
    Array left = reshape_to(slice(paired, {0, 0, 0}, {kept, half, 1}, {}, where), {kept, half}, where);
    Array right = reshape_to(slice(paired, {0, 0, 1}, {kept, half, 2}, {}, where), {kept, half}, where);
    pairs.emplace_back(left, right);
    level = left * right;
  }
  // Back down: a node's others are its sibling times its parent's others
  // (the root's others are an empty product, 1).
  Array others;
  for (size_t k = pairs.size(); k-- > 0;) {
    const auto& [left, right] = pairs[k];
    Array left_others = others.defined() ? others * right : right;
    Array right_others = others.defined() ? others * left : left;
    Array both = stack({left_others, right_others}, 2, where);
    others = reshape_to(both, {kept, 2 * type_of(left, where).shape[1]}, where);
  }
  others = reshape_to(slice(others, {0, 0}, {kept, count}, {}, where), moved_shape, where);
  return convert_to(transpose(others, inverse, where), type.dtype, type.weak, where);
}

/// Where each element equals the extreme, divided by how many do: the
/// cotangent of max/min is split equally among ties, as in JAX.
Array extreme_weights(const Node& node, const Array& x, const Array& output) {
  const AbstractValue& type = type_of(x, node.where);
  Array mask = convert_to(x == expand_reduced(output, node, type.shape), type.dtype, type.weak, node.where);
  Array counts = reduce(Primitive::reduce_sum, mask, node.attrs.ints, true, node.where);
  return mask / counts;
}

std::vector<Array> reduce_sum_vjp(const Node& node, std::span<const Array> inputs, const Array&,
                                  const Array& cotangent) {
  return {expand_reduced(cotangent, node, type_of(inputs[0], node.where).shape)};
}

Array reduce_sum_jvp(const Node& node, std::span<const Array>, const Array&, std::span<const Array> tangents) {
  return apply_with_ints(Primitive::reduce_sum, tangents[0], node.attrs.ints, node.where);
}

std::vector<Array> reduce_prod_vjp(const Node& node, std::span<const Array> inputs, const Array&,
                                   const Array& cotangent) {
  Array spread = expand_reduced(cotangent, node, type_of(inputs[0], node.where).shape);
  Array others = product_of_others(inputs[0], node.attrs.ints, node.where);
  return {spread * others};
}

Array reduce_prod_jvp(const Node& node, std::span<const Array> inputs, const Array&, std::span<const Array> tangents) {
  Array others = product_of_others(inputs[0], node.attrs.ints, node.where);
  Array terms = tangents[0] * others;
  return apply_with_ints(Primitive::reduce_sum, terms, node.attrs.ints, node.where);
}

std::vector<Array> extreme_vjp(const Node& node, std::span<const Array> inputs, const Array& output,
                               const Array& cotangent) {
  Array spread = expand_reduced(cotangent, node, type_of(inputs[0], node.where).shape);
  return {spread * extreme_weights(node, inputs[0], output)};
}

Array extreme_jvp(const Node& node, std::span<const Array> inputs, const Array& output,
                  std::span<const Array> tangents) {
  Array weights = extreme_weights(node, inputs[0], output);
  Array terms = tangents[0] * weights;
  return apply_with_ints(Primitive::reduce_sum, terms, node.attrs.ints, node.where);
}

// Each input feeds the running sums from its position on, so the cotangent
// is a cumulative sum running the other way.
std::vector<Array> cumsum_vjp(const Node& node, std::span<const Array>, const Array&, const Array& cotangent) {
  return {apply_with_ints(Primitive::cumsum, cotangent, {node.attrs.ints[0], node.attrs.ints[1] ? 0 : 1}, node.where)};
}

Array cumsum_jvp(const Node& node, std::span<const Array>, const Array&, std::span<const Array> tangents) {
  return apply_with_ints(Primitive::cumsum, tangents[0], node.attrs.ints, node.where);
}

}  // namespace

/// Integers and bool computed in the default float, as JAX does for mean, logsumexp, softmax.
Array as_floating(const Array& x, const AbstractValue& type, Location where) {
  if (is_floating(type.dtype) || is_complex(type.dtype)) return x;
  return convert_to(x, DType::f32, type.weak && type.dtype != DType::bool_, where);
}

Array batch_reduce(const Node& node, std::span<const Array> inputs, std::span<const char>, int64_t) {
  return apply_node_to(node, inputs, shifted_axes(node.attrs.ints));
}

void register_reduce_rules(RuleTable& table) {
  auto reduction = [&](Primitive op, auto vjp, auto jvp, Reduction combine) {
    table[static_cast<size_t>(op)] = {.infer = &infer_reduce,
                                      .evaluate = &evaluate_reduce,
                                      .describe = &describe_reduce,
                                      .vjp = vjp,
                                      .jvp = jvp,
                                      .batch = &batch_reduce,
                                      .fusion = Fusion::reduction,
                                      .reduction = combine};
  };
  reduction(Primitive::reduce_sum, &reduce_sum_vjp, &reduce_sum_jvp, Reduction::sum);
  reduction(Primitive::reduce_prod, &reduce_prod_vjp, &reduce_prod_jvp, Reduction::product);
  reduction(Primitive::reduce_max, &extreme_vjp, &extreme_jvp, Reduction::max);
  reduction(Primitive::reduce_min, &extreme_vjp, &extreme_jvp, Reduction::min);
  for (Primitive op : {Primitive::argmax, Primitive::argmin})
    table[static_cast<size_t>(op)] = {.infer = &infer_argument_reduce,
                                      .evaluate = &evaluate_argument_reduce,
                                      .describe = &describe_argument_reduce,
                                      .no_derivative = "integer (i32) index result",
                                      .batch = &batch_shifting_first_int,
                                      .fusion = Fusion::kernel,
                                      .kernel = NativeKernel::argument_reduce};
  table[static_cast<size_t>(Primitive::cumsum)] = {.infer = &infer_cumsum,
                                                   .evaluate = &evaluate_cumsum,
                                                   .describe = &describe_cumsum,
                                                   .vjp = &cumsum_vjp,
                                                   .jvp = &cumsum_jvp,
                                                   .batch = &batch_shifting_first_int,
                                                   .fusion = Fusion::kernel,
                                                   .kernel = NativeKernel::cumsum};
}

}  // namespace ops

using detail::OperationScope;
using ops::Primitive;

Array sum(const Array& x, Axes axes, bool keepdims, Location where) {
  return ops::accumulate(Primitive::reduce_sum, "sum", x, axes, keepdims, where);
}

Array prod(const Array& x, Axes axes, bool keepdims, Location where) {
  return ops::accumulate(Primitive::reduce_prod, "prod", x, axes, keepdims, where);
}

Array max(const Array& x, Axes axes, bool keepdims, Location where) {
  return ops::extreme(Primitive::reduce_max, "max", x, axes, keepdims, where);
}

Array min(const Array& x, Axes axes, bool keepdims, Location where) {
  return ops::extreme(Primitive::reduce_min, "min", x, axes, keepdims, where);
}

Array mean(const Array& x, Axes axes, bool keepdims, Location where) {
  OperationScope at("mean", where);
  const auto& type = detail::impl_of(x, "mean", where).type;
  std::vector<int64_t> normalized = ops::normalize_axes(axes, type.ndim(), "mean", type.shape, where);
  Array operand = ops::as_floating(x, type, where);
  if (normalized.empty()) return operand;
  int64_t count = 1;
  for (int64_t axis : normalized) count *= type.shape[static_cast<size_t>(axis)];
  // An empty reduction divides 0 by 0: NaN, as NumPy gives.
  Array total = ops::reduce(Primitive::reduce_sum, operand, normalized, keepdims, where);
  return total / static_cast<double>(count);
}

Array argmax(const Array& x, std::optional<int64_t> axis, bool keepdims, Location where) {
  return ops::argument_reduce(Primitive::argmax, "argmax", x, axis, keepdims, where);
}

Array argmin(const Array& x, std::optional<int64_t> axis, bool keepdims, Location where) {
  return ops::argument_reduce(Primitive::argmin, "argmin", x, axis, keepdims, where);
}

Array cumsum(const Array& x, std::optional<int64_t> axis, Location where) {
  const auto& type = detail::impl_of(x, "cumsum", where).type;
  auto [operand, normalized] = ops::along_axis("cumsum", ops::as_accumulation_dtype(x, type, where), axis, where);
  ir::Attributes attrs;
  attrs.ints = {normalized, 0};
  return detail::apply(Primitive::cumsum, {operand}, std::move(attrs), where);
}

Array logsumexp(const Array& x, Axes axes, bool keepdims, Location where) {
  OperationScope at("logsumexp", where);
  const auto& type = detail::impl_of(x, "logsumexp", where).type;
  std::vector<int64_t> normalized = ops::normalize_axes(axes, type.ndim(), "logsumexp", type.shape, where);
  Array operand = ops::as_floating(x, type, where);
  // An empty axis reduces to -inf: the max primitive's identity -inf becomes
  // a shift of 0, and log of the empty sum is log(0).
  Array shift = ops::finite_shift(operand, normalized, where);
  Array total = ops::reduce(Primitive::reduce_sum, exp(operand - shift), normalized, keepdims, where);
  Array shift_out = keepdims ? shift : ops::reshape_to(shift, total.shape(), where);
  return log(total) + shift_out;
}

// softmax and log_softmax shift by the plain max, as JAX does: a row holding
// +inf or only -inf has no meaningful softmax and gives NaN, like NumPy's
// formula exp(x - max) / sum(exp(x - max)).
Array softmax(const Array& x, int64_t axis, Location where) {
  OperationScope at("softmax", where);
  const auto& type = detail::impl_of(x, "softmax", where).type;
  std::vector<int64_t> axes{ops::normalize_axis(axis, type.ndim(), "softmax", type.shape, where)};
  Array operand = ops::as_floating(x, type, where);
  Array shift = stop_gradient(ops::reduce(Primitive::reduce_max, operand, axes, true, where));
  Array exponentials = exp(operand - shift);
  return exponentials / ops::reduce(Primitive::reduce_sum, exponentials, axes, true, where);
}

Array log_softmax(const Array& x, int64_t axis, Location where) {
  OperationScope at("log_softmax", where);
  const auto& type = detail::impl_of(x, "log_softmax", where).type;
  std::vector<int64_t> axes{ops::normalize_axis(axis, type.ndim(), "log_softmax", type.shape, where)};
  Array operand = ops::as_floating(x, type, where);
  Array shifted = operand - stop_gradient(ops::reduce(Primitive::reduce_max, operand, axes, true, where));
  return shifted - log(ops::reduce(Primitive::reduce_sum, exp(shifted), axes, true, where));
}

}  // namespace kiln
