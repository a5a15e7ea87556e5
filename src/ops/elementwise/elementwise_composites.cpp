// Elementwise functions NumPy users reach for, as composites of the
// primitives: tan, sinh, cosh, the inverse trigonometric and hyperbolic
// functions, reciprocal, degrees, radians, isinf, isfinite, logaddexp and
// hypot. Each is written for the accuracy and special values of NumPy's own
// (sinh through expm1 near 0, arcsinh and arctanh through log1p, logaddexp
// and hypot scaled so nothing overflows), and each opens an OperationScope,
// so its parts record and raise at the user's line and it reads like the
// formula it computes.
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>

#include "core/location_scope.h"
#include "kiln/ops.h"
#include "ops/common/promotion.h"
#include "ops/elementwise/complex_forms.h"

namespace kiln {

using detail::OperationScope;

namespace {

constexpr double infinity = std::numeric_limits<double>::infinity();

// Integers and bool computed in f32, keeping a C++ number's weak type (as exp
// does); complex numbers as they are.
Array floating(const Array& x, Location where = Location::current()) {
  if (is_floating(x.dtype()) || is_complex(x.dtype())) return x;
  return ops::convert_to(x, DType::f32, x.weak_type(), where);
}

Array operand_array(const Operand& x) {
  return x.is_number() ? full({}, x.number(), std::nullopt, x.where()) : x.array();
}

// re + i im in the complex dtype of the real parts.
Array complex_from(const Array& re, const Array& im) {
  DType dtype = re.dtype() == DType::f64 ? DType::c128 : DType::c64;
  return astype(re, dtype) + astype(im, dtype) * std::complex<double>(0, 1);
}

}  // namespace

// The complex forms of expm1, log1p and sinh, from real functions of the
// parts so that small arguments keep their accuracy (NumPy's formulas):
//   expm1(x + iy) = expm1(x) cos y - 2 sin^2(y/2) + i e^x sin y
//   log1p(x + iy) = log1p(2x + x^2 + y^2) / 2 + i atan2(y, 1 + x)
//   sinh(x + iy) = sinh x cos y + i cosh x sin y
Array ops::complex_expm1(const Array& z) {
  Array x = real(z), y = imag(z);
  Array half = sin(y * 0.5);
  return complex_from(expm1(x) * cos(y) - 2.0 * half * half, exp(x) * sin(y));
}

Array ops::complex_log1p(const Array& z) {
  Array x = real(z), y = imag(z);
  return complex_from(log1p(x * (x + 2.0) + y * y) * 0.5, arctan2(y, x + 1.0));
}

// The inverse functions of complex numbers on their principal branches (as
// NumPy's), from log, sqrt and log1p; asinh on the half plane Re z >= 0 and
// by oddness elsewhere, so that z + sqrt(z^2 + 1) never cancels.
namespace {
// i z and -i z by their parts: a complex product would lose the signed zero
// (i (2 + 0i) must be -0 + 2i) that picks the side of a branch cut.
Array times_i(const Array& z) { return complex_from(-imag(z), real(z)); }
Array times_minus_i(const Array& z) { return complex_from(imag(z), -real(z)); }
}  // namespace

Array complex_arcsinh(const Array& z) {
  Array flip = copysign(1.0, real(z)) < 0.0;  // -0 too: the side of the branch cut a signed zero names
  Array w = kiln::where(flip, -z, z);
  Array value = log(w + sqrt(w * w + 1.0));
  return kiln::where(flip, -value, value);
}

Array complex_arctanh(const Array& z) { return (ops::complex_log1p(z) - ops::complex_log1p(-z)) * 0.5; }
Array ops::complex_arctan(const Array& z) { return times_minus_i(complex_arctanh(times_i(z))); }
Array ops::complex_log2(const Array& z) { return log(z) * (1.0 / std::numbers::ln2); }

Array tan(const Array& x, Location where) {
  OperationScope at("tan", where);
  return sin(x) / cos(x);
}

// (e^x - e^-x) / 2 through expm1: no cancellation for small |x|.
Array sinh(const Array& x, Location where) {
  OperationScope at("sinh", where);
  if (is_complex(x.dtype())) return complex_from(sinh(real(x)) * cos(imag(x)), cosh(real(x)) * sin(imag(x)));
  Array values = floating(x);
  return (expm1(values) - expm1(-values)) * 0.5;
}

Array cosh(const Array& x, Location where) {
  OperationScope at("cosh", where);
  Array values = floating(x);
  return (exp(values) + exp(-values)) * 0.5;
}

namespace {

// sqrt(1 - x^2) as sqrt((1 - x)(1 + x)): 1 - x is exact near 1, where x^2 would cancel.
Array cosine_of_arcsine(const Array& x) { return sqrt((1.0 - x) * (1.0 + x)); }

}  // namespace

Array arcsin(const Array& x, Location where) {
  OperationScope at("arcsin", where);
  if (is_complex(x.dtype())) return times_minus_i(complex_arcsinh(times_i(x)));
  Array values = floating(x);
  return arctan2(values, cosine_of_arcsine(values));
}

Array arccos(const Array& x, Location where) {
  OperationScope at("arccos", where);
  if (is_complex(x.dtype())) return std::numbers::pi / 2 - times_minus_i(complex_arcsinh(times_i(x)));
  Array values = floating(x);
  return arctan2(cosine_of_arcsine(values), values);
}

namespace {

// An odd function from its values on x >= 0: f(|x|) with the sign of x, where
// |x| is where(x >= 0, x, -x) so that its derivative at 0 is 1 (abs's is 0),
// and x itself at +-0 (f(0) = 0, f'(0) = 1), which keeps -0.
Array odd_from_nonnegative(const Array& x, const std::function<Array(const Array&)>& f) {
  Array nonnegative = x >= 0.0;
  Array value = f(kiln::where(nonnegative, x, -x));
  Array result = kiln::where(nonnegative, value, -value);
  return kiln::where(x == 0.0, x, result);
}

// Past 2^28, sqrt(x^2 + 1) and sqrt(x^2 - 1) are x in either format, and the
// functions below are log(2x) = log(x) + log(2). Each side of the choice reads
// only its own arguments (a harmless stand-in elsewhere), so neither's
// derivative is infinite where the other is chosen.
constexpr double large_argument = 268435456.0;

Array log_of_twice(const Array& large, const Array& x) { return log(kiln::where(large, x, 1.0)) + std::numbers::ln2; }

}  // namespace

// log1p(a + a^2 / (1 + sqrt(1 + a^2))), which is log(a + sqrt(a^2 + 1))
// without its cancellation for small a.
Array arcsinh(const Array& x, Location where) {
  OperationScope at("arcsinh", where);
  if (is_complex(x.dtype())) return complex_arcsinh(x);
  auto of_magnitude = [](const Array& a) {
    Array large = a > large_argument;
    Array moderate = kiln::where(large, 0.0, a);
    Array square = moderate * moderate;
    Array small = log1p(moderate + square / (1.0 + sqrt(1.0 + square)));
    return kiln::where(large, log_of_twice(large, a), small);
  };
  return odd_from_nonnegative(floating(x), of_magnitude);
}

// log1p(t + sqrt(t (t + 2))) with t = x - 1, exact for x in [1, 2]: log(x +
// sqrt(x^2 - 1)) without its cancellation near 1. NaN below 1, set apart:
// far below, t (t + 2) overflows to inf rather than giving NaN.
Array arccosh(const Array& x, Location where) {
  OperationScope at("arccosh", where);
  if (is_complex(x.dtype())) return log(x + sqrt(x + 1.0) * sqrt(x - 1.0));
  Array values = floating(x);
  Array large = values > large_argument;
  Array t = kiln::where(large, 1.0, values) - 1.0;
  Array small = log1p(t + sqrt(t * (t + 2.0)));
  Array result = kiln::where(large, log_of_twice(large, values), small);
  return kiln::where(values < 1.0, std::numeric_limits<double>::quiet_NaN(), result);
}

// atanh(a) = log1p(2a / (1 - a)) / 2, written below a = 1/2 as log1p(2a +
// 2a^2 / (1 - a)) (fdlibm's split): 2a is exact and the rest small.
Array arctanh(const Array& x, Location where) {
  OperationScope at("arctanh", where);
  if (is_complex(x.dtype())) return complex_arctanh(x);
  auto of_magnitude = [](const Array& a) {
    Array twice = a * 2.0;
    Array complement = 1.0 - a;
    Array near_one = twice / complement;
    Array near_zero = twice + twice * a / complement;
    return log1p(kiln::where(a < 0.5, near_zero, near_one)) * 0.5;
  };
  return odd_from_nonnegative(floating(x), of_magnitude);
}

Array reciprocal(const Array& x, Location where) {
  OperationScope at("reciprocal", where);
  return 1.0 / floating(x);
}

Array degrees(const Array& x, Location where) {
  OperationScope at("degrees", where);
  return floating(x) * (180.0 / std::numbers::pi);
}

Array radians(const Array& x, Location where) {
  OperationScope at("radians", where);
  return floating(x) * (std::numbers::pi / 180.0);
}

Array isinf(const Array& x, Location where) {
  OperationScope at("isinf", where);
  if (is_complex(x.dtype())) return logical_or(isinf(real(x)), isinf(imag(x)));
  if (!is_floating(x.dtype())) return full(x.shape(), false, DType::bool_);
  return abs(x) == infinity;
}

Array isfinite(const Array& x, Location where) {
  OperationScope at("isfinite", where);
  if (is_complex(x.dtype())) return logical_and(isfinite(real(x)), isfinite(imag(x)));
  if (!is_floating(x.dtype())) return full(x.shape(), true, DType::bool_);
  return abs(x) < infinity;  // false for NaN too
}

// max + log1p(exp(-|a - b|)). At a tie the gap is the constant 0, whose
// derivative is none: each side gets half (maximum's), as in JAX; equal
// infinities give that infinity (their difference would be NaN).
Array logaddexp(Operand a, Operand b) {
  OperationScope at("logaddexp", a.where());
  Array x = floating(operand_array(a)), y = floating(operand_array(b));
  Array gap = kiln::where(x == y, 0.0, x - y);
  return maximum(x, y) + log1p(exp(-abs(gap)));
}

// m * sqrt(1 + (s / m)^2) with m the larger magnitude: the squares never
// overflow or underflow. An infinite side gives infinity even against NaN.
Array hypot(Operand a, Operand b) {
  OperationScope at("hypot", a.where());
  Array x = abs(floating(operand_array(a))), y = abs(floating(operand_array(b)));
  Array larger = maximum(x, y);
  Array ratio = minimum(x, y) / kiln::where(larger == 0.0, 1.0, larger);
  Array scaled = larger * sqrt(1.0 + ratio * ratio);
  return kiln::where(logical_or(isinf(x), isinf(y)), infinity, scaled);
}

}  // namespace kiln
