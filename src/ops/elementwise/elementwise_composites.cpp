// Elementwise functions NumPy users reach for, as composites of the
// primitives: tan, sinh, cosh, the inverse trigonometric and hyperbolic
// functions, reciprocal, degrees, radians, isinf, isfinite, logaddexp,
// hypot, erfinv. Each is written for the accuracy and special values of
// NumPy's own (sinh through expm1 near 0, arcsinh and arctanh through log1p,
// logaddexp and hypot scaled so nothing overflows).
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>

#include "kiln/ops.h"
#include "ops/common/promotion.h"

namespace kiln {

namespace {

constexpr double infinity = std::numeric_limits<double>::infinity();

// Integers and bool computed in f32, keeping a C++ number's weak type (as exp does).
Array floating(const Array& x, Location where) {
  if (is_floating(x.dtype())) return x;
  return ops::convert_to(x, DType::f32, x.weak_type(), where);
}

Array operand_array(const Operand& x) {
  return x.is_number() ? full({}, x.number(), std::nullopt, x.where()) : x.array();
}

}  // namespace

Array tan(const Array& x, Location where) { return div(Operand(sin(x, where), where), Operand(cos(x, where), where)); }

// (e^x - e^-x) / 2 through expm1: no cancellation for small |x|.
Array sinh(const Array& x, Location where) {
  Array values = floating(x, where);
  Array difference = sub(Operand(expm1(values, where), where), Operand(expm1(neg(values, where), where), where));
  return mul(Operand(difference, where), Operand(0.5, where));
}

Array cosh(const Array& x, Location where) {
  Array values = floating(x, where);
  Array total = add(Operand(exp(values, where), where), Operand(exp(neg(values, where), where), where));
  return mul(Operand(total, where), Operand(0.5, where));
}

// sqrt(1 - x^2) as sqrt((1 - x)(1 + x)): 1 - x is exact near 1, where x^2 would cancel.
Array cosine_of_arcsine(const Array& x, Location where) {
  Array one_minus = sub(Operand(1.0, where), Operand(x, where));
  Array one_plus = add(Operand(1.0, where), Operand(x, where));
  return sqrt(mul(Operand(one_minus, where), Operand(one_plus, where)), where);
}

Array arcsin(const Array& x, Location where) {
  Array values = floating(x, where);
  return arctan2(Operand(values, where), Operand(cosine_of_arcsine(values, where), where));
}

Array arccos(const Array& x, Location where) {
  Array values = floating(x, where);
  return arctan2(Operand(cosine_of_arcsine(values, where), where), Operand(values, where));
}

namespace {

// An odd function from its values on x >= 0: f(|x|) with the sign of x, where
// |x| is where(x >= 0, x, -x) so that its derivative at 0 is 1 (abs's is 0),
// and x itself at +-0 (f(0) = 0, f'(0) = 1), which keeps -0.
Array odd_from_nonnegative(const Array& x, const std::function<Array(const Array&)>& f, Location where) {
  Array nonnegative = greater_equal(Operand(x, where), Operand(0.0, where));
  Array magnitude = kiln::where(Operand(nonnegative, where), Operand(x, where), Operand(neg(x, where), where));
  Array value = f(magnitude);
  Array result = kiln::where(Operand(nonnegative, where), Operand(value, where), Operand(neg(value, where), where));
  return kiln::where(Operand(equal(Operand(x, where), Operand(0.0, where)), where), Operand(x, where),
                     Operand(result, where));
}

// Past 2^28, sqrt(x^2 + 1) and sqrt(x^2 - 1) are x in either format, and the
// functions below are log(2x) = log(x) + log(2). Each side of the choice reads
// only its own arguments (a harmless stand-in elsewhere), so neither's
// derivative is infinite where the other is chosen.
constexpr double large_argument = 268435456.0;

Array log_of_twice(const Array& large, const Array& x, Location where) {
  Array safe = kiln::where(Operand(large, where), Operand(x, where), Operand(1.0, where));
  return add(Operand(log(safe, where), where), Operand(std::numbers::ln2, where));
}

}  // namespace

// log1p(a + a^2 / (1 + sqrt(1 + a^2))), which is log(a + sqrt(a^2 + 1))
// without its cancellation for small a.
Array arcsinh(const Array& x, Location where) {
  auto of_magnitude = [&](const Array& a) {
    Array large = greater(Operand(a, where), Operand(large_argument, where));
    Array moderate = kiln::where(Operand(large, where), Operand(0.0, where), Operand(a, where));
    Array square = mul(Operand(moderate, where), Operand(moderate, where));
    Array root = sqrt(add(Operand(1.0, where), Operand(square, where)), where);
    Array fraction = div(Operand(square, where), Operand(add(Operand(1.0, where), Operand(root, where)), where));
    Array small = log1p(add(Operand(moderate, where), Operand(fraction, where)), where);
    return kiln::where(Operand(large, where), Operand(log_of_twice(large, a, where), where), Operand(small, where));
  };
  return odd_from_nonnegative(floating(x, where), of_magnitude, where);
}

// log1p(t + sqrt(t (t + 2))) with t = x - 1, exact for x in [1, 2]: log(x +
// sqrt(x^2 - 1)) without its cancellation near 1. NaN below 1, set apart:
// far below, t (t + 2) overflows to inf rather than giving NaN.
Array arccosh(const Array& x, Location where) {
  Array values = floating(x, where);
  Array large = greater(Operand(values, where), Operand(large_argument, where));
  Array moderate = kiln::where(Operand(large, where), Operand(1.0, where), Operand(values, where));
  Array t = sub(Operand(moderate, where), Operand(1.0, where));
  Array root = sqrt(mul(Operand(t, where), Operand(add(Operand(t, where), Operand(2.0, where)), where)), where);
  Array small = log1p(add(Operand(t, where), Operand(root, where)), where);
  Array result =
      kiln::where(Operand(large, where), Operand(log_of_twice(large, values, where), where), Operand(small, where));
  return kiln::where(Operand(less(Operand(values, where), Operand(1.0, where)), where),
                     Operand(std::numeric_limits<double>::quiet_NaN(), where), Operand(result, where));
}

// atanh(a) = log1p(2a / (1 - a)) / 2, written below a = 1/2 as log1p(2a +
// 2a^2 / (1 - a)) (fdlibm's split): 2a is exact and the rest small.
Array arctanh(const Array& x, Location where) {
  auto of_magnitude = [&](const Array& a) {
    Array twice = mul(Operand(a, where), Operand(2.0, where));
    Array complement = sub(Operand(1.0, where), Operand(a, where));
    Array near_one = div(Operand(twice, where), Operand(complement, where));
    Array near_zero = add(
        Operand(twice, where),
        Operand(div(Operand(mul(Operand(twice, where), Operand(a, where)), where), Operand(complement, where)), where));
    Array small = less(Operand(a, where), Operand(0.5, where));
    Array argument = kiln::where(Operand(small, where), Operand(near_zero, where), Operand(near_one, where));
    return mul(Operand(log1p(argument, where), where), Operand(0.5, where));
  };
  return odd_from_nonnegative(floating(x, where), of_magnitude, where);
}

Array reciprocal(const Array& x, Location where) {
  return div(Operand(1.0, where), Operand(floating(x, where), where));
}

Array degrees(const Array& x, Location where) {
  return mul(Operand(floating(x, where), where), Operand(180.0 / std::numbers::pi, where));
}

Array radians(const Array& x, Location where) {
  return mul(Operand(floating(x, where), where), Operand(std::numbers::pi / 180.0, where));
}

Array isinf(const Array& x, Location where) {
  if (!is_floating(x.dtype())) return full(x.shape(), false, DType::bool_, where);
  return equal(Operand(abs(x, where), where), Operand(infinity, where));
}

Array isfinite(const Array& x, Location where) {
  if (!is_floating(x.dtype())) return full(x.shape(), true, DType::bool_, where);
  return less(Operand(abs(x, where), where), Operand(infinity, where));  // false for NaN too
}

// max + log1p(exp(-|a - b|)); equal infinities give that infinity (their
// difference would be NaN).
Array logaddexp(Operand a, Operand b) {
  Location where = a.where();
  Array x = floating(operand_array(a), where), y = floating(operand_array(b), where);
  Array larger = maximum(Operand(x, where), Operand(y, where));
  Array gap = abs(sub(Operand(x, where), Operand(y, where)), where);
  Array result = add(Operand(larger, where), Operand(log1p(exp(neg(gap, where), where), where), where));
  Array same = equal(Operand(x, where), Operand(y, where));
  return kiln::where(Operand(same, where), Operand(add(Operand(x, where), Operand(std::log(2.0), where)), where),
                     Operand(result, where));
}

// m * sqrt(1 + (s / m)^2) with m the larger magnitude: the squares never
// overflow or underflow. An infinite side gives infinity even against NaN.
Array hypot(Operand a, Operand b) {
  Location where = a.where();
  Array x = abs(floating(operand_array(a), where), where), y = abs(floating(operand_array(b), where), where);
  Array larger = maximum(Operand(x, where), Operand(y, where));
  Array smaller = minimum(Operand(x, where), Operand(y, where));
  Array safe = kiln::where(Operand(equal(Operand(larger, where), Operand(0.0, where)), where), Operand(1.0, where),
                           Operand(larger, where));
  Array ratio = div(Operand(smaller, where), Operand(safe, where));
  Array scaled = mul(
      Operand(larger, where),
      Operand(sqrt(add(Operand(1.0, where), Operand(mul(Operand(ratio, where), Operand(ratio, where)), where)), where),
              where));
  Array infinite = logical_or(Operand(isinf(x, where), where), Operand(isinf(y, where), where));
  return kiln::where(Operand(infinite, where), Operand(infinity, where), Operand(scaled, where));
}

// Giles' single-precision approximation ("Approximating the erfinv
// function", GPU Computing Gems, 2011) as a start, then two Newton steps on
// erf(x) = y, each of which doubles the correct digits; past |x| = 4 (f64
// only: f32 cannot get that close to 1), Newton on erfc's asymptotic series. The ends and beyond are set apart:
// erfinv(+-1) = +-inf, NaN outside [-1, 1].
Array erfinv(const Array& x, Location where) {
  Array y = floating(x, where);
  auto number = [&](double value) { return Operand(value, where); };
  auto polynomial = [&](const Array& w, std::initializer_list<double> coefficients) {
    Array p;
    for (double c : coefficients)
      p = p.defined() ? add(number(c), Operand(mul(Operand(p, where), Operand(w, where)), where))
                      : full_like(w, c, where);
    return p;
  };
  Array one_minus_square =
      mul(Operand(sub(number(1.0), Operand(y, where)), where), Operand(add(number(1.0), Operand(y, where)), where));
  // Where |y| >= 1 the logarithm is not needed: any finite stand-in keeps the
  // unused side of the selects below (and its derivative) free of NaN.
  Array inside = less(Operand(abs(y, where), where), number(1.0));
  Array w = neg(log(kiln::where(Operand(inside, where), Operand(one_minus_square, where), number(0.5)), where), where);
  Array central = polynomial(sub(Operand(w, where), number(2.5)),
                             {2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                              -0.00125372503, -0.00417768164, 0.246640727, 1.50140941});
  // Each branch reads its own side of w = 5, so neither's derivative is
  // infinite where the other is chosen (sqrt at 0).
  Array central_side = less(Operand(w, where), number(5.0));
  Array tail_w = kiln::where(Operand(central_side, where), number(5.0), Operand(w, where));
  Array tail = polynomial(sub(Operand(sqrt(tail_w, where), where), number(3.0)),
                          {-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                           0.00943887047, 1.00167406, 2.83297682});
  Array start =
      mul(Operand(kiln::where(Operand(central_side, where), Operand(central, where), Operand(tail, where)), where),
          Operand(y, where));
  // Newton on f(x) = erf(x) - y, f'(x) = 2/sqrt(pi) exp(-x^2), while erf's
  // own rounding next to +-1 (divided by that slope) stays below the start's
  // error: for |x| < 4. Beyond, Giles' start (about 1e-7 relative) stands.
  Array refine = less(Operand(abs(start, where), where), number(4.0));
  Array estimate = start;
  for (int step = 0; step < 2; ++step) {
    Array at = kiln::where(Operand(refine, where), Operand(estimate, where), number(0.0));
    Array slope =
        mul(number(2.0 / std::sqrt(std::numbers::pi)), Operand(exp(neg(square(at, where), where), where), where));
    Array residual = sub(Operand(erf(at, where), where), Operand(y, where));
    Array stepped = sub(Operand(at, where), Operand(div(Operand(residual, where), Operand(slope, where)), where));
    estimate = kiln::where(Operand(refine, where), Operand(stepped, where), Operand(estimate, where));
  }
  // Past 4, Newton on log erfc(x) = log(1 - |y|), with erfc's asymptotic
  // series (its terms fall below 1e-7 of the sum there): a relative error e
  // of erfc moves x by only e / (2 x^2), and 1 - |y| is exact.
  Array far = logical_not(refine, where);
  Array magnitude = maximum(Operand(abs(start, where), where), number(4.0));
  Array remaining =
      kiln::where(Operand(far, where), Operand(sub(number(1.0), Operand(abs(y, where), where)), where), number(1e-10));
  Array log_remaining = log(remaining, where);
  for (int step = 0; step < 5; ++step) {
    Array t = div(number(0.5), Operand(square(magnitude, where), where));
    Array series = polynomial(t, {-135135.0, 10395.0, -945.0, 105.0, -15.0, 3.0, -1.0, 1.0});
    Array log_erfc = sub(
        Operand(add(Operand(neg(square(magnitude, where), where), where), Operand(log(series, where), where)), where),
        Operand(add(Operand(log(magnitude, where), where), number(0.5 * std::log(std::numbers::pi))), where));
    Array residual = sub(Operand(log_erfc, where), Operand(log_remaining, where));
    // d/dx log erfc(x) = -2x / series
    magnitude = add(Operand(magnitude, where),
                    Operand(div(Operand(mul(Operand(residual, where), Operand(series, where)), where),
                                Operand(mul(number(2.0), Operand(magnitude, where)), where)),
                            where));
  }
  estimate =
      kiln::where(Operand(far, where), Operand(mul(Operand(sign(y, where), where), Operand(magnitude, where)), where),
                  Operand(estimate, where));
  Array ends = kiln::where(Operand(equal(Operand(abs(y, where), where), number(1.0)), where),
                           Operand(mul(Operand(sign(y, where), where), number(infinity)), where),
                           number(std::numeric_limits<double>::quiet_NaN()));
  return kiln::where(Operand(inside, where), Operand(estimate, where), Operand(ends, where));
}

}  // namespace kiln
