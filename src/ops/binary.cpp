// Elementwise binary primitives (and select): shape/dtype rule, reference
// kernel and the public builders with NumPy broadcasting and JAX promotion.
#include <cmath>
#include <type_traits>

#include "core/dispatch.h"
#include "core/error_format.h"
#include "ops/elementwise.h"
#include "trace/apply.h"

namespace kiln {
namespace ops {
namespace {

bool is_comparison(Primitive op) {
  return op == Primitive::eq || op == Primitive::ne || op == Primitive::lt || op == Primitive::le ||
         op == Primitive::gt || op == Primitive::ge;
}
bool is_logical(Primitive op) { return op == Primitive::logical_and || op == Primitive::logical_or; }

AbstractValue infer_binary(const Node& node, std::span<const AbstractValue* const> inputs) {
  std::string_view name = ir::primitive_name(node.op);
  size_t first = node.op == Primitive::select ? 1 : 0;
  if (inputs.size() != first + 2)
    detail::raise(name, "takes " + std::to_string(first + 2) + " operands, got " + std::to_string(inputs.size()), node.where);
  const AbstractValue& a = *inputs[first];
  const AbstractValue& b = *inputs[first + 1];
  if (a.dtype != b.dtype || a.shape != b.shape)
    detail::raise(name, "operands must have one dtype and shape, got " + a.to_string() + " and " + b.to_string(),
                  node.where);
  if (node.op == Primitive::select) {
    const AbstractValue& cond = *inputs[0];
    if (cond.dtype != DType::bool_ || cond.shape != a.shape)
      detail::raise(name, "condition must be bool" + shape_string(a.shape) + ", got " + cond.to_string(), node.where);
    return {a.dtype, a.weak && b.weak, a.shape};
  }
  if (is_comparison(node.op)) return {DType::bool_, false, a.shape};
  if (is_logical(node.op) && a.dtype != DType::bool_)
    detail::raise(name, "needs bool operands, got " + a.to_string(), node.where);
  if (a.dtype == DType::bool_ && (node.op == Primitive::sub || node.op == Primitive::div || node.op == Primitive::pow))
    detail::raise(name, "is not defined for bool operands " + a.to_string() + " and " + b.to_string(), node.where,
                  "convert with astype(x, kiln::i32) first, or use logical_and/logical_or/logical_not");
  if (node.op == Primitive::div && !is_floating(a.dtype))
    detail::raise(name, "needs floating operands, got " + a.to_string(), node.where);
  return {a.dtype, a.weak && b.weak, a.shape};
}

template <class T>
T integer_pow(T base, T exponent) {
  using U = std::make_unsigned_t<T>;
  if (exponent < 0) return base == 1 ? T(1) : base == -1 ? (exponent % 2 ? T(-1) : T(1)) : T(0);
  U result = 1, factor = static_cast<U>(base);
  for (T e = exponent; e > 0; e >>= 1) {
    if (e & 1) result *= factor;
    factor *= factor;
  }
  return static_cast<T>(result);
}

template <class T>
T arithmetic(Primitive op, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case Primitive::add: case Primitive::max: case Primitive::logical_or: return a || b;
      default: return a && b;  // mul, min, logical_and
    }
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;  // wrap on overflow, as NumPy does, without UB
    switch (op) {
      case Primitive::add: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      case Primitive::sub: return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
      case Primitive::mul: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
      case Primitive::pow: return integer_pow(a, b);
      case Primitive::max: return a > b ? a : b;
      default: return a < b ? a : b;  // min
    }
  } else {
    switch (op) {
      case Primitive::add: return a + b;
      case Primitive::sub: return a - b;
      case Primitive::mul: return a * b;
      case Primitive::div: return a / b;
      case Primitive::pow: return std::pow(a, b);
      case Primitive::max: return std::isnan(a) || std::isnan(b) ? a + b : (a > b ? a : b);
      default: return std::isnan(a) || std::isnan(b) ? a + b : (a < b ? a : b);  // min
    }
  }
}

template <class T>
bool compare(Primitive op, T a, T b) {
  switch (op) {
    case Primitive::eq: return a == b;
    case Primitive::ne: return a != b;
    case Primitive::lt: return a < b;
    case Primitive::le: return a <= b;
    case Primitive::gt: return a > b;
    default: return a >= b;  // ge
  }
}

Array evaluate_binary(const Node& node, std::span<const Array> inputs) {
  Array result = detail::allocate(node.type);
  detail::ArrayImpl& out = *result.impl();
  int64_t n = node.type.size();
  if (node.op == Primitive::select) {
    const bool* cond = inputs[0].impl()->data<bool>();
    detail::dispatch(node.type.dtype, [&]<class T>() {
      const T* a = inputs[1].impl()->data<T>();
      const T* b = inputs[2].impl()->data<T>();
      T* o = out.mutable_data<T>();
      for (int64_t i = 0; i < n; ++i) o[i] = cond[i] ? a[i] : b[i];
    });
    return result;
  }
  detail::dispatch(inputs[0].impl()->type.dtype, [&]<class T>() {
    const T* a = inputs[0].impl()->data<T>();
    const T* b = inputs[1].impl()->data<T>();
    if (is_comparison(node.op)) {
      bool* o = out.mutable_data<bool>();
      for (int64_t i = 0; i < n; ++i) o[i] = compare(node.op, a[i], b[i]);
    } else {
      T* o = out.mutable_data<T>();
      for (int64_t i = 0; i < n; ++i) o[i] = arithmetic(node.op, a[i], b[i]);
    }
  });
  return result;
}

// `name` is the public function the user called (errors say "[maximum]", not "[max]").
Array binary(Primitive op, const char* name, const Operand& a, const Operand& b) {
  Location where = a.where();
  static const Shape scalar_shape;
  const Shape& sa = a.is_number() ? scalar_shape : detail::impl_of(a.array(), name, where).type.shape;
  const Shape& sb = b.is_number() ? scalar_shape : detail::impl_of(b.array(), name, where).type.shape;
  TypeClass target = promote(type_class(a), type_class(b));
  if (op == Primitive::div && !is_floating(target.dtype)) target = {DType::f32, target.weak};
  if (is_logical(op)) target = {DType::bool_, false};
  if (target.dtype == DType::bool_ && (op == Primitive::sub || op == Primitive::pow)) {
    auto describe = [&](const Operand& o, const Shape& shape) {
      return o.is_number() ? "the number " + o.number().to_string() : "bool" + shape_string(shape);
    };
    detail::raise(name, "is not defined for bool operands, got " + describe(a, sa) + " and " + describe(b, sb), where,
                  "convert with astype(x, kiln::i32) first, or use logical_and/logical_or/logical_not");
  }
  Shape shape = broadcast_shapes(sa, sb, name, where);
  return detail::apply(op, {materialize(a, target, shape, where), materialize(b, target, shape, where)}, {}, where);
}

}  // namespace

void register_binary_rules(RuleTable& table) {
#define KILN_PRIMITIVE(name, family)                                                           \
  if (std::string_view(#family) == "binary") {                                                 \
    table[static_cast<size_t>(Primitive::name)] = {&infer_binary, &evaluate_binary, nullptr};  \
  }
#include "ir/primitives.def"
#undef KILN_PRIMITIVE
}

}  // namespace ops

using ops::Primitive;

Array add(Operand a, Operand b) { return ops::binary(Primitive::add, "add", a, b); }
Array sub(Operand a, Operand b) { return ops::binary(Primitive::sub, "sub", a, b); }
Array mul(Operand a, Operand b) { return ops::binary(Primitive::mul, "mul", a, b); }
Array div(Operand a, Operand b) { return ops::binary(Primitive::div, "div", a, b); }
Array pow(Operand a, Operand b) { return ops::binary(Primitive::pow, "pow", a, b); }
Array maximum(Operand a, Operand b) { return ops::binary(Primitive::max, "maximum", a, b); }
Array minimum(Operand a, Operand b) { return ops::binary(Primitive::min, "minimum", a, b); }
Array equal(Operand a, Operand b) { return ops::binary(Primitive::eq, "equal", a, b); }
Array not_equal(Operand a, Operand b) { return ops::binary(Primitive::ne, "not_equal", a, b); }
Array less(Operand a, Operand b) { return ops::binary(Primitive::lt, "less", a, b); }
Array less_equal(Operand a, Operand b) { return ops::binary(Primitive::le, "less_equal", a, b); }
Array greater(Operand a, Operand b) { return ops::binary(Primitive::gt, "greater", a, b); }
Array greater_equal(Operand a, Operand b) { return ops::binary(Primitive::ge, "greater_equal", a, b); }
Array logical_and(Operand a, Operand b) { return ops::binary(Primitive::logical_and, "logical_and", a, b); }
Array logical_or(Operand a, Operand b) { return ops::binary(Primitive::logical_or, "logical_or", a, b); }

Array operator+(Operand a, Operand b) { return add(a, b); }
Array operator-(Operand a, Operand b) { return sub(a, b); }
Array operator*(Operand a, Operand b) { return mul(a, b); }
Array operator/(Operand a, Operand b) { return div(a, b); }
Array operator<(Operand a, Operand b) { return less(a, b); }
Array operator<=(Operand a, Operand b) { return less_equal(a, b); }
Array operator>(Operand a, Operand b) { return greater(a, b); }
Array operator>=(Operand a, Operand b) { return greater_equal(a, b); }
Array operator==(Operand a, Operand b) { return equal(a, b); }
Array operator!=(Operand a, Operand b) { return not_equal(a, b); }
Array operator&(Operand a, Operand b) { return logical_and(a, b); }
Array operator|(Operand a, Operand b) { return logical_or(a, b); }

Array where(Operand cond, Operand x, Operand y) {
  Location where = cond.where();
  ops::TypeClass target = ops::promote(ops::type_class(x), ops::type_class(y));
  static const Shape scalar_shape;
  auto shape_of = [&](const Operand& o) -> const Shape& {
    return o.is_number() ? scalar_shape : detail::impl_of(o.array(), "where", where).type.shape;
  };
  Shape shape = ops::broadcast_shapes(ops::broadcast_shapes(shape_of(cond), shape_of(x), "where", where),
                                      shape_of(y), "where", where);
  Array c = ops::materialize(cond, {DType::bool_, false}, shape, where);
  return detail::apply(Primitive::select,
                       {c, ops::materialize(x, target, shape, where), ops::materialize(y, target, shape, where)}, {},
                       where);
}

Array clip(Operand x, Operand lo, Operand hi) {
  return minimum(Operand(maximum(x, lo), x.where()), hi);
}

}  // namespace kiln
