// Leaves (input, literal) and iota, with the creation functions built on
// them: zeros, ones, full, arange, eye, linspace. Inside a trace these record
// nodes, so a created array is part of the graph, not a captured input.
#include <cmath>

#include "core/dispatch.h"
#include "core/error_format.h"
#include "core/location_scope.h"
#include "ops/common/apply.h"
#include "ops/common/promotion.h"

namespace kiln {
namespace ops {
namespace {

AbstractValue infer_input(const Node& node, std::span<const AbstractValue* const>) {
  detail::raise("input", "graph inputs are made by a trace, not applied", node.where);
}

Array evaluate_input(const Node& node, std::span<const Array>) {
  detail::raise("input", "graph inputs are bound by the interpreter, not evaluated", node.where);
}

std::string describe_input(const Node& node) {
  static const char* kinds[] = {"arg ", "capture ", "lifted ", "constant "};
  return kinds[node.attrs.ints[1]] + std::to_string(node.attrs.ints[0]);
}

AbstractValue infer_literal(const Node& node, std::span<const AbstractValue* const>) {
  return {node.attrs.dtype, !node.attrs.ints.empty() && node.attrs.ints[0] != 0, {}};
}

Array evaluate_literal(const Node& node, std::span<const Array>) {
  Array result = detail::allocate(node.type);
  detail::dispatch(node.type.dtype, [&]<class T>() {
    T* out = detail::impl(result)->mutable_data<T>();
    if constexpr (detail::is_floating_element<T>) out[0] = static_cast<T>(node.attrs.scalar.as_double());
    else if constexpr (detail::is_complex_element<T>)
      out[0] = detail::convert_element<T>(node.attrs.scalar.as_complex());
    else out[0] = static_cast<T>(node.attrs.scalar.as_int());
  });
  return result;
}

std::string describe_literal(const Node& node) { return node.attrs.scalar.to_string(); }

AbstractValue infer_iota(const Node& node, std::span<const AbstractValue* const>) {
  const Shape& shape = node.attrs.shape;
  int64_t axis = node.attrs.ints.at(0);
  if (axis < 0 || axis >= static_cast<int64_t>(shape.size()))
    detail::raise("iota", "axis " + std::to_string(axis) + " out of range for shape " + shape_string(shape),
                  node.where);
  if (node.attrs.dtype == DType::bool_) detail::raise("iota", "needs a numeric dtype, got bool", node.where);
  for (int64_t extent : shape)
    if (extent < 0) detail::raise("iota", "negative dimension in shape " + shape_string(shape), node.where);
  return {node.attrs.dtype, false, shape};
}

Array evaluate_iota(const Node& node, std::span<const Array>) {
  Array result = detail::allocate(node.type);
  const Shape& shape = node.type.shape;
  int64_t axis = node.attrs.ints[0];
  int64_t inner = 1;
  for (size_t a = static_cast<size_t>(axis) + 1; a < shape.size(); ++a) inner *= shape[a];
  int64_t extent = shape[static_cast<size_t>(axis)];
  detail::dispatch(node.type.dtype, [&]<class T>() {
    T* out = detail::impl(result)->mutable_data<T>();
    for (int64_t i = 0, n = node.type.size(); i < n; ++i) out[i] = static_cast<T>((i / inner) % extent);
  });
  return result;
}

std::string describe_iota(const Node& node) { return "axis=" + std::to_string(node.attrs.ints[0]); }

void check_shape(const Shape& shape, const char* operation, Location where) {
  for (int64_t extent : shape)
    if (extent < 0)
      detail::raise(operation, "negative dimension in shape " + shape_string(shape), where,
                    "every extent must be >= 0");
}

DType default_dtype(const Scalar& value) {
  switch (value.kind()) {
    case Scalar::Kind::boolean: return DType::bool_;
    case Scalar::Kind::integer: return DType::i32;
    case Scalar::Kind::floating: break;
    case Scalar::Kind::complex: return DType::c64;
  }
  return DType::f32;
}

}  // namespace

Array iota(DType dtype, Shape shape, int64_t axis, Location where) {
  ir::Attributes attrs;
  attrs.shape = std::move(shape);
  attrs.ints = {axis};
  attrs.dtype = dtype;
  return detail::apply(Primitive::iota, {}, std::move(attrs), where);
}

namespace {
ScalarValue lower_literal(ScalarEmitter& e, const Node& node, std::span<const ScalarValue>, std::span<const DType>) {
  return e.literal(node);
}
ScalarValue lower_iota(ScalarEmitter& e, const Node& node, std::span<const ScalarValue>, std::span<const DType>) {
  return e.iota(node);
}
}  // namespace

void register_leaf_rules(RuleTable& table) {
  // The autodiff passes seed and read leaves directly; nothing flows through them.
  table[static_cast<size_t>(Primitive::input)] = {.infer = &infer_input,
                                                  .evaluate = &evaluate_input,
                                                  .describe = &describe_input,
                                                  .no_derivative = "leaf: its derivative is the seed itself",
                                                  .never_batched = "leaf: vmap binds it batched or not itself",
                                                  .fusion = Fusion::input};
  table[static_cast<size_t>(Primitive::literal)] = {.infer = &infer_literal,
                                                    .evaluate = &evaluate_literal,
                                                    .describe = &describe_literal,
                                                    .no_derivative = "constant",
                                                    .never_batched = "a C++ number: the same in every lane",
                                                    .fusion = Fusion::elementwise,
                                                    .lower = &lower_literal};
}

void register_creation_rules(RuleTable& table) {
  table[static_cast<size_t>(Primitive::iota)] = {.infer = &infer_iota,
                                                 .evaluate = &evaluate_iota,
                                                 .describe = &describe_iota,
                                                 .no_derivative = "constant: no inputs",
                                                 .never_batched = "no operands: the same in every lane",
                                                 .fusion = Fusion::elementwise,
                                                 .lower = &lower_iota};
}

}  // namespace ops

using detail::OperationScope;

namespace {

// full and the creators built on it; `operation` is the one the user called,
// which a shape too large for memory names.
Array filled(const char* operation, Shape shape, Scalar value, std::optional<DType> dtype, Location where) {
  OperationScope at(operation, where);
  ops::check_shape(shape, operation, where);
  DType type = dtype.value_or(ops::default_dtype(value));
  if (value.kind() == Scalar::Kind::complex && !is_complex(type))
    detail::raise(operation,
                  "cannot fill " + std::string(dtype_name(type)) + " with the complex number " + value.to_string(),
                  where, "ask for kiln::c64 or kiln::c128, or pass the real part");
  return ops::broadcast_to_shape(detail::literal(value, type, false, where), shape, where);
}

}  // namespace

Array full(Shape shape, Scalar value, std::optional<DType> dtype, Location where) {
  return filled("full", std::move(shape), value, dtype, where);
}
Array zeros(Shape shape, DType dtype, Location where) { return filled("zeros", std::move(shape), 0, dtype, where); }
Array ones(Shape shape, DType dtype, Location where) { return filled("ones", std::move(shape), 1, dtype, where); }

Array zeros_like(const Array& x, Location where) {
  const auto& type = detail::impl_of(x, "zeros_like", where).type;
  return filled("zeros_like", type.shape, 0, type.dtype, where);
}
Array ones_like(const Array& x, Location where) {
  const auto& type = detail::impl_of(x, "ones_like", where).type;
  return filled("ones_like", type.shape, 1, type.dtype, where);
}
Array full_like(const Array& x, Scalar value, Location where) {
  const auto& type = detail::impl_of(x, "full_like", where).type;
  return filled("full_like", type.shape, value, type.dtype, where);
}

Array arange(Scalar stop, Location where) { return arange(0, stop, 1, std::nullopt, where); }

Array arange(Scalar start, Scalar stop, Scalar step, std::optional<DType> dtype, Location where) {
  OperationScope at("arange", where);
  bool any_float = start.kind() == Scalar::Kind::floating || stop.kind() == Scalar::Kind::floating ||
                   step.kind() == Scalar::Kind::floating;
  DType type = dtype.value_or(any_float ? DType::f32 : DType::i32);
  if (type == DType::bool_) detail::raise("arange", "needs a numeric dtype, got bool", where);
  if (step.as_double() == 0) detail::raise("arange", "step must not be zero", where);
  double count = std::ceil((stop.as_double() - start.as_double()) / step.as_double());
  if (!(count < 9.0e15)) detail::raise("arange", "too many elements: " + std::to_string(count), where);
  auto n = static_cast<int64_t>(std::max(0.0, count));
  if (!any_float && is_integer(type)) return ops::iota(type, {n}, 0, where) * step.as_int() + start.as_int();
  // start + i * step, computed in f64 then rounded once, as NumPy does.
  return astype(ops::iota(DType::f64, {n}, 0, where) * step.as_double() + start.as_double(), type);
}

Array eye(int64_t n, std::optional<int64_t> m, int64_t k, DType dtype, Location where) {
  OperationScope at("eye", where);
  int64_t columns = m.value_or(n);
  ops::check_shape({n, columns}, "eye", where);
  Array rows = ops::iota(DType::i64, {n, columns}, 0, where);
  Array cols = ops::iota(DType::i64, {n, columns}, 1, where);
  return astype(rows + k == cols, dtype);
}

Array linspace(double start, double stop, int64_t num, bool endpoint, DType dtype, Location where) {
  OperationScope at("linspace", where);
  if (num < 0) detail::raise("linspace", "num must be >= 0, got " + std::to_string(num), where);
  double divisor = static_cast<double>(endpoint ? num - 1 : num);
  double step = divisor > 0 ? (stop - start) / divisor : 0.0;
  Array index = ops::iota(DType::f64, {num}, 0, where);
  Array values = index * step + start;
  if (endpoint && num > 1) values = kiln::where(index == static_cast<double>(num - 1), stop, values);
  return astype(values, dtype);
}

}  // namespace kiln
