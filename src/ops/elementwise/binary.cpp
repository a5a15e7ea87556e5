// Elementwise binary primitives (and select): the record of each (shape/dtype
// rule, reference kernel, derivative, cost, native lowering) and the public
// builders with NumPy broadcasting and JAX promotion.
#include <cmath>
#include <type_traits>
#include <utility>

#include "core/dispatch.h"
#include "core/error_format.h"
#include "core/wrapping.h"
#include "ops/common/apply.h"
#include "ops/common/batching.h"
#include "ops/common/elementwise_result.h"
#include "ops/common/promotion.h"

namespace kiln {
namespace ops {
namespace {

constexpr bool is_comparison(Primitive op) {
  return op == Primitive::eq || op == Primitive::ne || op == Primitive::lt || op == Primitive::le ||
         op == Primitive::gt || op == Primitive::ge;
}
constexpr bool is_logical(Primitive op) { return op == Primitive::logical_and || op == Primitive::logical_or; }
// Integers and bool become the default float first (true division, as NumPy's and JAX's).
constexpr bool is_float_only(Primitive op) {
  return op == Primitive::div || op == Primitive::atan2 || op == Primitive::copysign || op == Primitive::nextafter;
}
// Undefined for bool operands (NumPy's floor_divide and remainder of bool are
// those of int8; kiln asks for the conversion).
constexpr bool is_numeric_only(Primitive op) {
  return op == Primitive::sub || op == Primitive::div || op == Primitive::pow || op == Primitive::floor_divide ||
         op == Primitive::remainder;
}

// Complex numbers have arithmetic and equality; they have no order (the
// Array API standard leaves comparisons of them unspecified and JAX refuses
// them), no floor, no sign to copy and no next representable number.
constexpr bool supports_complex(Primitive op) {
  return op == Primitive::add || op == Primitive::sub || op == Primitive::mul || op == Primitive::div ||
         op == Primitive::pow || op == Primitive::eq || op == Primitive::ne || op == Primitive::select;
}

[[noreturn]] void raise_complex(std::string_view name, const std::string& a, const std::string& b, Location where) {
  bool ordering = name == "lt" || name == "le" || name == "gt" || name == "ge" || name == "less" ||
                  name == "less_equal" || name == "greater" || name == "greater_equal" || name == "max" ||
                  name == "min" || name == "maximum" || name == "minimum" || name == "clip";
  detail::raise(name, "is not defined for complex numbers, got " + a + " and " + b, where,
                ordering ? "complex numbers have no order: compare kiln::real(x), kiln::imag(x) or kiln::abs(x)"
                         : "apply it to kiln::real(x) and kiln::imag(x), or to kiln::abs(x)");
}
[[noreturn]] void raise_complex(std::string_view name, const AbstractValue& a, const AbstractValue& b, Location where) {
  raise_complex(name, a.to_string(), b.to_string(), where);
}

AbstractValue infer_binary(const Node& node, std::span<const AbstractValue* const> inputs) {
  std::string_view name = ir::primitive_name(node.op);
  size_t first = node.op == Primitive::select ? 1 : 0;
  if (inputs.size() != first + 2)
    detail::raise(name, "takes " + std::to_string(first + 2) + " operands, got " + std::to_string(inputs.size()),
                  node.where);
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
  if (a.dtype == DType::bool_ && is_numeric_only(node.op))
    detail::raise(name, "is not defined for bool operands " + a.to_string() + " and " + b.to_string(), node.where,
                  "convert with astype(x, kiln::i32) first, or use logical_and/logical_or/logical_not");
  if (is_complex(a.dtype) && !supports_complex(node.op)) raise_complex(name, a, b, node.where);
  if (is_float_only(node.op) && !is_floating(a.dtype) && !is_complex(a.dtype))
    detail::raise(name, "needs floating operands, got " + a.to_string(), node.where);
  return {a.dtype, a.weak && b.weak, a.shape};
}

template <class T>
T integer_pow(T base, T exponent) {
  using U = detail::wrapping_type<T>;
  if constexpr (std::is_signed_v<T>)
    if (exponent < 0) return base == 1 ? T(1) : base == -1 ? (exponent % 2 ? T(-1) : T(1)) : T(0);
  U result = 1, factor = static_cast<U>(base);
  for (T e = exponent; e > 0; e >>= 1) {
    if (e & 1) result *= factor;
    factor *= factor;
  }
  return static_cast<T>(result);
}

/// NumPy's integer floor division and remainder (the remainder has the
/// divisor's sign): division by 0 gives 0 for both, MIN / -1 wraps to MIN.
template <class T>
std::pair<T, T> integer_divmod(T a, T b) {
  if (b == 0) return {T(0), T(0)};
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return {static_cast<T>(std::make_unsigned_t<T>(0) - static_cast<std::make_unsigned_t<T>>(a)), T(0)};
  }
  T quotient = a / b, remainder = a % b;
  if (remainder != 0 && ((remainder < 0) != (b < 0))) return {T(quotient - 1), T(remainder + b)};
  return {quotient, remainder};
}

/// NumPy's npy_divmod for floats, step by step (so the native code, written
/// the same way, agrees bit for bit): the quotient (a - fmod(a, b)) / b,
/// floored and snapped to the nearest integer, and the remainder with the
/// divisor's sign. A zero divisor gives a / b and fmod's NaN.
template <class T>
std::pair<T, T> floating_divmod(T a, T b) {
  T mod = std::fmod(a, b);
  if (b == 0) return {a / b, mod};
  T div = (a - mod) / b;
  if (mod != 0) {  // true for NaN, as C's `if (mod)`
    if ((b < 0) != (mod < 0)) {
      mod += b;
      div -= 1;
    }
  } else {
    mod = std::copysign(T(0), b);
  }
  if (div == 0) return {std::copysign(T(0), a / b), mod};
  T floor_div = std::floor(div);
  if (div - floor_div > T(0.5)) floor_div += 1;
  return {floor_div, mod};
}

template <class T>
std::pair<T, T> numpy_divmod(T a, T b) {
  if constexpr (detail::is_floating_element<T>) return floating_divmod(a, b);
  else return integer_divmod(a, b);
}

template <Primitive>
inline constexpr bool no_rule = false;

// ---- The record of each binary primitive -----------------------------------
// Each rule below is a chain over the primitive, resolved at compile time:
// every binary primitive of primitives.def instantiates it, so one without a
// reference kernel, a derivative or a lowering fails to compile instead of
// computing another primitive's result.

/// The reference kernel of one element pair, T the operands' dtype. Integers
/// wrap on overflow, as NumPy does (through unsigned arithmetic, without UB);
/// bool add/max are "or" and mul/min "and".
template <Primitive op, class T>
auto real_reference(T a, T b) {
  using U = detail::wrapping_type<std::conditional_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, T, int>>;
  constexpr bool boolean = std::is_same_v<T, bool>, integral = std::is_integral_v<T> && !boolean;
  if constexpr (op == Primitive::add) {
    if constexpr (boolean) return T(a || b);
    else if constexpr (integral) return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    else return a + b;
  } else if constexpr (op == Primitive::sub) {
    if constexpr (integral) return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
    else return T(a - b);
  } else if constexpr (op == Primitive::mul) {
    if constexpr (boolean) return T(a && b);
    else if constexpr (integral) return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    else return a * b;
  } else if constexpr (op == Primitive::div) return T(a / b);
  else if constexpr (op == Primitive::pow) {
    if constexpr (detail::is_floating_element<T>) return std::pow(a, b);
    else if constexpr (integral) return integer_pow(a, b);
    else return T(a);  // bool: rejected by the shape rule
  } else if constexpr (op == Primitive::atan2) return T(std::atan2(a, b));
  else if constexpr (op == Primitive::floor_divide || op == Primitive::remainder) {
    if constexpr (boolean) return T(a);  // rejected by the shape rule
    else return op == Primitive::floor_divide ? numpy_divmod(a, b).first : numpy_divmod(a, b).second;
  } else if constexpr (op == Primitive::copysign) return T(std::copysign(a, b));
  else if constexpr (op == Primitive::nextafter) return T(std::nextafter(a, b));
  else if constexpr (op == Primitive::max || op == Primitive::min) {
    bool largest = op == Primitive::max;
    if constexpr (boolean) return T(largest ? (a || b) : (a && b));
    else if constexpr (detail::is_floating_element<T>) {
      if (std::isnan(a) || std::isnan(b)) return a + b;
    }
    return largest ? (a > b ? a : b) : (a < b ? a : b);
  } else if constexpr (op == Primitive::eq) return a == b;
  else if constexpr (op == Primitive::ne) return a != b;
  else if constexpr (op == Primitive::lt) return a < b;
  else if constexpr (op == Primitive::le) return a <= b;
  else if constexpr (op == Primitive::gt) return a > b;
  else if constexpr (op == Primitive::ge) return a >= b;
  else if constexpr (op == Primitive::logical_and) return T(a && b);
  else if constexpr (op == Primitive::logical_or) return T(a || b);
  else static_assert(no_rule<op>, "binary primitive without a reference kernel");
}

/// Complex numbers: arithmetic, pow and (in)equality; infer_binary refuses
/// the rest. pow(a, 0) is 1 and pow(0, b) is 0 for a positive real b, as
/// NumPy's, where exp(b log a) would give NaN.
template <Primitive op, class T>
auto complex_reference(T a, T b) {
  if constexpr (op == Primitive::add) return T(a + b);
  else if constexpr (op == Primitive::sub) return T(a - b);
  else if constexpr (op == Primitive::mul) return T(a * b);
  else if constexpr (op == Primitive::div) return T(a / b);
  else if constexpr (op == Primitive::pow) {
    if (b == T(0)) return T(1);
    if (a == T(0) && b.imag() == 0 && b.real() > 0) return T(0);
    return T(std::pow(a, b));
  } else if constexpr (op == Primitive::eq) return a == b;
  else if constexpr (op == Primitive::ne) return a != b;
  else if constexpr (is_comparison(op)) return false;  // refused by infer_binary
  else return T(0);                                    // refused by infer_binary
}

template <Primitive op, class T>
auto reference(T a, T b) {
  if constexpr (detail::is_complex_element<T>) return complex_reference<op>(a, b);
  else return real_reference<op>(a, b);
}

template <Primitive op>
Array evaluate(const Node& node, std::span<const Array> inputs) {
  Array result = elementwise_result(node, inputs);
  detail::ArrayImpl& out = *detail::impl(result);
  int64_t n = node.type.size();
  if constexpr (op == Primitive::select) {
    const bool* cond = detail::impl(inputs[0])->data<bool>();
    detail::dispatch(node.type.dtype, [&]<class T>() {
      const T* a = detail::impl(inputs[1])->data<T>();
      const T* b = detail::impl(inputs[2])->data<T>();
      T* o = out.mutable_data<T>();
      for (int64_t i = 0; i < n; ++i) o[i] = cond[i] ? a[i] : b[i];
    });
  } else {
    detail::dispatch(detail::impl(inputs[0])->type.dtype, [&]<class T>() {
      const T* a = detail::impl(inputs[0])->data<T>();
      const T* b = detail::impl(inputs[1])->data<T>();
      using R = std::conditional_t<is_comparison(op), bool, T>;
      using C = detail::compute_type<T>;  // f16 and bf16 compute in f32, rounded on store
      R* o = out.mutable_data<R>();
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<R>(reference<op, C>(C(a[i]), C(b[i])));
    });
  }
  return result;
}

}  // namespace

Array binary(Primitive op, const char* name, const Operand& a, const Operand& b) {
  Location where = a.where();
  // The common case — two arrays of one dtype, weak flag and shape — needs no
  // promotion, conversion or broadcast; skipping that work keeps tracing cheap.
  if (!a.is_number() && !b.is_number() && !is_logical(op)) {
    const auto& ta = detail::impl_of(a.array(), name, where).type;
    const auto& tb = detail::impl_of(b.array(), name, where).type;
    bool ready = ta == tb && ta.dtype != DType::bool_ && (!is_float_only(op) || is_floating(ta.dtype)) &&
                 (!is_complex(ta.dtype) || supports_complex(op));
    if (ready) return detail::apply(op, a.array(), b.array(), {}, where);
  }
  static const Shape scalar_shape;
  const Shape& sa = a.is_number() ? scalar_shape : detail::impl_of(a.array(), name, where).type.shape;
  const Shape& sb = b.is_number() ? scalar_shape : detail::impl_of(b.array(), name, where).type.shape;
  TypeClass target = promote(type_class(a), type_class(b));
  auto describe_operand = [&](const Operand& o, const Shape& shape) {
    if (o.is_number()) return "the number " + o.number().to_string();
    const auto& type = detail::impl_of(o.array(), name, where).type;
    return std::string(dtype_name(type.dtype)) + shape_string(shape);
  };
  if (is_complex(target.dtype) && !supports_complex(op) && !is_logical(op))
    raise_complex(name, describe_operand(a, sa), describe_operand(b, sb), where);
  if (is_float_only(op) && !is_floating(target.dtype) && !is_complex(target.dtype)) target = {DType::f32, target.weak};
  if (is_logical(op)) target = {DType::bool_, false};
  if (target.dtype == DType::bool_ && is_numeric_only(op)) {
    auto describe = [&](const Operand& o, const Shape& shape) {
      return o.is_number() ? "the number " + o.number().to_string() : "bool" + shape_string(shape);
    };
    detail::raise(name, "is not defined for bool operands, got " + describe(a, sa) + " and " + describe(b, sb), where,
                  "convert with astype(x, kiln::i32) first, or use logical_and/logical_or/logical_not");
  }
  Shape shape = broadcast_shapes(sa, sb, name, where);
  // Eagerly, an array with a number on a large array: compile literal,
  // broadcast and operation together instead of materializing the broadcast.
  const detail::EagerCompiler* compiler =
      a.is_number() != b.is_number() && !detail::tracing_active() && !is_complex(target.dtype)
          ? detail::eager_compiler_for(shape_size(shape))
          : nullptr;
  if (compiler) {
    const Operand& array = a.is_number() ? b : a;
    auto build = [&](std::span<const Array> placeholders) {
      Operand traced(placeholders[0], array.where());
      return binary(op, name, a.is_number() ? a : traced, a.is_number() ? traced : b);
    };
    return detail::run_compiled_eager(*compiler, std::span<const Array>(&array.array(), 1), build, name,
                                      detail::AbstractValue{target.dtype, target.weak, shape}, where);
  }
  return detail::apply(op, {materialize(a, target, shape, where), materialize(b, target, shape, where)}, {}, where);
}

namespace {

/// The partial derivative with respect to `operand` times the seed (a
/// cotangent or a tangent): elementwise, so each operand's Jacobian is
/// diagonal and vjp and jvp share it. Empty where the operand gets nothing.
template <Primitive op>
Array scaled_by_partial(std::span<const Array> inputs, const Array& output, size_t operand, const Array& seed) {
  if constexpr (op == Primitive::select) {
    // The condition is bool and gets nothing; each branch gets the seed where it was chosen.
    const Array& cond = inputs[0];
    if (operand == 0) return Array();
    return operand == 1 ? kiln::where(cond, seed, 0) : kiln::where(cond, 0, seed);
  } else {
    const Array& a = inputs[0];
    const Array& b = inputs[1];
    const Array& self = operand == 0 ? a : b;
    const Array& other = operand == 0 ? b : a;
    if constexpr (op == Primitive::add) return seed;
    else if constexpr (op == Primitive::sub) return operand == 0 ? seed : -seed;
    else if constexpr (op == Primitive::mul) return seed * other;
    else if constexpr (op == Primitive::div) {
      // d(a/b)/db = -a/b^2, computed as -(a/b)/b so b^2 cannot overflow.
      if (operand == 0) return seed / b;
      return -(seed * (output / b));
    } else if constexpr (op == Primitive::pow) {
      if (operand == 0) {
        // b * a^(b-1), with the exponent replaced by 1 where b == 0 so that
        // a == 0, b == 0 gives 0 rather than 0 * inf (JAX's _pow_jvp_lhs).
        Array exponent = kiln::where(b == 0, 1, b - 1);
        return seed * (b * kiln::pow(a, exponent));
      }
      // log(a) * a^b, with log(1) = 0 standing in where a == 0 (JAX's _pow_jvp_rhs).
      Array safe_base = kiln::where(a == 0, 1, a);
      return seed * (kiln::log(safe_base) * output);
    } else if constexpr (op == Primitive::atan2) {
      // d atan2(y, x) = (x dy - y dx) / (x^2 + y^2)
      Array scale = seed / (a * a + b * b);
      return operand == 0 ? scale * b : -(scale * a);
    } else if constexpr (op == Primitive::floor_divide) {
      return zeros_like(seed);  // piecewise constant, as floor
    } else if constexpr (op == Primitive::remainder) {
      // a - b floor(a / b): JAX's derivatives of its rem and select.
      if (operand == 0) return seed;
      return -(seed * kiln::floor_divide(a, b));
    } else if constexpr (op == Primitive::copysign) {
      // |a| with b's sign: d/da is sign(a) times that sign; b moves only the sign.
      if (operand == 0) return seed * (kiln::sign(a) * kiln::copysign(1, b));
      return zeros_like(seed);
    } else if constexpr (op == Primitive::nextafter) {
      // a moved by one ulp: a's derivative is 1; `toward` only picks the direction.
      return operand == 0 ? seed : zeros_like(seed);
    } else if constexpr (op == Primitive::max || op == Primitive::min) {
      // The operand equal to the result gets the seed; on a tie each operand
      // gets half, as JAX does, so the two halves still sum to the seed.
      // A NaN result matches neither operand and passes nothing back.
      Array share = kiln::where(other == output, seed * 0.5, seed);
      return kiln::where(self == output, share, 0);
    } else {
      static_assert(no_rule<op>, "binary primitive without a derivative");
    }
  }
}

template <Primitive op>
std::vector<Array> vjp(const Node&, std::span<const Array> inputs, const Array& output, const Array& cotangent) {
  std::vector<Array> result;
  for (size_t k = 0; k < inputs.size(); ++k) result.push_back(scaled_by_partial<op>(inputs, output, k, cotangent));
  return result;
}

template <Primitive op>
Array jvp(const Node&, std::span<const Array> inputs, const Array& output, std::span<const Array> tangents) {
  Array total;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!tangents[k].defined()) continue;  // a zero tangent adds nothing
    Array term = scaled_by_partial<op>(inputs, output, k, tangents[k]);
    if (!term.defined()) continue;
    total = total.defined() ? total + term : term;
  }
  return total;
}

/// NumPy's divmod as floating_divmod computes it, or integer_divmod's
/// adjustment of the truncated quotient and remainder.
std::pair<ScalarValue, ScalarValue> lower_divmod(ScalarEmitter& e, ScalarValue a, ScalarValue b, DType dtype) {
  ScalarValue zero = e.constant(0, dtype);
  ScalarValue remainder = e.truncated_remainder(a, b, dtype);
  ScalarValue remainder_nonzero = e.compare(Comparison::ne, remainder, zero, dtype);
  ScalarValue signs_differ = e.compare(Comparison::ne, e.compare(Comparison::lt, b, zero, dtype),
                                       e.compare(Comparison::lt, remainder, zero, dtype), DType::bool_);
  ScalarValue adjust = e.logical_and(remainder_nonzero, signs_differ);
  ScalarValue one = e.constant(1, dtype);
  ScalarValue adjusted_remainder = e.select(adjust, e.add(remainder, b, dtype), remainder);
  if (!is_floating(dtype)) {
    ScalarValue quotient = e.truncated_divide(a, b, dtype);
    return {e.select(adjust, e.sub(quotient, one, dtype), quotient), adjusted_remainder};
  }
  ScalarValue quotient = e.div(e.sub(a, remainder, dtype), b);
  quotient = e.select(adjust, e.sub(quotient, one, dtype), quotient);
  ScalarValue mod = e.select(remainder_nonzero, adjusted_remainder, e.copysign(zero, b));
  ScalarValue floor_div = e.round(Rounding::floor, quotient);
  floor_div = e.select(e.compare(Comparison::gt, e.sub(quotient, floor_div, dtype), e.constant(0.5, dtype), dtype),
                       e.add(floor_div, one, dtype), floor_div);
  ScalarValue ratio = e.div(a, b);
  floor_div = e.select(e.compare(Comparison::eq, quotient, zero, dtype), e.copysign(zero, ratio), floor_div);
  ScalarValue divisor_zero = e.compare(Comparison::eq, b, zero, dtype);
  return {e.select(divisor_zero, ratio, floor_div), e.select(divisor_zero, remainder, mod)};
}

/// The native code of one element.
template <Primitive op>
ScalarValue lower(ScalarEmitter& e, const Node&, std::span<const ScalarValue> v, std::span<const DType> dtypes) {
  DType dtype = dtypes.back();  // select's condition comes first
  bool boolean = dtype == DType::bool_;
  if constexpr (op == Primitive::select) return e.select(v[0], v[1], v[2]);
  else if constexpr (op == Primitive::add) return boolean ? e.logical_or(v[0], v[1]) : e.add(v[0], v[1], dtype);
  else if constexpr (op == Primitive::sub) return e.sub(v[0], v[1], dtype);
  else if constexpr (op == Primitive::mul) return boolean ? e.logical_and(v[0], v[1]) : e.mul(v[0], v[1], dtype);
  else if constexpr (op == Primitive::div) return e.div(v[0], v[1]);
  else if constexpr (op == Primitive::pow) return e.pow(v[0], v[1], dtype);
  else if constexpr (op == Primitive::atan2) return e.atan2(v[0], v[1]);
  else if constexpr (op == Primitive::floor_divide) return lower_divmod(e, v[0], v[1], dtype).first;
  else if constexpr (op == Primitive::remainder) return lower_divmod(e, v[0], v[1], dtype).second;
  else if constexpr (op == Primitive::copysign) return e.copysign(v[0], v[1]);
  else if constexpr (op == Primitive::nextafter) return e.next_after(v[0], v[1]);
  else if constexpr (op == Primitive::max)
    return boolean ? e.logical_or(v[0], v[1]) : e.extreme(true, v[0], v[1], dtype);
  else if constexpr (op == Primitive::min)
    return boolean ? e.logical_and(v[0], v[1]) : e.extreme(false, v[0], v[1], dtype);
  else if constexpr (op == Primitive::eq) return e.compare(Comparison::eq, v[0], v[1], dtype);
  else if constexpr (op == Primitive::ne) return e.compare(Comparison::ne, v[0], v[1], dtype);
  else if constexpr (op == Primitive::lt) return e.compare(Comparison::lt, v[0], v[1], dtype);
  else if constexpr (op == Primitive::le) return e.compare(Comparison::le, v[0], v[1], dtype);
  else if constexpr (op == Primitive::gt) return e.compare(Comparison::gt, v[0], v[1], dtype);
  else if constexpr (op == Primitive::ge) return e.compare(Comparison::ge, v[0], v[1], dtype);
  else if constexpr (op == Primitive::logical_and) return e.logical_and(v[0], v[1]);
  else if constexpr (op == Primitive::logical_or) return e.logical_or(v[0], v[1]);
  else static_assert(no_rule<op>, "binary primitive without a native lowering");
}

/// Vector operations per element in a fused loop (see PrimitiveRules::cost).
constexpr int cost(Primitive op) {
  // pow is exp(b log a) in vector math; floor_divide and remainder call fmod
  // or divide integers one lane at a time.
  if (op == Primitive::pow || op == Primitive::atan2 || op == Primitive::floor_divide || op == Primitive::remainder)
    return 16;
  return op == Primitive::nextafter ? 4 : 1;
}

template <Primitive op>
PrimitiveRules row() {
  PrimitiveRules rules{.infer = &infer_binary, .evaluate = &evaluate<op>};
  if constexpr (is_comparison(op) || op == Primitive::logical_and || op == Primitive::logical_or) {
    rules.no_derivative = "bool result";
  } else {
    rules.vjp = &vjp<op>;
    rules.jvp = &jvp<op>;
  }
  rules.batch = &batch_elementwise;
  rules.fusion = Fusion::elementwise;
  rules.cost = cost(op);
  rules.lower = &lower<op>;
  return rules;
}

}  // namespace

void register_binary_rules(RuleTable& table) {
  register_family<ir::Family::binary>(table, []<Primitive op>() { return row<op>(); });
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
Array arctan2(Operand y, Operand x) { return ops::binary(Primitive::atan2, "arctan2", y, x); }
Array floor_divide(Operand a, Operand b) { return ops::binary(Primitive::floor_divide, "floor_divide", a, b); }
Array remainder(Operand a, Operand b) { return ops::binary(Primitive::remainder, "remainder", a, b); }
std::pair<Array, Array> divmod(Operand a, Operand b) { return {floor_divide(a, b), remainder(a, b)}; }
Array copysign(Operand a, Operand b) { return ops::binary(Primitive::copysign, "copysign", a, b); }
Array nextafter(Operand a, Operand b) { return ops::binary(Primitive::nextafter, "nextafter", a, b); }

Array operator+(Operand a, Operand b) { return add(std::move(a), std::move(b)); }
Array operator-(Operand a, Operand b) { return sub(std::move(a), std::move(b)); }
Array operator*(Operand a, Operand b) { return mul(std::move(a), std::move(b)); }
Array operator/(Operand a, Operand b) { return div(std::move(a), std::move(b)); }
Array operator<(Operand a, Operand b) { return less(std::move(a), std::move(b)); }
Array operator<=(Operand a, Operand b) { return less_equal(std::move(a), std::move(b)); }
Array operator>(Operand a, Operand b) { return greater(std::move(a), std::move(b)); }
Array operator>=(Operand a, Operand b) { return greater_equal(std::move(a), std::move(b)); }
Array operator==(Operand a, Operand b) { return equal(std::move(a), std::move(b)); }
Array operator!=(Operand a, Operand b) { return not_equal(std::move(a), std::move(b)); }

Array where(Operand cond, Operand x, Operand y) {
  Location where = cond.where();
  ops::TypeClass target = ops::promote(ops::type_class(x), ops::type_class(y));
  static const Shape scalar_shape;
  auto shape_of = [&](const Operand& o) -> const Shape& {
    return o.is_number() ? scalar_shape : detail::impl_of(o.array(), "where", where).type.shape;
  };
  Shape shape = ops::broadcast_shapes(ops::broadcast_shapes(shape_of(cond), shape_of(x), "where", where), shape_of(y),
                                      "where", where);
  Array c = ops::materialize(cond, {DType::bool_, false}, shape, where);
  return detail::apply(Primitive::select,
                       {c, ops::materialize(x, target, shape, where), ops::materialize(y, target, shape, where)}, {},
                       where);
}

// At x == lo or x == hi the derivative is split between x and the bound
// (maximum's and minimum's at a tie), as JAX's clip does.
Array clip(Operand x, Operand lo, Operand hi) {
  detail::OperationScope at("clip", x.where());
  return minimum(maximum(x, lo), hi);
}

}  // namespace kiln
