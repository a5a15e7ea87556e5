// Elementwise unary primitives: the record of each (shape/dtype rule,
// reference kernel, derivative, cost, native lowering) and the public
// builders (neg, exp, ..., erfinv, astype, stop_gradient) with their
// composites (square, relu).
#include <cmath>
#include <complex>
#include <limits>
#include <numbers>
#include <type_traits>

#include "core/convert.h"
#include "core/dispatch.h"
#include "core/error_format.h"
#include "core/location_scope.h"
#include "ops/common/apply.h"
#include "ops/common/batching.h"
#include "ops/common/elementwise_result.h"
#include "ops/common/promotion.h"
#include "ops/elementwise/complex_forms.h"
#include "ops/elementwise/erf_inv.h"

namespace kiln {
namespace ops {
namespace {

constexpr bool is_complex_part(Primitive op) {
  return op == Primitive::conj || op == Primitive::real || op == Primitive::imag;
}

constexpr bool is_float_only(Primitive op) {
  return op == Primitive::exp || op == Primitive::exp2 || op == Primitive::log || op == Primitive::log2 ||
         op == Primitive::log10 || op == Primitive::log1p || op == Primitive::expm1 || op == Primitive::atan ||
         op == Primitive::sqrt || op == Primitive::rsqrt || op == Primitive::tanh || op == Primitive::logistic ||
         op == Primitive::erf || op == Primitive::erf_inv || op == Primitive::sin || op == Primitive::cos ||
         op == Primitive::floor || op == Primitive::ceil || op == Primitive::round || op == Primitive::is_nan;
}

// The primitives defined on complex numbers: arithmetic, the holomorphic
// functions std::complex provides, abs, NaN tests and the parts.
constexpr bool supports_complex(Primitive op) {
  return op == Primitive::neg || op == Primitive::abs || op == Primitive::sign || op == Primitive::exp ||
         op == Primitive::log || op == Primitive::log10 || op == Primitive::sqrt || op == Primitive::rsqrt ||
         op == Primitive::sin || op == Primitive::cos || op == Primitive::tanh || op == Primitive::is_nan ||
         op == Primitive::convert || op == Primitive::stop_gradient || is_complex_part(op);
}

/// The real dtype of a complex one's parts.
DType part_dtype(DType dtype) { return dtype == DType::c128 ? DType::f64 : DType::f32; }

AbstractValue infer_unary(const Node& node, std::span<const AbstractValue* const> inputs) {
  const AbstractValue& x = *inputs[0];
  std::string_view name = ir::primitive_name(node.op);
  if (node.op == Primitive::convert) return {node.attrs.dtype, !node.attrs.ints.empty(), x.shape};
  if (is_complex(x.dtype)) {
    if (!supports_complex(node.op))
      detail::raise(name, "is not defined for complex numbers, got " + x.to_string(), node.where,
                    "apply it to kiln::real(x) and kiln::imag(x), or to kiln::abs(x)");
    if (node.op == Primitive::is_nan) return {DType::bool_, false, x.shape};
    if (node.op == Primitive::abs || node.op == Primitive::real || node.op == Primitive::imag)
      return {part_dtype(x.dtype), x.weak, x.shape};
    return x;
  }
  if (is_complex_part(node.op))
    detail::raise(name, "needs a complex operand, got " + x.to_string(), node.where,
                  "call kiln::" + std::string(name) + ", which takes real arrays as NumPy does");
  if (is_float_only(node.op) && !is_floating(x.dtype))
    detail::raise(name, "needs a floating operand, got " + x.to_string(), node.where, "convert with astype first");
  if (node.op == Primitive::is_nan) return {DType::bool_, false, x.shape};
  if (node.op == Primitive::logical_not && x.dtype != DType::bool_)
    detail::raise(name, "needs a bool operand, got " + x.to_string(), node.where);
  if ((node.op == Primitive::neg || node.op == Primitive::abs || node.op == Primitive::sign) && x.dtype == DType::bool_)
    detail::raise(name, "is not defined for bool, got " + x.to_string(), node.where,
                  "convert with astype(x, kiln::i32) first, or use logical_not");
  return x;
}

template <class T>
T wrapping_neg(T v) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(std::make_unsigned_t<T>(0) - static_cast<std::make_unsigned_t<T>>(v));
  else return -v;
}

template <Primitive>
inline constexpr bool no_rule = false;

// ---- The record of each unary primitive ------------------------------------
// Each rule below is a chain over the primitive, resolved at compile time:
// every unary primitive of primitives.def instantiates it, so one without a
// reference kernel, a derivative or a lowering fails to compile instead of
// computing another primitive's result.

/// The reference kernel of one element. T is the operand's dtype (only
/// floating for the float-only primitives; infer_unary converts the rest).
template <Primitive op, class T>
T reference(T x) {
  if constexpr (is_complex_part(op)) return x;  // (only complex operands reach these: complex_reference)
  else if constexpr (op == Primitive::neg) return wrapping_neg(x);
  else if constexpr (op == Primitive::abs) {
    if constexpr (detail::is_floating_element<T>) return std::abs(x);  // abs(-0) is +0
    else return x < 0 ? wrapping_neg(x) : x;
  } else if constexpr (op == Primitive::sign) {
    if constexpr (detail::is_floating_element<T>)
      if (std::isnan(x)) return x;
    return static_cast<T>((x > 0) - (x < 0));
  } else if constexpr (op == Primitive::exp) return std::exp(x);
  else if constexpr (op == Primitive::exp2) return std::exp2(x);
  else if constexpr (op == Primitive::log) return std::log(x);
  else if constexpr (op == Primitive::log2) return std::log2(x);
  else if constexpr (op == Primitive::log10) return std::log10(x);
  else if constexpr (op == Primitive::atan) return std::atan(x);
  else if constexpr (op == Primitive::log1p) return std::log1p(x);
  else if constexpr (op == Primitive::expm1) return std::expm1(x);
  else if constexpr (op == Primitive::sqrt) return std::sqrt(x);
  else if constexpr (op == Primitive::rsqrt) return T(1) / std::sqrt(x);
  else if constexpr (op == Primitive::tanh) return std::tanh(x);
  else if constexpr (op == Primitive::logistic) {
    // Written per sign so exp never overflows.
    if (x >= 0) return T(1) / (T(1) + std::exp(-x));
    T e = std::exp(x);
    return e / (T(1) + e);
  } else if constexpr (op == Primitive::erf) return std::erf(x);
  else if constexpr (op == Primitive::erf_inv) {
    NumberMath<detail::compute_type<T>> math;
    return T(erf_inv_of(math, detail::compute_type<T>(x)));
  } else if constexpr (op == Primitive::sin) return std::sin(x);
  else if constexpr (op == Primitive::cos) return std::cos(x);
  else if constexpr (op == Primitive::floor) return std::floor(x);
  else if constexpr (op == Primitive::ceil) return std::ceil(x);
  else if constexpr (op == Primitive::round) return std::nearbyint(x);  // default rounding mode: half to even
  else if constexpr (op == Primitive::logical_not) return !x;
  else if constexpr (op == Primitive::stop_gradient) return x;
  else static_assert(no_rule<op>, "unary primitive without a reference kernel");
}

/// The reference kernel of one complex element, R the result's element
/// (the part's type for abs, real and imag). std::complex computes each
/// function with C99's special values (as NumPy's do).
template <Primitive op, class T, class R>
R complex_reference(T x) {
  using Part = typename T::value_type;
  if constexpr (op == Primitive::neg) return -x;
  else if constexpr (op == Primitive::abs) return std::abs(x);  // hypot: no overflow in the squares
  else if constexpr (op == Primitive::real) return x.real();
  else if constexpr (op == Primitive::imag) return x.imag();
  else if constexpr (op == Primitive::conj) return std::conj(x);
  else if constexpr (op == Primitive::sign) {
    // x / |x|, 0 at 0 (NumPy 2's and JAX's); NaN parts give NaN.
    if (detail::is_nan_element(x))
      return T(std::numeric_limits<Part>::quiet_NaN(), std::numeric_limits<Part>::quiet_NaN());
    Part magnitude = std::abs(x);
    if (magnitude == 0) return T(0);
    return T(x.real() / magnitude, x.imag() / magnitude);
  } else if constexpr (op == Primitive::exp) return std::exp(x);
  else if constexpr (op == Primitive::log) return std::log(x);
  else if constexpr (op == Primitive::log10) return std::log10(x);
  else if constexpr (op == Primitive::sqrt) return std::sqrt(x);
  else if constexpr (op == Primitive::rsqrt) return T(1) / std::sqrt(x);
  else if constexpr (op == Primitive::sin) return std::sin(x);
  else if constexpr (op == Primitive::cos) return std::cos(x);
  else if constexpr (op == Primitive::tanh) return std::tanh(x);
  else if constexpr (op == Primitive::stop_gradient) return x;
  else return R();  // refused by infer_unary
}

/// The derivative as a product: the seed (cotangent or tangent) times f'(x),
/// written with the output y where that is cheaper or more accurate. An
/// elementwise function has a diagonal Jacobian, so vjp and jvp share it.
template <Primitive op>
Array derivative(const Array& x, const Array& y, const Array& seed) {
  if constexpr (op == Primitive::neg) return -seed;
  // 0 at x == 0, the mean of the slopes either side (torch and MLX; JAX
  // takes +1): softplus's slope of one half at 0 relies on it.
  else if constexpr (op == Primitive::abs) return seed * kiln::sign(x);
  else if constexpr (op == Primitive::exp) return seed * y;
  else if constexpr (op == Primitive::exp2) return seed * (y * std::numbers::ln2);
  else if constexpr (op == Primitive::log) return seed / x;
  else if constexpr (op == Primitive::log2) return seed / (x * std::numbers::ln2);
  else if constexpr (op == Primitive::log10) return seed / (x * std::numbers::ln10);
  else if constexpr (op == Primitive::atan) return seed / (x * x + 1);
  else if constexpr (op == Primitive::log1p) return seed / (x + 1);
  else if constexpr (op == Primitive::expm1) return seed * (y + 1);
  else if constexpr (op == Primitive::sqrt) return seed * 0.5 / y;
  else if constexpr (op == Primitive::rsqrt) return seed * (y * -0.5 / x);
  // (1 - y)(1 + y) rather than 1 - y^2: no cancellation as |y| nears 1.
  else if constexpr (op == Primitive::tanh) return seed * ((1 - y) * (1 + y));
  else if constexpr (op == Primitive::logistic) return seed * (y * (1 - y));
  else if constexpr (op == Primitive::erf) return seed * (kiln::exp(-(x * x)) * 1.1283791670955126);  // 2/sqrt(pi)
  // The inverse's slope, 1 / erf'(y): infinite at +-1, as in JAX.
  else if constexpr (op == Primitive::erf_inv) return seed * (kiln::exp(y * y) * (std::sqrt(std::numbers::pi) / 2));
  else if constexpr (op == Primitive::sin) return seed * kiln::cos(x);
  else if constexpr (op == Primitive::cos) return -(seed * kiln::sin(x));
  else if constexpr (is_complex_part(op)) return seed;  // never reached: vjp and jvp differentiate the parts
  else if constexpr (op == Primitive::sign || op == Primitive::floor || op == Primitive::ceil || op == Primitive::round)
    // Piecewise constant: zero almost everywhere. A zero (not a missing)
    // derivative lets gradients flow through them as zeros, as in JAX.
    return zeros_like(seed);
  else static_assert(no_rule<op>, "unary primitive without a derivative");
}

/// The native code of one element.
template <Primitive op>
ScalarValue lower(ScalarEmitter& e, const Node& node, std::span<const ScalarValue> operands,
                  std::span<const DType> dtypes) {
  ScalarValue x = operands[0];
  DType dtype = dtypes[0];
  if constexpr (op == Primitive::neg) return e.neg(x, dtype);
  else if constexpr (op == Primitive::abs) return e.abs(x, dtype);
  else if constexpr (op == Primitive::sign) {
    if (!is_floating(dtype)) {
      ScalarValue zero = e.constant(0, dtype);
      return e.sub(e.convert(e.compare(Comparison::gt, x, zero, dtype), DType::bool_, dtype),
                   e.convert(e.compare(Comparison::lt, x, zero, dtype), DType::bool_, dtype), dtype);
    }
    ScalarValue zero = e.constant(0, dtype);
    ScalarValue result = e.select(e.compare(Comparison::gt, x, zero, dtype), e.constant(1, dtype),
                                  e.select(e.compare(Comparison::lt, x, zero, dtype), e.constant(-1, dtype), zero));
    return e.select(e.is_nan(x), x, result);
  } else if constexpr (op == Primitive::exp) return e.math(MathFunction::exp, x);
  else if constexpr (op == Primitive::exp2) return e.math(MathFunction::exp2, x);
  else if constexpr (op == Primitive::log) return e.math(MathFunction::log, x);
  else if constexpr (op == Primitive::log2) return e.math(MathFunction::log2, x);
  else if constexpr (op == Primitive::log10) return e.math(MathFunction::log10, x);
  else if constexpr (op == Primitive::atan) return e.math(MathFunction::atan, x);
  else if constexpr (op == Primitive::log1p) return e.math(MathFunction::log1p, x);
  else if constexpr (op == Primitive::expm1) return e.math(MathFunction::expm1, x);
  else if constexpr (op == Primitive::sqrt) return e.sqrt(x);
  else if constexpr (op == Primitive::rsqrt) return e.div(e.constant(1, dtype), e.sqrt(x));
  else if constexpr (op == Primitive::tanh) return e.math(MathFunction::tanh, x);
  else if constexpr (op == Primitive::logistic) return e.math(MathFunction::logistic, x);
  else if constexpr (op == Primitive::erf) return e.math(MathFunction::erf, x);
  else if constexpr (op == Primitive::erf_inv) {
    EmitterMath math{e, dtype == DType::f64 ? DType::f64 : DType::f32};
    return erf_inv_of(math, x);
  } else if constexpr (op == Primitive::sin) return e.math(MathFunction::sin, x);
  else if constexpr (op == Primitive::cos) return e.math(MathFunction::cos, x);
  else if constexpr (op == Primitive::floor) return e.round(Rounding::floor, x);
  else if constexpr (op == Primitive::ceil) return e.round(Rounding::ceil, x);
  else if constexpr (op == Primitive::round) return e.round(Rounding::nearest_even, x);
  else if constexpr (op == Primitive::logical_not) return e.logical_not(x);
  else if constexpr (op == Primitive::is_nan) return e.is_nan(x);
  else if constexpr (op == Primitive::convert) return e.convert(x, dtype, node.type.dtype);
  else if constexpr (op == Primitive::stop_gradient) return x;
  else if constexpr (is_complex_part(op)) return x;  // never reached: complex nodes are not fused (their row says why)
  else static_assert(no_rule<op>, "unary primitive without a native lowering");
}

/// Vector operations per element in a fused loop (see PrimitiveRules::cost).
constexpr int cost(Primitive op) {
  bool transcendental = op == Primitive::exp || op == Primitive::exp2 || op == Primitive::log ||
                        op == Primitive::log2 || op == Primitive::log10 || op == Primitive::atan ||
                        op == Primitive::log1p || op == Primitive::expm1 || op == Primitive::tanh ||
                        op == Primitive::logistic || op == Primitive::erf || op == Primitive::sin ||
                        op == Primitive::cos;
  if (op == Primitive::erf_inv) return 256;  // about 17 transcendental functions
  return transcendental ? 16 : 1;
}

template <Primitive op>
Array evaluate(const Node& node, std::span<const Array> inputs) {
  const detail::ArrayImpl& x = *detail::impl(inputs[0]);
  Array result = elementwise_result(node, inputs);
  detail::ArrayImpl& out = *detail::impl(result);
  int64_t n = x.type.size();
  detail::dispatch(x.type.dtype, [&]<class T>() {
    const T* in = x.data<T>();
    if constexpr (op == Primitive::convert) {
      detail::dispatch(node.type.dtype, [&]<class R>() {
        R* o = out.mutable_data<R>();
        for (int64_t i = 0; i < n; ++i) o[i] = detail::convert_element<R>(in[i]);
      });
    } else if constexpr (op == Primitive::is_nan) {
      bool* o = out.mutable_data<bool>();
      for (int64_t i = 0; i < n; ++i) {
        o[i] = detail::is_nan_element(in[i]);
      }
    } else if constexpr (detail::is_complex_element<T>) {
      using R = std::conditional_t<op == Primitive::abs || op == Primitive::real || op == Primitive::imag,
                                   typename T::value_type, T>;
      R* o = out.mutable_data<R>();
      for (int64_t i = 0; i < n; ++i) o[i] = complex_reference<op, T, R>(in[i]);
    } else if constexpr (is_complex_part(op)) {
      KILN_CHECK(false, "conj, real or imag reached its kernel with a real operand");
    } else if constexpr (is_float_only(op) && !detail::is_floating_element<T>) {
      KILN_CHECK(false, "float-only unary primitive reached its kernel with an integer operand");
    } else if constexpr (std::is_same_v<T, bool> && op != Primitive::logical_not && op != Primitive::stop_gradient) {
      KILN_CHECK(false, "unary primitive reached its kernel with a bool operand");
    } else if constexpr (!std::is_same_v<T, bool> && op == Primitive::logical_not) {
      KILN_CHECK(false, "logical_not reached its kernel with a non-bool operand");
    } else {
      T* o = out.mutable_data<T>();
      for (int64_t i = 0; i < n; ++i) o[i] = reference<op, T>(in[i]);
    }
  });
  return result;
}

// Complex derivatives follow JAX's convention: a vjp is the transpose of
// the jvp (never its conjugate transpose), so a holomorphic f has
// vjp(c) = c * f'(z) like a real one, and grad of a real-valued f of z = x + iy
// is df/dx - i df/dy (PyTorch's is its conjugate). The parts are real-linear
// maps: real's transpose takes c to c + 0i, imag's to -ic, conj's to conj(c).
// abs of complex z has the jvp t -> real(t conj(z) / |z|), whose transpose is
// c -> c conj(z) / |z| (0 at z = 0, as JAX's).
bool complex_operand(const Array& x) { return is_complex(detail::impl(x)->type.dtype); }

Array complex_abs_direction(const Array& z, const Array& magnitude) {
  Array safe = kiln::where(magnitude == 0, 1, magnitude);
  return kiln::conj(z) / safe;
}

template <Primitive op>
std::vector<Array> vjp(const Node& node, std::span<const Array> inputs, const Array& output, const Array& cotangent) {
  if constexpr (op == Primitive::stop_gradient) {
    return {Array()};
  } else if constexpr (op == Primitive::convert) {
    // Only a floating or complex input has a cotangent; it takes the input's
    // dtype back (a complex cotangent of a real input keeps its real part).
    const detail::AbstractValue& x = detail::impl(inputs[0])->type;
    if (!is_floating(x.dtype) && !is_complex(x.dtype)) return {Array()};
    return {convert_to(cotangent, x.dtype, x.weak, node.where)};
  } else if constexpr (op == Primitive::conj) {
    return {kiln::conj(cotangent)};
  } else if constexpr (op == Primitive::real || op == Primitive::imag) {
    const detail::AbstractValue& x = detail::impl(inputs[0])->type;
    Array lifted = convert_to(cotangent, x.dtype, x.weak, node.where);
    if constexpr (op == Primitive::real) return {lifted};
    else return {lifted * std::complex<double>(0, -1)};
  } else if constexpr (op == Primitive::abs) {
    if (complex_operand(inputs[0])) return {cotangent * complex_abs_direction(inputs[0], output)};
    return {derivative<op>(inputs[0], output, cotangent)};
  } else {
    return {derivative<op>(inputs[0], output, cotangent)};
  }
}

template <Primitive op>
Array jvp(const Node& node, std::span<const Array> inputs, const Array& output, std::span<const Array> tangents) {
  if constexpr (op == Primitive::stop_gradient) return zeros_like(output);
  else if constexpr (op == Primitive::convert)
    return convert_to(tangents[0], node.type.dtype, node.type.weak, node.where);
  else if constexpr (op == Primitive::conj) return kiln::conj(tangents[0]);
  else if constexpr (op == Primitive::real) return kiln::real(tangents[0]);
  else if constexpr (op == Primitive::imag) return kiln::imag(tangents[0]);
  else if constexpr (op == Primitive::abs) {
    if (complex_operand(inputs[0])) return kiln::real(tangents[0] * complex_abs_direction(inputs[0], output));
    return derivative<op>(inputs[0], output, tangents[0]);
  } else return derivative<op>(inputs[0], output, tangents[0]);
}

std::string describe_convert(const Node& node) { return "dtype=" + std::string(dtype_name(node.attrs.dtype)); }

template <Primitive op>
PrimitiveRules row() {
  PrimitiveRules rules{.infer = &infer_unary, .evaluate = &evaluate<op>};
  if constexpr (op == Primitive::logical_not || op == Primitive::is_nan) {
    rules.no_derivative = "bool result";
  } else {
    rules.vjp = &vjp<op>;
    rules.jvp = &jvp<op>;
  }
  if constexpr (op == Primitive::convert) rules.describe = &describe_convert;
  rules.batch = &batch_elementwise;
  if constexpr (is_complex_part(op)) {
    // Complex numbers stay out of native code (backend/llvm/plan.h, touches_complex).
    rules.fusion = Fusion::kernel;
    rules.no_native_lowering = "complex operands only: compiled graphs call the reference kernel";
  } else {
    rules.fusion = Fusion::elementwise;
    rules.lower = &lower<op>;
  }
  rules.cost = cost(op);
  return rules;
}

Array unary(Primitive op, const Array& x, Location where) {
  const auto& type = detail::impl_of(x, ir::primitive_name(op).data(), where).type;
  Array operand = x;
  // Transcendental functions of integers and bool compute in the default float (JAX).
  if (is_float_only(op) && !is_floating(type.dtype) && !is_complex(type.dtype)) {
    if (op == Primitive::floor || op == Primitive::ceil || op == Primitive::round) return x;
    if (op == Primitive::is_nan) {
      return broadcast_to_shape(detail::literal(false, DType::bool_, false, where), type.shape, where);
    }
    operand = convert_to(x, DType::f32, type.weak, where);
  }
  if (op == Primitive::logical_not) operand = convert_to(x, DType::bool_, false, where);
  return detail::apply(op, operand, {}, where);
}

// The primitive for real arguments; complex ones go to their composite
// (ops/elementwise/complex_forms.h), named as the user's operation.
Array real_primitive_or(Primitive op, const char* operation, Array (*complex_form)(const Array&), const Array& x,
                        Location where) {
  if (!is_complex(detail::impl_of(x, operation, where).type.dtype)) return unary(op, x, where);
  detail::OperationScope at(operation, where);
  return complex_form(x);
}

}  // namespace

void register_unary_rules(RuleTable& table) {
  register_family<ir::Family::unary>(table, []<Primitive op>() { return row<op>(); });
}

}  // namespace ops

using ops::Primitive;

Array neg(const Array& x, Location where) { return ops::unary(Primitive::neg, x, where); }
Array abs(const Array& x, Location where) { return ops::unary(Primitive::abs, x, where); }
Array sign(const Array& x, Location where) { return ops::unary(Primitive::sign, x, where); }
Array exp(const Array& x, Location where) { return ops::unary(Primitive::exp, x, where); }
Array exp2(const Array& x, Location where) { return ops::unary(Primitive::exp2, x, where); }
Array log(const Array& x, Location where) { return ops::unary(Primitive::log, x, where); }
Array log2(const Array& x, Location where) {
  return ops::real_primitive_or(Primitive::log2, "log2", &ops::complex_log2, x, where);
}
Array log10(const Array& x, Location where) { return ops::unary(Primitive::log10, x, where); }
Array arctan(const Array& x, Location where) {
  return ops::real_primitive_or(Primitive::atan, "arctan", &ops::complex_arctan, x, where);
}
Array log1p(const Array& x, Location where) {
  return ops::real_primitive_or(Primitive::log1p, "log1p", &ops::complex_log1p, x, where);
}
Array expm1(const Array& x, Location where) {
  return ops::real_primitive_or(Primitive::expm1, "expm1", &ops::complex_expm1, x, where);
}
Array sqrt(const Array& x, Location where) { return ops::unary(Primitive::sqrt, x, where); }
Array rsqrt(const Array& x, Location where) { return ops::unary(Primitive::rsqrt, x, where); }
Array tanh(const Array& x, Location where) { return ops::unary(Primitive::tanh, x, where); }
Array sigmoid(const Array& x, Location where) { return ops::unary(Primitive::logistic, x, where); }
Array erf(const Array& x, Location where) { return ops::unary(Primitive::erf, x, where); }
Array erfinv(const Array& x, Location where) { return ops::unary(Primitive::erf_inv, x, where); }
Array sin(const Array& x, Location where) { return ops::unary(Primitive::sin, x, where); }
Array cos(const Array& x, Location where) { return ops::unary(Primitive::cos, x, where); }
Array floor(const Array& x, Location where) { return ops::unary(Primitive::floor, x, where); }
Array ceil(const Array& x, Location where) { return ops::unary(Primitive::ceil, x, where); }
Array round(const Array& x, Location where) { return ops::unary(Primitive::round, x, where); }
Array logical_not(const Array& x, Location where) { return ops::unary(Primitive::logical_not, x, where); }
Array isnan(const Array& x, Location where) { return ops::unary(Primitive::is_nan, x, where); }
Array stop_gradient(const Array& x, Location where) { return ops::unary(Primitive::stop_gradient, x, where); }

// Of real arrays, NumPy's: conj and real are the array, imag is zeros.
Array conj(const Array& x, Location where) {
  if (!is_complex(detail::impl_of(x, "conj", where).type.dtype)) return x;
  return ops::unary(Primitive::conj, x, where);
}
Array real(const Array& x, Location where) {
  if (!is_complex(detail::impl_of(x, "real", where).type.dtype)) return x;
  return ops::unary(Primitive::real, x, where);
}
Array imag(const Array& x, Location where) {
  const auto& type = detail::impl_of(x, "imag", where).type;
  if (!is_complex(type.dtype))
    return ops::broadcast_to_shape(detail::literal(0, type.dtype, type.weak, where), type.shape, where);
  return ops::unary(Primitive::imag, x, where);
}
Array angle(const Array& x, Location where) {
  detail::OperationScope at("angle", where);
  return arctan2(imag(x), real(x));
}
Array square(const Array& x, Location where) {
  detail::OperationScope at("square", where);
  return x * x;
}
// A select rather than maximum(x, 0): its derivative at 0 is 0 (as JAX's relu),
// where maximum would split a tie; NaN still propagates as in NumPy.
Array relu(const Array& x, Location where) {
  detail::OperationScope at("relu", where);
  return kiln::where(logical_or(x > 0, isnan(x)), x, 0);
}

Array astype(const Array& x, DType dtype, Location where) { return ops::convert_to(x, dtype, false, where); }

Array operator-(Operand x) {
  if (x.is_number())
    return ops::unary(Primitive::neg, detail::literal(x.number(), ops::type_class(x).dtype, true, x.where()),
                      x.where());
  return ops::unary(Primitive::neg, x.array(), x.where());
}
Array operator!(Operand x) {
  if (x.is_number()) return logical_not(detail::literal(x.number(), DType::bool_, false, x.where()), x.where());
  return logical_not(x.array(), x.where());
}

}  // namespace kiln
