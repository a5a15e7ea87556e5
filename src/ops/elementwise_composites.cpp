// Elementwise functions NumPy users reach for, as composites of the
// primitives: tan, sinh, cosh, reciprocal, degrees, radians, isinf,
// isfinite, logaddexp, hypot, erfinv. Each is written for the accuracy and special
// values of NumPy's own (sinh through expm1 near 0, logaddexp and hypot
// scaled so nothing overflows).
#include <cmath>
#include <limits>
#include <numbers>

#include "kiln/ops.h"
#include "ops/elementwise.h"

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
