// The inverse functions of kiln's vector math: log2 and log10 from the
// exponent and significand of their argument, atan and atan2 from Cephes'
// atan.c and atanf.c (netlib.org/cephes), straight-line as math.cpp's.
// tests/backend/test_math_accuracy.cpp measures each; the errors are stated
// at each function.
#include <llvm/IR/IRBuilder.h>

#include <cmath>
#include <cstdint>
#include <numbers>
#include <utility>

#include "backend/llvm/math.h"
#include "backend/llvm/math_building_blocks.h"

namespace kiln::llvm_backend {

namespace vector_math {

// log(x) as k and log(m), x = 2^k m with m in [sqrt(1/2), sqrt(2)) (read off
// the bits as in log1p, subnormals scaled into the normal range first), and
// log(m) = f - s (f - R(s^2)) with f = m - 1 exact, s = f / (2 + f) (log1p's
// series). For log2 and log10: a power of two gives f = 0, so log2 of it is
// exactly k.
struct LogParts {
  llvm::Value* k;  // as a float
  llvm::Value* f;  // log(m) = f - tail, f = m - 1 exact
  llvm::Value* tail;
};

LogParts log_parts(llvm::IRBuilder<>& b, llvm::Value* x) {
  Format format = format_of(b, x);
  llvm::Type* t = format.real;
  int scale_bits = format.significand_bits + 2;
  llvm::Value* subnormal = b.CreateFCmpOLT(x, constant(t, std::ldexp(1.0, 1 - format.bias)));
  llvm::Value* scaled = b.CreateSelect(subnormal, b.CreateFMul(x, constant(t, std::ldexp(1.0, scale_bits))), x);
  llvm::Value* sqrt_half = llvm::ConstantInt::get(format.integer, format.sqrt_half_bits);
  llvm::Value* shifted = b.CreateSub(b.CreateBitCast(scaled, format.integer), sqrt_half);
  llvm::Value* exponent = b.CreateAShr(shifted, format.significand_bits);
  llvm::Value* significand_mask = llvm::ConstantInt::get(format.integer, (uint64_t(1) << format.significand_bits) - 1);
  llvm::Value* m = b.CreateBitCast(b.CreateAdd(b.CreateAnd(shifted, significand_mask), sqrt_half), t);
  llvm::Value* f = b.CreateFSub(m, constant(t, 1.0));
  llvm::Value* s = b.CreateFDiv(f, b.CreateFAdd(constant(t, 2.0), f));
  llvm::Value* z = b.CreateFMul(s, s);
  int terms = is_single(x) ? 4 : 10;
  llvm::Value* r = b.CreateFMul(z, polynomial(b, z, series(terms, [](int n) { return 2.0 / (2 * n + 1); })));
  llvm::Value* k = b.CreateSIToFP(b.CreateTrunc(exponent, integer_like(exponent, 32)), t);
  k = b.CreateSelect(subnormal, b.CreateFSub(k, constant(t, scale_bits)), k);
  return {k, f, b.CreateFMul(s, b.CreateFSub(f, r))};
}

// log(m) c for a constant c given as hi + lo, as hi + low: f c rounded is hi,
// its rounding error (exact where the multiply-add is fused) joins the small
// terms, so only the final sum rounds at the scale of the result.
std::pair<llvm::Value*, llvm::Value*> scaled_log(llvm::IRBuilder<>& b, const LogParts& parts, long double c) {
  llvm::Type* t = parts.f->getType();
  double c_hi = is_single(parts.f) ? static_cast<double>(static_cast<float>(c)) : static_cast<double>(c);
  auto c_lo = static_cast<double>(c - static_cast<long double>(c_hi));
  llvm::Value* hi = b.CreateFMul(parts.f, constant(t, c_hi));
  llvm::Value* error = multiply_add(b, parts.f, constant(t, c_hi), b.CreateFNeg(hi));
  llvm::Value* low =
      multiply_add(b, parts.f, constant(t, c_lo), b.CreateFSub(error, b.CreateFMul(parts.tail, constant(t, c_hi))));
  return {hi, low};
}

// The special values of every logarithm: log(+-0) = -inf, log(x < 0) = NaN,
// log(inf) = inf, NaN stays.
llvm::Value* logarithm_special_values(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* result) {
  llvm::Type* t = x->getType();
  result = b.CreateSelect(b.CreateFCmpOEQ(x, constant(t, 0.0)), llvm::ConstantFP::getInfinity(t, true), result);
  result = b.CreateSelect(b.CreateFCmpOLT(x, constant(t, 0.0)), llvm::ConstantFP::getNaN(t), result);
  result = b.CreateSelect(b.CreateFCmpOEQ(x, llvm::ConstantFP::getInfinity(t)), x, result);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, result);
}

// log(x) = k ln2 + log(m), with ln2 split as hi + lo, hi short enough that
// k hi is exact for every k, summed as fdlibm's log does: k hi - ((tail -
// k lo) - f). Kiln's own rather than libm's: libmvec's vector log and libm's
// scalar one round differently, and a loop's vector body and its scalar
// remainder would then disagree, so that a result depended on its position
// and on how a loop was split (tiers of a jitted graph, threads).
llvm::Value* log(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  LogParts parts = log_parts(b, x);
  constexpr long double ln2 = std::numbers::ln2_v<long double>;
  int hi_bits = is_single(x) ? 12 : 41;
  double hi = std::ldexp(std::round(std::ldexp(static_cast<double>(ln2), hi_bits)), -hi_bits);
  auto lo = static_cast<double>(ln2 - static_cast<long double>(hi));
  llvm::Value* inner = b.CreateFSub(b.CreateFSub(parts.tail, b.CreateFMul(parts.k, constant(t, lo))), parts.f);
  return logarithm_special_values(b, x, b.CreateFSub(b.CreateFMul(parts.k, constant(t, hi)), inner));
}

// log2(x) = k + log(m) / ln2: k + hi is exact where k is 0 and otherwise
// rounds at the result's scale (|hi| <= 1/2 <= |k|). Measured: f32 1.22
// ulps, f64 1.25 ulps.
llvm::Value* log2(llvm::IRBuilder<>& b, llvm::Value* x) {
  LogParts parts = log_parts(b, x);
  auto [hi, low] = scaled_log(b, parts, 1 / std::numbers::ln2_v<long double>);
  return logarithm_special_values(b, x, b.CreateFAdd(b.CreateFAdd(parts.k, hi), low));
}

// log10(x) = k log10(2) + log(m) / ln10, with log10(2) split as hi + lo, hi
// short enough that k hi is exact for every k. Measured: f32 1.59 ulps,
// f64 1.53 ulps.
llvm::Value* log10(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  LogParts parts = log_parts(b, x);
  constexpr long double log10_2 = 0.301029995663981195213738894724493026768L;
  // 12 bits of k leave f32 12 bits and f64 41 bits for the high part.
  int hi_bits = is_single(x) ? 12 : 41;
  double hi = std::ldexp(std::round(std::ldexp(static_cast<double>(log10_2), hi_bits)), -hi_bits);
  auto lo = static_cast<double>(log10_2 - static_cast<long double>(hi));
  auto [scaled_hi, scaled_low] = scaled_log(b, parts, 1 / std::numbers::ln10_v<long double>);
  llvm::Value* low = multiply_add(b, parts.k, constant(t, lo), scaled_low);
  return logarithm_special_values(b, x, b.CreateFAdd(multiply_add(b, parts.k, constant(t, hi), scaled_hi), low));
}

// An angle as hi + (lo + tail): hi + lo a multiple of pi/4 to twice the
// format's precision, tail what atan's series adds to it.
struct Angle {
  llvm::Value* hi;
  llvm::Value* lo;
  llvm::Value* tail;
};

// hi and lo of `multiple` * pi/4 in x's format.
std::pair<double, double> quarter_pi_multiple(bool single, int multiple) {
  long double exact = multiple * std::numbers::pi_v<long double> / 4;
  double hi = single ? static_cast<double>(static_cast<float>(exact)) : static_cast<double>(exact);
  return {hi, static_cast<double>(exact - hi)};
}

// atan(a) for a >= 0 (or NaN), Cephes' atan.c (f64) and atanf.c (f32): a is
// reduced to |r| <= tan(pi/8) (f32) or 0.66 (f64) by atan(a) = pi/4 +
// atan((a - 1) / (a + 1)) and, beyond tan(3pi/8), pi/2 + atan(-1/a), and
// atan(r) = r + r^3 P(r^2) (a rational function for f64). `base` is the
// multiple of pi/4 added (0, 1 or 2).
Angle atan_of_magnitude(llvm::IRBuilder<>& b, llvm::Value* a) {
  llvm::Type* t = a->getType();
  bool single = is_single(a);
  llvm::Value* big = b.CreateFCmpOGT(a, constant(t, 2.414213562373095));
  llvm::Value* middle = b.CreateFCmpOGT(a, constant(t, single ? 0.4142135623730950 : 0.66));
  llvm::Value* one = constant(t, 1.0);
  llvm::Value* r = b.CreateSelect(big, b.CreateFDiv(constant(t, -1.0), a),
                                  b.CreateSelect(middle, b.CreateFDiv(b.CreateFSub(a, one), b.CreateFAdd(a, one)), a));
  llvm::Value* z = b.CreateFMul(r, r);
  llvm::Value* ratio;  // (atan(r) - r) / r^3
  if (single) {
    ratio = polynomial(b, z, {8.05374449538e-2, -1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1});
  } else {
    llvm::Value* p = polynomial(b, z,
                                {-8.750608600031904122785e-1, -1.615753718733365076637e1, -7.500855792314704667340e1,
                                 -1.228866684490136173410e2, -6.485021904942025371773e1});
    llvm::Value* q = monic_polynomial(b, z,
                                      {2.485846490142306297962e1, 1.650270098316988542046e2, 4.328810604912902668951e2,
                                       4.853903996359136964868e2, 1.945506571482613964425e2});
    ratio = b.CreateFDiv(p, q);
  }
  llvm::Value* tail = multiply_add(b, b.CreateFMul(r, z), ratio, r);
  auto [quarter_hi, quarter_lo] = quarter_pi_multiple(single, 1);
  auto [half_hi, half_lo] = quarter_pi_multiple(single, 2);
  llvm::Value* zero = constant(t, 0.0);
  llvm::Value* hi = b.CreateSelect(big, constant(t, half_hi), b.CreateSelect(middle, constant(t, quarter_hi), zero));
  llvm::Value* lo = b.CreateSelect(big, constant(t, half_lo), b.CreateSelect(middle, constant(t, quarter_lo), zero));
  return {hi, lo, tail};
}

llvm::Value* angle_value(llvm::IRBuilder<>& b, const Angle& angle) {
  return b.CreateFAdd(angle.hi, b.CreateFAdd(angle.lo, angle.tail));
}

// atan(x) = sign(x) atan(|x|), which keeps atan(-0) = -0; atan(+-inf) =
// +-pi/2 through -1/inf = -0. Measured: f32 2.16 ulps (the rounding of
// (a - 1) / (a + 1) in f32), f64 0.94 ulp.
llvm::Value* atan(llvm::IRBuilder<>& b, llvm::Value* x) {
  return copysign(b, angle_value(b, atan_of_magnitude(b, fabs(b, x))), x);
}

}  // namespace vector_math

using namespace vector_math;

// atan2(y, x) = sign(y) (pi - atan(|y| / |x|)) where x's sign bit is set,
// sign(y) atan(|y| / |x|) elsewhere; pi minus atan's multiple of pi/4 is
// again such a multiple, so the result is still hi + (lo - tail), rounded
// once at the end. The ratio's rounding moves atan by at most half an ulp
// (atan(q) / q's derivative is at most 1). 0 / 0 and inf / inf are given
// their angles (0 and pi/4) before the quadrant: atan2(+-0, -0) = +-pi,
// atan2(+-inf, -inf) = +-3pi/4. NaN in either gives NaN. Measured: f32 2.37
// ulps, f64 1.50 ulps.
llvm::Value* emit_atan2(llvm::IRBuilder<>& b, llvm::Value* y, llvm::Value* x) {
  llvm::Type* t = x->getType();
  bool single = is_single(x);
  llvm::Value* ay = fabs(b, y);
  llvm::Value* ax = fabs(b, x);
  Angle angle = atan_of_magnitude(b, b.CreateFDiv(ay, ax));
  llvm::Value* zero = constant(t, 0.0);
  llvm::Value* infinity = llvm::ConstantFP::getInfinity(t);
  llvm::Value* y_zero = b.CreateFCmpOEQ(ay, zero);
  llvm::Value* both_infinite = b.CreateAnd(b.CreateFCmpOEQ(ay, infinity), b.CreateFCmpOEQ(ax, infinity));
  auto [quarter_hi, quarter_lo] = quarter_pi_multiple(single, 1);
  angle.hi = b.CreateSelect(y_zero, zero, b.CreateSelect(both_infinite, constant(t, quarter_hi), angle.hi));
  angle.lo = b.CreateSelect(y_zero, zero, b.CreateSelect(both_infinite, constant(t, quarter_lo), angle.lo));
  angle.tail = b.CreateSelect(b.CreateOr(y_zero, both_infinite), zero, angle.tail);
  // pi - (hi + lo) for hi = 0, pi/4, pi/2.
  auto [pi_hi, pi_lo] = quarter_pi_multiple(single, 4);
  auto [three_quarters_hi, three_quarters_lo] = quarter_pi_multiple(single, 3);
  auto [half_hi, half_lo] = quarter_pi_multiple(single, 2);
  llvm::Value* at_zero = b.CreateFCmpOEQ(angle.hi, zero);
  llvm::Value* at_quarter = b.CreateFCmpOEQ(angle.hi, constant(t, quarter_hi));
  Angle reflected{b.CreateSelect(at_zero, constant(t, pi_hi),
                                 b.CreateSelect(at_quarter, constant(t, three_quarters_hi), constant(t, half_hi))),
                  b.CreateSelect(at_zero, constant(t, pi_lo),
                                 b.CreateSelect(at_quarter, constant(t, three_quarters_lo), constant(t, half_lo))),
                  b.CreateFNeg(angle.tail)};
  llvm::Value* x_negative =
      b.CreateICmpSLT(b.CreateBitCast(x, format_of(b, x).integer), llvm::ConstantInt::get(format_of(b, x).integer, 0));
  llvm::Value* result = copysign(b, b.CreateSelect(x_negative, angle_value(b, reflected), angle_value(b, angle)), y);
  return b.CreateSelect(b.CreateFCmpUNO(x, y), b.CreateFAdd(x, y), result);
}

}  // namespace kiln::llvm_backend
