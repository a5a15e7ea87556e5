// Elementwise functions NumPy users reach for, as composites of the
// primitives: tan, sinh, cosh, reciprocal, degrees, radians, isinf,
// isfinite, logaddexp, hypot. Each is written for the accuracy and special
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

}  // namespace kiln
