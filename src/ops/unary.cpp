// Elementwise unary primitives: shape/dtype rule, reference kernel and the
// public builders (neg, exp, ..., astype, stop_gradient) with their
// composites (square, relu).
#include <cmath>
#include <type_traits>

#include "core/convert.h"
#include "core/dispatch.h"
#include "core/error_format.h"
#include "ops/elementwise.h"
#include "ops/apply.h"

namespace kiln {
namespace ops {
namespace {

bool is_float_only(Primitive op) {
  switch (op) {
    case Primitive::exp: case Primitive::log: case Primitive::log1p: case Primitive::expm1:
    case Primitive::sqrt: case Primitive::rsqrt: case Primitive::tanh: case Primitive::logistic:
    case Primitive::erf: case Primitive::sin: case Primitive::cos: case Primitive::floor:
    case Primitive::ceil: case Primitive::round: case Primitive::is_nan:
      return true;
    default:
      return false;
  }
}

AbstractValue infer_unary(const Node& node, std::span<const AbstractValue* const> inputs) {
  const AbstractValue& x = *inputs[0];
  std::string_view name = ir::primitive_name(node.op);
  if (node.op == Primitive::convert) return {node.attrs.dtype, !node.attrs.ints.empty(), x.shape};
  if (is_float_only(node.op) && !is_floating(x.dtype))
    detail::raise(name, "needs a floating operand, got " + x.to_string(), node.where, "convert with astype first");
  if (node.op == Primitive::is_nan) return {DType::bool_, false, x.shape};
  if (node.op == Primitive::logical_not && x.dtype != DType::bool_)
    detail::raise(name, "needs a bool operand, got " + x.to_string(), node.where);
  if ((node.op == Primitive::neg || node.op == Primitive::abs || node.op == Primitive::sign) &&
      x.dtype == DType::bool_)
    detail::raise(name, "is not defined for bool, got " + x.to_string(), node.where,
                  "convert with astype(x, kiln::i32) first, or use logical_not");
  return x;
}

template <class T>
T wrapping_neg(T v) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(std::make_unsigned_t<T>(0) - static_cast<std::make_unsigned_t<T>>(v));
  else return -v;
}

template <class T>
T unary_kernel(Primitive op, T x) {
  if constexpr (std::is_same_v<T, bool>) {
    if (op == Primitive::logical_not) return !x;
    return x;  // stop_gradient
  } else if constexpr (std::is_integral_v<T>) {
    switch (op) {
      case Primitive::neg: return wrapping_neg(x);
      case Primitive::abs: return x < 0 ? wrapping_neg(x) : x;
      case Primitive::sign: return static_cast<T>((x > 0) - (x < 0));
      default: return x;  // stop_gradient
    }
  } else {
    switch (op) {
      case Primitive::neg: return -x;
      case Primitive::abs: return std::abs(x);
      case Primitive::sign: return std::isnan(x) ? x : static_cast<T>((x > 0) - (x < 0));
      case Primitive::exp: return std::exp(x);
      case Primitive::log: return std::log(x);
      case Primitive::log1p: return std::log1p(x);
      case Primitive::expm1: return std::expm1(x);
      case Primitive::sqrt: return std::sqrt(x);
      case Primitive::rsqrt: return T(1) / std::sqrt(x);
      case Primitive::tanh: return std::tanh(x);
      case Primitive::logistic: {
        // Written per sign so exp never overflows.
        if (x >= 0) return T(1) / (T(1) + std::exp(-x));
        T e = std::exp(x);
        return e / (T(1) + e);
      }
      case Primitive::erf: return std::erf(x);
      case Primitive::sin: return std::sin(x);
      case Primitive::cos: return std::cos(x);
      case Primitive::floor: return std::floor(x);
      case Primitive::ceil: return std::ceil(x);
      case Primitive::round: return std::nearbyint(x);  // default rounding mode: half to even
      default: return x;  // stop_gradient
    }
  }
}

Array evaluate_unary(const Node& node, std::span<const Array> inputs) {
  const detail::ArrayImpl& x = *inputs[0].impl();
  Array result = detail::allocate(node.type);
  detail::ArrayImpl& out = *result.impl();
  int64_t n = x.type.size();
  detail::dispatch(x.type.dtype, [&]<class T>() {
    const T* in = x.data<T>();
    if (node.op == Primitive::convert) {
      detail::dispatch(node.type.dtype, [&]<class R>() {
        R* o = out.mutable_data<R>();
        for (int64_t i = 0; i < n; ++i) o[i] = detail::convert_element<R>(in[i]);
      });
    } else if (node.op == Primitive::is_nan) {
      bool* o = out.mutable_data<bool>();
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_floating_point_v<T>) o[i] = std::isnan(in[i]);
        else o[i] = false;
      }
    } else {
      T* o = out.mutable_data<T>();
      for (int64_t i = 0; i < n; ++i) o[i] = unary_kernel<T>(node.op, in[i]);
    }
  });
  return result;
}

std::string describe_convert(const Node& node) { return "dtype=" + std::string(dtype_name(node.attrs.dtype)); }

Array unary(Primitive op, const Array& x, Location where) {
  const auto& type = detail::impl_of(x, ir::primitive_name(op).data(), where).type;
  Array operand = x;
  // Transcendental functions of integers and bool compute in the default float (JAX).
  if (is_float_only(op) && !is_floating(type.dtype)) {
    if (op == Primitive::floor || op == Primitive::ceil || op == Primitive::round) return x;
    if (op == Primitive::is_nan) {
      return broadcast_to_shape(detail::literal(false, DType::bool_, false, where), type.shape, where);
    }
    operand = convert_to(x, DType::f32, type.weak, where);
  }
  if (op == Primitive::logical_not) operand = convert_to(x, DType::bool_, false, where);
  return detail::apply(op, operand, {}, where);
}

// ---- Derivatives -------------------------------------------------------------
// An elementwise function has a diagonal Jacobian, so the vjp and the jvp are
// the same product: the seed (cotangent or tangent) times f'(x), written with
// the output y where that is cheaper or more accurate.
Array scaled_by_derivative(const Node& node, const Array& x, const Array& y, const Array& seed) {
  Location w = node.where;
  auto times = [&](const Array& factor) { return mul(Operand(seed, w), Operand(factor, w)); };
  switch (node.op) {
    case Primitive::neg: return kiln::neg(seed, w);
    case Primitive::abs: return times(kiln::sign(x, w));  // 0 at x == 0, as JAX
    case Primitive::exp: return times(y);
    case Primitive::log: return div(Operand(seed, w), Operand(x, w));
    case Primitive::log1p: return div(Operand(seed, w), Operand(add(Operand(x, w), Operand(1, w)), w));
    case Primitive::expm1: return times(add(Operand(y, w), Operand(1, w)));
    case Primitive::sqrt: return div(Operand(mul(Operand(seed, w), Operand(0.5, w)), w), Operand(y, w));
    case Primitive::rsqrt:
      return times(div(Operand(mul(Operand(y, w), Operand(-0.5, w)), w), Operand(x, w)));
    case Primitive::tanh:
      // (1 - y)(1 + y) rather than 1 - y^2: no cancellation as |y| nears 1.
      return times(mul(Operand(sub(Operand(1, w), Operand(y, w)), w), Operand(add(Operand(1, w), Operand(y, w)), w)));
    case Primitive::logistic: return times(mul(Operand(y, w), Operand(sub(Operand(1, w), Operand(y, w)), w)));
    case Primitive::erf: {
      const double two_over_sqrt_pi = 1.1283791670955126;
      Array gaussian = kiln::exp(kiln::neg(mul(Operand(x, w), Operand(x, w)), w), w);
      return times(mul(Operand(gaussian, w), Operand(two_over_sqrt_pi, w)));
    }
    case Primitive::sin: return times(kiln::cos(x, w));
    case Primitive::cos: return kiln::neg(times(kiln::sin(x, w)), w);
    case Primitive::sign: case Primitive::floor: case Primitive::ceil: case Primitive::round:
      // Piecewise constant: zero almost everywhere. A zero (not a missing)
      // derivative lets gradients flow through them as zeros, as in JAX.
      return zeros_like(seed, w);
    default: break;
  }
  detail::raise(ir::primitive_name(node.op), "has no derivative rule for " + node.type.to_string(), w);
}

std::vector<Array> vjp_unary(const Node& node, std::span<const Array> inputs, const Array& output,
                             const Array& cotangent) {
  const detail::AbstractValue& x = inputs[0].impl()->type;
  if (node.op == Primitive::stop_gradient) return {Array()};
  if (node.op == Primitive::convert) {
    // Only a floating input has a cotangent; it takes the input's dtype back.
    if (!is_floating(x.dtype)) return {Array()};
    return {convert_to(cotangent, x.dtype, x.weak, node.where)};
  }
  return {scaled_by_derivative(node, inputs[0], output, cotangent)};
}

Array jvp_unary(const Node& node, std::span<const Array> inputs, const Array& output,
                std::span<const Array> tangents) {
  if (node.op == Primitive::stop_gradient) return zeros_like(output, node.where);
  if (node.op == Primitive::convert) return convert_to(tangents[0], node.type.dtype, node.type.weak, node.where);
  return scaled_by_derivative(node, inputs[0], output, tangents[0]);
}

}  // namespace

void register_unary_rules(RuleTable& table) {
#define KILN_PRIMITIVE(name, family)                                                          \
  if (std::string_view(#family) == "unary") {                                                 \
    table[static_cast<size_t>(Primitive::name)] = {&infer_unary, &evaluate_unary, nullptr,    \
                                                   &vjp_unary, &jvp_unary};                   \
  }
#include "ir/primitives.def"
#undef KILN_PRIMITIVE
  table[static_cast<size_t>(Primitive::convert)].describe = &describe_convert;
  for (Primitive op : {Primitive::logical_not, Primitive::is_nan}) {
    PrimitiveRules& entry = table[static_cast<size_t>(op)];
    entry.vjp = nullptr;
    entry.jvp = nullptr;
    entry.no_derivative = "bool result";
  }
}

}  // namespace ops

using ops::Primitive;

Array neg(const Array& x, Location where) { return ops::unary(Primitive::neg, x, where); }
Array abs(const Array& x, Location where) { return ops::unary(Primitive::abs, x, where); }
Array sign(const Array& x, Location where) { return ops::unary(Primitive::sign, x, where); }
Array exp(const Array& x, Location where) { return ops::unary(Primitive::exp, x, where); }
Array log(const Array& x, Location where) { return ops::unary(Primitive::log, x, where); }
Array log1p(const Array& x, Location where) { return ops::unary(Primitive::log1p, x, where); }
Array expm1(const Array& x, Location where) { return ops::unary(Primitive::expm1, x, where); }
Array sqrt(const Array& x, Location where) { return ops::unary(Primitive::sqrt, x, where); }
Array rsqrt(const Array& x, Location where) { return ops::unary(Primitive::rsqrt, x, where); }
Array tanh(const Array& x, Location where) { return ops::unary(Primitive::tanh, x, where); }
Array sigmoid(const Array& x, Location where) { return ops::unary(Primitive::logistic, x, where); }
Array erf(const Array& x, Location where) { return ops::unary(Primitive::erf, x, where); }
Array sin(const Array& x, Location where) { return ops::unary(Primitive::sin, x, where); }
Array cos(const Array& x, Location where) { return ops::unary(Primitive::cos, x, where); }
Array floor(const Array& x, Location where) { return ops::unary(Primitive::floor, x, where); }
Array ceil(const Array& x, Location where) { return ops::unary(Primitive::ceil, x, where); }
Array round(const Array& x, Location where) { return ops::unary(Primitive::round, x, where); }
Array logical_not(const Array& x, Location where) { return ops::unary(Primitive::logical_not, x, where); }
Array isnan(const Array& x, Location where) { return ops::unary(Primitive::is_nan, x, where); }
Array stop_gradient(const Array& x, Location where) { return ops::unary(Primitive::stop_gradient, x, where); }
Array square(const Array& x, Location where) { return mul(Operand(x, where), Operand(x, where)); }
// A select rather than maximum(x, 0): its derivative at 0 is 0 (as JAX's relu),
// where maximum would split a tie; NaN still propagates as in NumPy.
Array relu(const Array& x, Location where) {
  Array keep = logical_or(Operand(greater(Operand(x, where), Operand(0, where)), where), Operand(isnan(x, where), where));
  return kiln::where(Operand(keep, where), Operand(x, where), Operand(0, where));
}

Array astype(const Array& x, DType dtype, Location where) { return ops::convert_to(x, dtype, false, where); }

Array operator-(Operand x) {
  if (x.is_number()) return ops::unary(Primitive::neg, detail::literal(x.number(), ops::type_class(x).dtype, true, x.where()), x.where());
  return ops::unary(Primitive::neg, x.array(), x.where());
}
Array operator!(Operand x) {
  if (x.is_number()) return logical_not(detail::literal(x.number(), DType::bool_, false, x.where()), x.where());
  return logical_not(x.array(), x.where());
}

}  // namespace kiln
