// erfinv, the inverse of erf on [-1, 1], written once over the arithmetic of
// one element: `Math` is either plain numbers (the reference kernel) or the
// ScalarEmitter (the native code), so both compute the same steps.
//
// Giles' single-precision approximation ("Approximating the erfinv
// function", GPU Computing Gems, 2011) as a start, then two Newton steps on
// erf(x) = y, each of which doubles the correct digits; past |x| = 4 (f64
// only: f32 cannot get that close to 1), Newton on erfc's asymptotic series.
// The ends and beyond are set apart: erfinv(+-1) = +-inf, NaN outside
// [-1, 1]. Being a primitive, its derivative is the closed form
// sqrt(pi)/2 exp(erfinv(x)^2) (unary.cpp), not that of these steps.
#pragma once

#include <cmath>
#include <initializer_list>
#include <limits>
#include <numbers>

#include "ops/common/lowering.h"

namespace kiln::ops {

template <class Math>
typename Math::Value erf_inv_of(Math& m, typename Math::Value y) {
  using Value = typename Math::Value;
  auto c = [&](double value) { return m.constant(value); };
  auto polynomial = [&](Value w, std::initializer_list<double> coefficients) {
    const double* next = coefficients.begin();
    Value p = c(*next++);
    for (; next != coefficients.end(); ++next) p = m.add(c(*next), m.mul(p, w));
    return p;
  };
  Value one_minus_square = m.mul(m.sub(c(1), y), m.add(c(1), y));
  // Where |y| >= 1 the logarithm is not needed: 0.5 stands in.
  auto inside = m.less(m.abs(y), c(1));
  Value w = m.neg(m.log(m.select(inside, one_minus_square, c(0.5))));
  Value central =
      polynomial(m.sub(w, c(2.5)), {2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                                    -0.00125372503, -0.00417768164, 0.246640727, 1.50140941});
  auto central_side = m.less(w, c(5));
  Value tail_w = m.select(central_side, c(5), w);
  Value tail =
      polynomial(m.sub(m.sqrt(tail_w), c(3)), {-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                                               0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682});
  Value start = m.mul(m.select(central_side, central, tail), y);
  // Newton on f(x) = erf(x) - y, f'(x) = 2/sqrt(pi) exp(-x^2), while erf's
  // own rounding next to +-1 (divided by that slope) stays below the start's
  // error: for |x| < 4. Beyond, Giles' start (about 1e-7 relative) stands.
  auto refine = m.less(m.abs(start), c(4));
  Value estimate = start;
  for (int step = 0; step < 2; ++step) {
    Value at = m.select(refine, estimate, c(0));
    Value slope = m.mul(c(2 / std::sqrt(std::numbers::pi)), m.exp(m.neg(m.mul(at, at))));
    Value stepped = m.sub(at, m.div(m.sub(m.erf(at), y), slope));
    estimate = m.select(refine, stepped, estimate);
  }
  // Past 4, Newton on log erfc(x) = log(1 - |y|), with erfc's asymptotic
  // series (its terms fall below 1e-7 of the sum there): a relative error e
  // of erfc moves x by only e / (2 x^2), and 1 - |y| is exact.
  auto far = m.logical_not(refine);
  Value magnitude = m.maximum(m.abs(start), c(4));
  Value log_remaining = m.log(m.select(far, m.sub(c(1), m.abs(y)), c(1e-10)));
  for (int step = 0; step < 5; ++step) {
    Value square = m.mul(magnitude, magnitude);
    Value series = polynomial(m.div(c(0.5), square), {-135135.0, 10395.0, -945.0, 105.0, -15.0, 3.0, -1.0, 1.0});
    Value log_erfc =
        m.sub(m.add(m.neg(square), m.log(series)), m.add(m.log(magnitude), c(0.5 * std::log(std::numbers::pi))));
    // d/dx log erfc(x) = -2x / series
    Value residual = m.sub(log_erfc, log_remaining);
    magnitude = m.add(magnitude, m.div(m.mul(residual, series), m.mul(c(2), magnitude)));
  }
  estimate = m.select(far, m.copysign(magnitude, y), estimate);
  Value ends = m.select(m.equal(m.abs(y), c(1)), m.copysign(c(std::numeric_limits<double>::infinity()), y),
                        c(std::numeric_limits<double>::quiet_NaN()));
  return m.select(inside, estimate, ends);
}

/// Plain numbers of type C (float or double), for the reference kernel.
template <class C>
struct NumberMath {
  using Value = C;
  C constant(double value) const { return static_cast<C>(value); }
  C add(C a, C b) const { return a + b; }
  C sub(C a, C b) const { return a - b; }
  C mul(C a, C b) const { return a * b; }
  C div(C a, C b) const { return a / b; }
  C neg(C x) const { return -x; }
  C abs(C x) const { return std::abs(x); }
  C sqrt(C x) const { return std::sqrt(x); }
  C exp(C x) const { return std::exp(x); }
  C log(C x) const { return std::log(x); }
  C erf(C x) const { return std::erf(x); }
  C copysign(C magnitude, C sign) const { return std::copysign(magnitude, sign); }
  C maximum(C a, C b) const { return std::isnan(a) || std::isnan(b) ? a + b : (a > b ? a : b); }
  bool less(C a, C b) const { return a < b; }
  bool equal(C a, C b) const { return a == b; }
  bool logical_not(bool x) const { return !x; }
  C select(bool condition, C on_true, C on_false) const { return condition ? on_true : on_false; }
};

/// Emitted code on `dtype` values (f32 for f16, bf16 and f32, which the
/// native code computes in f32; f64), for the native lowering.
struct EmitterMath {
  using Value = ScalarValue;
  ScalarEmitter& e;
  DType dtype;
  Value constant(double value) { return e.constant(value, dtype); }
  Value add(Value a, Value b) { return e.add(a, b, dtype); }
  Value sub(Value a, Value b) { return e.sub(a, b, dtype); }
  Value mul(Value a, Value b) { return e.mul(a, b, dtype); }
  Value div(Value a, Value b) { return e.div(a, b); }
  Value neg(Value x) { return e.neg(x, dtype); }
  Value abs(Value x) { return e.abs(x, dtype); }
  Value sqrt(Value x) { return e.sqrt(x); }
  Value exp(Value x) { return e.math(MathFunction::exp, x); }
  Value log(Value x) { return e.math(MathFunction::log, x); }
  Value erf(Value x) { return e.math(MathFunction::erf, x); }
  Value copysign(Value magnitude, Value sign) { return e.copysign(magnitude, sign); }
  Value maximum(Value a, Value b) { return e.extreme(true, a, b, dtype); }
  Value less(Value a, Value b) { return e.compare(Comparison::lt, a, b, dtype); }
  Value equal(Value a, Value b) { return e.compare(Comparison::eq, a, b, dtype); }
  Value logical_not(Value x) { return e.logical_not(x); }
  Value select(Value condition, Value on_true, Value on_false) { return e.select(condition, on_true, on_false); }
};

}  // namespace kiln::ops
