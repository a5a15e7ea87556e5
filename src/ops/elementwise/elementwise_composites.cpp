// Elementwise functions NumPy users reach for, as composites of the
// primitives: tan, sinh, cosh, the inverse trigonometric and hyperbolic
// functions, reciprocal, degrees, radians, isinf, isfinite, logaddexp,
// hypot and erfinv. Each is written for the accuracy and special values of NumPy's own
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

namespace kiln {

using detail::OperationScope;

namespace {

constexpr double infinity = std::numeric_limits<double>::infinity();

// Integers and bool computed in f32, keeping a C++ number's weak type (as exp does).
Array floating(const Array& x, Location where = Location::current()) {
  if (is_floating(x.dtype())) return x;
  return ops::convert_to(x, DType::f32, x.weak_type(), where);
}

Array operand_array(const Operand& x) {
  return x.is_number() ? full({}, x.number(), std::nullopt, x.where()) : x.array();
}

}  // namespace

Array tan(const Array& x, Location where) {
  OperationScope at("tan", where);
  return sin(x) / cos(x);
}

// (e^x - e^-x) / 2 through expm1: no cancellation for small |x|.
Array sinh(const Array& x, Location where) {
  OperationScope at("sinh", where);
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
  Array values = floating(x);
  return arctan2(values, cosine_of_arcsine(values));
}

Array arccos(const Array& x, Location where) {
  OperationScope at("arccos", where);
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
  if (!is_floating(x.dtype())) return full(x.shape(), false, DType::bool_);
  return abs(x) == infinity;
}

Array isfinite(const Array& x, Location where) {
  OperationScope at("isfinite", where);
  if (!is_floating(x.dtype())) return full(x.shape(), true, DType::bool_);
  return abs(x) < infinity;  // false for NaN too
}

// max + log1p(exp(-|a - b|)); equal infinities give that infinity (their
// difference would be NaN).
Array logaddexp(Operand a, Operand b) {
  OperationScope at("logaddexp", a.where());
  Array x = floating(operand_array(a)), y = floating(operand_array(b));
  Array result = maximum(x, y) + log1p(exp(-abs(x - y)));
  return kiln::where(x == y, x + std::log(2.0), result);
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

// Giles' single-precision approximation ("Approximating the erfinv
// function", GPU Computing Gems, 2011) as a start, then two Newton steps on
// erf(x) = y, each of which doubles the correct digits; past |x| = 4 (f64
// only: f32 cannot get that close to 1), Newton on erfc's asymptotic series. The ends and beyond are set apart:
// erfinv(+-1) = +-inf, NaN outside [-1, 1].
Array erfinv(const Array& x, Location where) {
  OperationScope at("erfinv", where);
  Array y = floating(x);
  auto polynomial = [](const Array& w, std::initializer_list<double> coefficients) {
    Array p;
    for (double c : coefficients) p = p.defined() ? c + p * w : full_like(w, c);
    return p;
  };
  // Where |y| >= 1 the logarithm is not needed: any finite stand-in keeps the
  // unused side of the selects below (and its derivative) free of NaN.
  Array inside = abs(y) < 1.0;
  Array w = -log(kiln::where(inside, (1.0 - y) * (1.0 + y), 0.5));
  Array central = polynomial(w - 2.5, {2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                                       -0.00125372503, -0.00417768164, 0.246640727, 1.50140941});
  // Each branch reads its own side of w = 5, so neither's derivative is
  // infinite where the other is chosen (sqrt at 0).
  Array central_side = w < 5.0;
  Array tail = polynomial(sqrt(kiln::where(central_side, 5.0, w)) - 3.0,
                          {-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                           0.00943887047, 1.00167406, 2.83297682});
  Array start = kiln::where(central_side, central, tail) * y;
  // Newton on f(x) = erf(x) - y, f'(x) = 2/sqrt(pi) exp(-x^2), while erf's
  // own rounding next to +-1 (divided by that slope) stays below the start's
  // error: for |x| < 4. Beyond, Giles' start (about 1e-7 relative) stands.
  Array refine = abs(start) < 4.0;
  Array estimate = start;
  for (int step = 0; step < 2; ++step) {
    Array point = kiln::where(refine, estimate, 0.0);
    Array slope = 2.0 / std::sqrt(std::numbers::pi) * exp(-square(point));
    estimate = kiln::where(refine, point - (erf(point) - y) / slope, estimate);
  }
  // Past 4, Newton on log erfc(x) = log(1 - |y|), with erfc's asymptotic
  // series (its terms fall below 1e-7 of the sum there): a relative error e
  // of erfc moves x by only e / (2 x^2), and 1 - |y| is exact.
  Array far = logical_not(refine);
  Array magnitude = maximum(abs(start), 4.0);
  Array log_remaining = log(kiln::where(far, 1.0 - abs(y), 1e-10));
  for (int step = 0; step < 5; ++step) {
    Array series = polynomial(0.5 / square(magnitude), {-135135.0, 10395.0, -945.0, 105.0, -15.0, 3.0, -1.0, 1.0});
    Array log_erfc = -square(magnitude) + log(series) - (log(magnitude) + 0.5 * std::log(std::numbers::pi));
    // d/dx log erfc(x) = -2x / series
    magnitude = magnitude + (log_erfc - log_remaining) * series / (2.0 * magnitude);
  }
  estimate = kiln::where(far, sign(y) * magnitude, estimate);
  Array ends = kiln::where(abs(y) == 1.0, sign(y) * infinity, std::numeric_limits<double>::quiet_NaN());
  return kiln::where(inside, estimate, ends);
}

}  // namespace kiln
