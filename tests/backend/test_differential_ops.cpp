// Every public operation compiled by the native backend against the reference
// interpreter: random shapes (broadcasting, 0-d, zero-size, negative axes),
// every dtype, special values, and fusion chains.
//
// Tolerances: integers and bool are exact. Elementwise float arithmetic,
// comparisons, conversions, movement and indexing are exact too (IEEE
// operations on the same inputs). Transcendentals may differ by a few ulps
// (vector libm). Float sums may be reassociated by the vectorizer, so they
// get 4 * eps * sqrt(n) * sum(|x|); BLAS matmul eps * (k + 2) * (|a| @ |b|).
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "backend/interp/interpreter.h"
#include "cache/backend_choice.h"
#include "differential.h"
#include "support/numpy_oracle.h"

namespace kiln::testing {
namespace {

using Arrays = std::vector<Array>;
const std::vector<DType> numeric_dtypes = {DType::i32, DType::i64, DType::f32, DType::f64};
const std::vector<DType> float_dtypes = {DType::f32, DType::f64};

DType float_of(DType dtype) { return is_floating(dtype) ? dtype : DType::f32; }

std::string name_of(DType dtype) { return std::string(dtype_name(dtype)); }

class Differential : public ::testing::Test {
 protected:
  std::mt19937_64 engine{0x6b696c6e};

  int64_t integer(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(engine); }
  bool coin(int percent = 50) { return integer(0, 99) < percent; }

  /// Random data; `specials` mixes in NaN, infinities, signed zeros, halves,
  /// huge values and, for integers, the extremes (to exercise wrapping).
  Array data(const Shape& shape, DType dtype, bool specials = true, double lo = -3, double hi = 3) {
    int64_t n = shape_size(shape);
    std::uniform_real_distribution<double> real(lo, hi);
    std::vector<double> values(static_cast<size_t>(n));
    const double inf = std::numeric_limits<double>::infinity();
    const std::vector<double> float_specials = {std::nan(""), inf,   -inf, 0.0,  -0.0, 0.5,   -2.5,
                                                1e30,         -1e30, 3e9,  -3e9, 1e19, 1e-40, -1e-310};
    for (double& v : values) {
      v = real(engine);
      if (specials && coin(15)) v = float_specials[static_cast<size_t>(integer(0, 13))];
    }
    switch (dtype) {
      case DType::bool_: {
        std::vector<bool> b(values.size());
        for (size_t i = 0; i < b.size(); ++i) b[i] = coin();
        return array(b, shape);
      }
      case DType::i32: {
        std::vector<int32_t> v(values.size());
        const int32_t extremes[] = {INT32_MIN, INT32_MAX, 0, -1};
        for (size_t i = 0; i < v.size(); ++i)
          v[i] = specials && coin(10) ? extremes[integer(0, 3)]
                                      : static_cast<int32_t>(integer(std::lround(lo), std::lround(hi)));
        return array(v, shape);
      }
      case DType::i64: {
        std::vector<int64_t> v(values.size());
        const int64_t extremes[] = {INT64_MIN, INT64_MAX, 0, -1};
        for (size_t i = 0; i < v.size(); ++i)
          v[i] = specials && coin(10) ? extremes[integer(0, 3)] : integer(std::lround(lo), std::lround(hi));
        return array(v, shape);
      }
      case DType::f32: {
        return array(std::vector<float>(values.begin(), values.end()), shape);
      }
      case DType::f64: break;
    }
    return array(values, shape);
  }

  Shape shape(int min_rank = 0, int max_rank = 4, int max_extent = 5) {
    Shape result(static_cast<size_t>(integer(min_rank, max_rank)));
    for (int64_t& extent : result) extent = coin(8) ? 0 : integer(1, max_extent);
    return result;
  }

  /// A shape that broadcasts against `shape` (leading dims dropped, some set to 1).
  Shape broadcastable(const Shape& shape) {
    Shape result(shape.begin() + integer(0, static_cast<int64_t>(shape.size())), shape.end());
    for (int64_t& extent : result)
      if (coin(35)) extent = 1;
    return result;
  }

  /// Axes of a rank-`rank` array, some written negative; sometimes all axes.
  Axes axes(int64_t rank, std::vector<int64_t>* normalized = nullptr) {
    std::vector<int64_t> chosen, plain;
    for (int64_t a = 0; a < rank; ++a) {
      if (!coin(45)) continue;
      plain.push_back(a);
      chosen.push_back(coin() ? a - rank : a);
    }
    if (rank > 0 && coin(20)) {
      plain.clear();
      for (int64_t a = 0; a < rank; ++a) plain.push_back(a);
      if (normalized) *normalized = plain;
      return Axes::all();
    }
    if (normalized) *normalized = plain;
    return Axes(chosen);
  }

  /// Compiles `fn` on `args` and compares with the interpreter.
  template <class F, class... Args>
  void check(const std::string& context, const std::vector<Tolerance>& tolerances, F&& fn, const Args&... args) {
    std::optional<DifferentialCase> test;
    try {
      test.emplace(trace_case("differential", fn, args...));
    } catch (const std::exception& error) {
      ADD_FAILURE() << context << ": tracing threw " << error.what();
      return;
    }
    std::string report = run_differential(*test, tolerances);
    EXPECT_TRUE(report.empty()) << context << "\n" << report;
  }
};

// ---- elementwise ---------------------------------------------------------------------

struct UnaryCase {
  const char* name;
  std::function<Array(const Array&)> apply;
  double ulps;  // 0: exact
  bool numeric_only;
  bool integer_only = false;  // integers and bool
};

const std::vector<UnaryCase> unary_cases = {
    {"neg", [](const Array& x) { return neg(x); }, 0, true},
    {"abs", [](const Array& x) { return abs(x); }, 0, true},
    {"sign", [](const Array& x) { return sign(x); }, 0, true},
    {"exp", [](const Array& x) { return exp(x); }, 4, false},
    {"log", [](const Array& x) { return log(x); }, 4, false},
    {"log1p", [](const Array& x) { return log1p(x); }, 4, false},
    {"expm1", [](const Array& x) { return expm1(x); }, 4, false},
    {"sqrt", [](const Array& x) { return sqrt(x); }, 0, false},
    {"rsqrt", [](const Array& x) { return rsqrt(x); }, 0, false},
    {"square", [](const Array& x) { return square(x); }, 0, true},
    {"tanh", [](const Array& x) { return tanh(x); }, 4, false},
    {"sigmoid", [](const Array& x) { return sigmoid(x); }, 4, false},
    {"erf", [](const Array& x) { return erf(x); }, 4, false},
    {"sin", [](const Array& x) { return sin(x); }, 4, false},
    {"cos", [](const Array& x) { return cos(x); }, 4, false},
    {"floor", [](const Array& x) { return floor(x); }, 0, false},
    {"ceil", [](const Array& x) { return ceil(x); }, 0, false},
    {"round", [](const Array& x) { return round(x); }, 0, false},
    {"isnan", [](const Array& x) { return isnan(x); }, 0, false},
    {"relu", [](const Array& x) { return relu(x); }, 0, true},
    {"stop_gradient", [](const Array& x) { return stop_gradient(x); }, 0, false},
    {"logical_not", [](const Array& x) { return logical_not(x); }, 0, false},
    {"exp2", [](const Array& x) { return exp2(x); }, 4, false},
    {"log2", [](const Array& x) { return log2(x); }, 4, false},
    {"log10", [](const Array& x) { return log10(x); }, 4, false},
    {"arctan", [](const Array& x) { return arctan(x); }, 4, false},
    {"arcsin", [](const Array& x) { return arcsin(x); }, 4, false},
    {"arccos", [](const Array& x) { return arccos(x); }, 4, false},
    {"arcsinh", [](const Array& x) { return arcsinh(x); }, 4, false},
    {"arccosh", [](const Array& x) { return arccosh(x); }, 4, false},
    {"arctanh", [](const Array& x) { return arctanh(x); }, 4, false},
    {"bitwise_not", [](const Array& x) { return bitwise_not(x); }, 0, false, true},
};

TEST_F(Differential, UnaryEveryOpEveryDtype) {
  for (const UnaryCase& op : unary_cases) {
    for (DType dtype : all_dtypes) {
      if (op.numeric_only && dtype == DType::bool_) continue;
      if (op.integer_only && is_floating(dtype)) continue;
      // Plain operands (one per shape class) and the op fused after a producer.
      Arrays xs = {data({}, dtype),          data({0}, dtype),     data({7}, dtype),
                   data(shape(2, 4), dtype), data({3, 33}, dtype), data({2, 3, 1}, dtype, true, -100, 100)};
      Tolerance tolerance = op.ulps ? ulps(op.ulps, float_of(dtype)) : Tolerance{};
      check(
          std::string(op.name) + " " + name_of(dtype), {tolerance},
          [&](const Arrays& in) {
            Arrays out;
            for (const Array& x : in) out.push_back(op.apply(x));
            out.push_back(op.apply(maximum(in[3], in[3])));
            return out;
          },
          xs);
    }
  }
}

// Transcendentals where implementations are hard: overflow and underflow
// edges (subnormal results), subnormal inputs, around the switch points of
// piecewise approximations, tiny and huge arguments. Each set is repeated at
// shifted positions so every value meets both vector lanes and a scalar tail.
TEST_F(Differential, TranscendentalsInTheirHardRegions) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  struct Region {
    const char* name;
    std::function<Array(const Array&)> apply;
    std::vector<double> f32_values, f64_values;
  };
  const std::vector<double> tiny = {1e-30, -1e-30, 1e-10, -1e-10, 1e-5, -1e-5, 0.0, -0.0, nan};
  auto with_tiny = [&](std::vector<double> values) {
    values.insert(values.end(), tiny.begin(), tiny.end());
    return values;
  };
  const std::vector<Region> regions = {
      {"exp", [](const Array& x) { return exp(x); },
       with_tiny({-103.9, -100, -95, -87.5, -87.3, -80, 0.5, 80, 88, 88.7, 88.72, 88.8, 100, inf, -inf}),
       with_tiny({-745, -740, -720, -708.5, -700, 0.5, 700, 709, 709.78, 710, inf, -inf})},
      {"log",
       [](const Array& x) { return log(x); },
       {1e-45, 1e-40, 1.1754944e-38, 1e-30, 0.5, 0.99999994, 1, 1.0000001, 2, 1e30, 3.4e38, inf, 0, -0.0, -1, nan},
       {5e-324, 1e-310, 2.2250738585072014e-308, 1e-300, 0.5, 0.9999999999999999, 1, 1.0000000000000002, 2, 1e300,
        1.7e308, inf, 0, -1, nan}},
      {"log1p", [](const Array& x) { return log1p(x); },
       with_tiny({-1, -0.99999994, -0.5, -0.3, -1e-3, 1e-3, 0.17, 0.2, 0.4142, 0.5, 1, 10, 1e10, 1e30, 3e38, inf, -2}),
       with_tiny(
           {-1, -0.9999999999999999, -0.5, -0.3, -1e-3, 1e-3, 0.17, 0.2, 0.4142, 0.5, 1, 10, 1e10, 1e300, inf, -2})},
      {"expm1", [](const Array& x) { return expm1(x); },
       with_tiny({-100, -30, -17, -10, -1, -0.35, 0.34, 0.35, 0.5, 0.7, 1, 10, 88, 88.7, 89, inf, -inf}),
       with_tiny({-800, -40, -37, -10, -1, -0.35, 0.34, 0.35, 0.5, 0.7, 1, 10, 700, 709.7, 710, inf, -inf})},
      {"tanh", [](const Array& x) { return tanh(x); },
       with_tiny({0.1, -0.6, 0.625, -0.625, 0.63, 1, -5, 9, 10, -20, 1e3, inf, -inf}),
       with_tiny({0.1, -0.6, 0.625, -0.625, 0.63, 1, -5, 9, 19, -20, 1e3, inf, -inf})},
      {"sigmoid", [](const Array& x) { return sigmoid(x); },
       with_tiny({-120, -104, -90, -87, -50, -17, -1, 1, 17, 50, 100, inf, -inf}),
       with_tiny({-800, -745, -720, -700, -50, -37, -1, 1, 37, 50, 800, inf, -inf})},
      {"erf", [](const Array& x) { return erf(x); },
       with_tiny({0.5, -0.99, 1, -1.01, 1.5, 1.99, -2, 2.01, 3.9, -4, 4.1, 5.9, 6, -7, inf, -inf}),
       with_tiny({0.5, -0.99, 1, -1.01, 1.5, 1.99, -2, 2.01, 3.9, -4, 4.1, 5.9, 6, -7, inf, -inf})},
      {"exp2", [](const Array& x) { return exp2(x); },
       with_tiny({-152, -150, -149.5, -149, -126.5, -126, -0.5, 127, 127.9, 128, 129, inf, -inf}),
       with_tiny({-1080, -1075, -1074.5, -1074, -1022.5, -1022, -0.5, 1023, 1023.9, 1024, 1025, inf, -inf})},
      {"log2",
       [](const Array& x) { return log2(x); },
       {1e-45, 1e-40, 1.1754944e-38, 0.70710677, 0.7071068, 1, 1.4142135, 1.4142137, 2, 8, 3.4e38, inf, 0, -1, nan},
       {5e-324, 1e-310, 2.2250738585072014e-308, 0.7071067811865475, 0.7071067811865476, 1, 2, 1024, 1.7e308, inf, 0,
        -0.0, -1, nan}},
      {"log10",
       [](const Array& x) { return log10(x); },
       {1e-45, 1e-40, 1.1754944e-38, 0.1, 0.99999994, 1, 10, 1000, 1e30, 3.4e38, inf, 0, -0.0, -1, nan},
       {5e-324, 1e-310, 2.2250738585072014e-308, 0.1, 1, 10, 1000, 1e22, 1e300, 1.7e308, inf, 0, -1, nan}},
      {"arctan", [](const Array& x) { return arctan(x); },
       with_tiny({0.41421354, 0.41421357, 0.66, -0.67, 1, 2.4142134, -2.4142137, 1e10, -1e30, 3.4e38, inf, -inf}),
       with_tiny({0.41421356237309503, 0.66, -0.6600000000000001, 1, 2.414213562373095, -2.4142135623730954, 1e10,
                  -1e300, 1.7e308, inf, -inf})},
      {"sin/cos", [](const Array& x) { return sin(x) + cos(x) * 0.5; },
       with_tiny({3.1415927, 1.5707964, 6.2831855, 100, 1e4, 12345.678, 1e5, 1e6, -1e6}),
       with_tiny({3.141592653589793, 1.5707963267948966, 6.283185307179586, 100, 1e4, 12345.678, 1e5, 1e6, 1e10})},
  };
  for (const Region& region : regions) {
    for (DType dtype : float_dtypes) {
      std::vector<double> values = dtype == DType::f32 ? region.f32_values : region.f64_values;
      std::vector<double> tiled;
      for (size_t shift = 0; shift < 3; ++shift)
        for (size_t i = 0; i < values.size(); ++i) tiled.push_back(values[(i + shift * 5) % values.size()]);
      tiled.push_back(values.front());  // an odd length: a scalar tail
      Array x = astype(array(tiled, {static_cast<int64_t>(tiled.size())}), dtype);
      // sin + cos / 2 is two results rounded into one: a few more ulps of its magnitude.
      Tolerance tolerance = ulps(6, dtype);
      if (std::string(region.name) == "sin/cos") tolerance.absolute = 8 * epsilon(dtype);
      check(
          std::string(region.name) + " " + name_of(dtype), {tolerance},
          [&](const Array& v) { return Arrays{region.apply(v)}; }, x);
    }
  }
}

TEST_F(Differential, AstypeEveryPairWithSpecialValues) {
  for (DType from : all_dtypes) {
    for (DType to : all_dtypes) {
      Arrays xs = {data({}, from), data({5, 0}, from), data({4, 9}, from), data({40}, from, true, -1e10, 1e10)};
      check(
          "astype " + name_of(from) + " -> " + name_of(to), {},
          [&](const Arrays& in) {
            Arrays out;
            for (const Array& x : in) out.push_back(astype(x, to));
            out.push_back(astype(maximum(in[2], in[2]), to));  // fused after a producer
            return out;
          },
          xs);
    }
  }
}

struct BinaryCase {
  const char* name;
  std::function<Array(Operand, Operand)> apply;
  bool bool_allowed;
  bool inexact;               // pow and arctan2 on floats
  bool integer_only = false;  // integers (and bool where allowed)
};

const std::vector<BinaryCase> binary_cases = {
    {"add", [](Operand a, Operand b) { return add(a, b); }, true, false},
    {"sub", [](Operand a, Operand b) { return sub(a, b); }, false, false},
    {"mul", [](Operand a, Operand b) { return mul(a, b); }, true, false},
    {"div", [](Operand a, Operand b) { return div(a, b); }, false, false},
    {"pow", [](Operand a, Operand b) { return pow(a, b); }, false, true},
    {"maximum", [](Operand a, Operand b) { return maximum(a, b); }, true, false},
    {"minimum", [](Operand a, Operand b) { return minimum(a, b); }, true, false},
    {"equal", [](Operand a, Operand b) { return equal(a, b); }, true, false},
    {"not_equal", [](Operand a, Operand b) { return not_equal(a, b); }, true, false},
    {"less", [](Operand a, Operand b) { return less(a, b); }, true, false},
    {"less_equal", [](Operand a, Operand b) { return less_equal(a, b); }, true, false},
    {"greater", [](Operand a, Operand b) { return greater(a, b); }, true, false},
    {"greater_equal", [](Operand a, Operand b) { return greater_equal(a, b); }, true, false},
    {"logical_and", [](Operand a, Operand b) { return logical_and(a, b); }, true, false},
    {"logical_or", [](Operand a, Operand b) { return logical_or(a, b); }, true, false},
    {"arctan2", [](Operand a, Operand b) { return arctan2(a, b); }, true, true},
    {"floor_divide", [](Operand a, Operand b) { return floor_divide(a, b); }, false, false},
    {"remainder", [](Operand a, Operand b) { return remainder(a, b); }, false, false},
    {"copysign", [](Operand a, Operand b) { return copysign(a, b); }, true, false},
    {"nextafter", [](Operand a, Operand b) { return nextafter(a, b); }, true, false},
    {"bitwise_and", [](Operand a, Operand b) { return bitwise_and(a, b); }, true, false, true},
    {"bitwise_or", [](Operand a, Operand b) { return bitwise_or(a, b); }, true, false, true},
    {"bitwise_xor", [](Operand a, Operand b) { return bitwise_xor(a, b); }, true, false, true},
    {"left_shift", [](Operand a, Operand b) { return left_shift(a, b); }, false, false, true},
    {"right_shift", [](Operand a, Operand b) { return right_shift(a, b); }, false, false, true},
};

TEST_F(Differential, BinaryEveryOpEveryDtypeWithBroadcasting) {
  for (const BinaryCase& op : binary_cases) {
    for (DType dtype : all_dtypes) {
      if (!op.bool_allowed && dtype == DType::bool_) continue;
      if (op.integer_only && is_floating(dtype)) continue;
      Arrays xs;
      for (int k = 0; k < 4; ++k) {
        Shape a = shape(0, 4);
        Shape b = broadcastable(a);
        if (coin()) std::swap(a, b);
        xs.push_back(data(a, dtype));
        xs.push_back(data(b, dtype));
      }
      xs.push_back(data({3, 17}, dtype));
      xs.push_back(data({3, 17}, dtype));
      Tolerance tolerance = op.inexact ? ulps(4, float_of(dtype)) : Tolerance{};
      check(
          std::string(op.name) + " " + name_of(dtype), {tolerance},
          [&](const Arrays& in) {
            Arrays out;
            for (size_t k = 0; k + 1 < in.size(); k += 2) out.push_back(op.apply(in[k], in[k + 1]));
            // Weakly typed numbers on either side, and a literal folded into a chain.
            out.push_back(op.apply(in[8], 2));
            Operand number = dtype == DType::bool_ ? Operand(true) : op.integer_only ? Operand(5) : Operand(0.5);
            out.push_back(op.apply(number, in[9]));
            out.push_back(op.apply(maximum(in[8], in[9]), in[9]));
            return out;
          },
          xs);
    }
  }
}

TEST_F(Differential, BinaryMixedDtypesPromote) {
  const std::vector<std::pair<DType, DType>> pairs = {{DType::i32, DType::f32},   {DType::bool_, DType::i64},
                                                      {DType::i64, DType::f64},   {DType::f32, DType::f64},
                                                      {DType::bool_, DType::f32}, {DType::i32, DType::i64}};
  for (const BinaryCase& op : binary_cases) {
    for (auto [first, second] : pairs) {
      if (op.integer_only && (is_floating(first) || is_floating(second))) continue;
      Shape a = shape(1, 3);
      Arrays xs = {data(a, first), data(broadcastable(a), second)};
      DType result = is_floating(first) || is_floating(second) ? std::max(first, second) : DType::f32;
      Tolerance tolerance = op.inexact ? ulps(4, float_of(result)) : Tolerance{};
      check(
          std::string(op.name) + " " + name_of(first) + " with " + name_of(second), {tolerance},
          [&](const Array& x, const Array& y) {
            if (!op.bool_allowed && (first == DType::bool_)) return Arrays{op.apply(astype(x, DType::i32), y)};
            return Arrays{op.apply(x, y), op.apply(y, x)};
          },
          xs[0], xs[1]);
    }
  }
}

TEST_F(Differential, WhereAndClip) {
  for (DType dtype : all_dtypes) {
    Shape s = shape(1, 4);
    Arrays xs = {data(broadcastable(s), DType::bool_), data(s, dtype), data(broadcastable(s), dtype), data({}, dtype)};
    check(
        "where/clip " + name_of(dtype), {},
        [&](const Arrays& in) {
          Arrays out = {kiln::where(in[0], in[1], in[2]), kiln::where(in[0], in[3], in[1]),
                        kiln::where(in[0], in[1], 1)};
          if (dtype != DType::bool_) {
            out.push_back(clip(in[1], in[3], in[2]));
            out.push_back(clip(in[1], -1, 2));
          }
          return out;
        },
        xs);
  }
}

// ---- shape ---------------------------------------------------------------------------

TEST_F(Differential, MovementBetweenKernels) {
  for (DType dtype : all_dtypes) {
    for (int round = 0; round < 3; ++round) {
      Shape s = shape(1, 4);
      int64_t rank = static_cast<int64_t>(s.size());
      Array x = data(s, dtype), y = data(s, dtype);
      std::vector<int64_t> perm(s.size());
      for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
      std::shuffle(perm.begin(), perm.end(), engine);
      Shape target = s;
      target.insert(target.begin(), integer(1, 3));
      std::vector<int64_t> start, stop, step;
      for (int64_t extent : s) {
        // Static slice bounds must lie in [-extent, extent].
        start.push_back(integer(-extent, extent));
        stop.push_back(integer(-extent, extent));
        step.push_back(integer(1, 3));
      }
      std::vector<int64_t> lo, hi;
      for (size_t d = 0; d < s.size(); ++d) {
        lo.push_back(integer(0, 2));
        hi.push_back(integer(0, 2));
      }
      int64_t axis = integer(-rank, rank - 1);
      std::vector<std::pair<std::string, std::function<Array(const Array&)>>> ops = {
          {"reshape", [&](const Array& v) { return reshape(v, {-1}); }},
          {"reshape2",
           [&](const Array& v) {
             return reshape(v, {1, shape_size(s), 1});
           }},
          {"transpose", [&](const Array& v) { return transpose(v, perm); }},
          {"transpose_default", [&](const Array& v) { return transpose(v); }},
          {"broadcast_to", [&](const Array& v) { return broadcast_to(v, target); }},
          {"expand_dims",
           [&](const Array& v) {
             return expand_dims(v, {-1, 0});
           }},
          {"squeeze",
           [&](const Array& v) {
             return squeeze(expand_dims(v, {0, -1}));
           }},
          {"slice", [&](const Array& v) { return slice(v, start, stop, step); }},
          {"concatenate",
           [&](const Array& v) {
             return concatenate({v, v, v}, axis);
           }},
          {"stack",
           [&](const Array& v) {
             return stack({v, v}, axis);
           }},
          {"pad", [&](const Array& v) { return pad(v, lo, hi, dtype == DType::bool_ ? Scalar(true) : Scalar(7)); }},
          {"flip", [&](const Array& v) { return flip(v, Axes(std::vector<int64_t>{axis})); }},
          {"flip_all", [&](const Array& v) { return flip(v); }},
      };
      for (auto& [name, op] : ops) {
        check(
            name + " " + name_of(dtype) + shape_string(s), {},
            [&](const Array& a, const Array& b) {
              // Alone (a view or a reference step on an input), after a kernel, before a kernel.
              return Arrays{op(a), op(maximum(a, b)), maximum(op(a), op(b))};
            },
            x, y);
      }
    }
  }
}

// ---- reductions ----------------------------------------------------------------------

TEST_F(Differential, ReductionsOfInputsAndOfFusedProducers) {
  for (DType dtype : all_dtypes) {
    for (int round = 0; round < 4; ++round) {
      Shape s = shape(0, 4, 6);
      if (round == 0) s = {3, 70};
      Array x = data(s, dtype, round == 1), y = data(s, dtype, false);
      std::vector<int64_t> reduced;
      Axes chosen = axes(static_cast<int64_t>(s.size()), &reduced);
      bool keepdims = coin();
      int64_t n = 1;
      for (int64_t a : reduced) n *= s[static_cast<size_t>(a)];
      auto producer = [&](const Array& a, const Array& b) {
        if (dtype == DType::bool_) return logical_or(a, b);
        return a * b + 1;
      };
      Array produced = producer(x, y);
      std::string context = name_of(dtype) + shape_string(s) + " n=" + std::to_string(n);
      DType accumulate = is_floating(dtype) ? dtype : DType::f32;
      double eps = epsilon(accumulate), root = std::sqrt(static_cast<double>(std::max<int64_t>(n, 1)));
      auto sum_tolerance = [&](const Array& v, bool mean) {
        Tolerance t;
        if (!is_floating(dtype) && !mean) return t;
        Array magnitude = astype(abs(astype(v, accumulate)), accumulate);
        t.scale = mean ? kiln::mean(magnitude, chosen, keepdims) : sum(magnitude, chosen, keepdims);
        t.scale_factor = 4 * eps * root;
        t.relative = 2 * eps;
        return t;
      };
      check(
          "sum " + context, {sum_tolerance(x, false), sum_tolerance(produced, false)},
          [&](const Array& a, const Array& b) {
            return Arrays{sum(a, chosen, keepdims), sum(producer(a, b), chosen, keepdims)};
          },
          x, y);
      check(
          "mean " + context, {sum_tolerance(x, true), sum_tolerance(produced, true)},
          [&](const Array& a, const Array& b) {
            return Arrays{mean(a, chosen, keepdims), mean(producer(a, b), chosen, keepdims)};
          },
          x, y);
      // Without special values: whether a product of huge and tiny factors
      // overflows depends on the order of multiplication.
      Tolerance product;
      product.relative = 2 * static_cast<double>(n) * eps;
      check(
          "prod " + context, {product},
          [&](const Array& a, const Array& b) {
            return Arrays{prod(a, chosen, keepdims), prod(producer(a, b), chosen, keepdims)};
          },
          data(s, dtype, false), y);
      bool empty = false;
      for (int64_t a : reduced) empty = empty || s[static_cast<size_t>(a)] == 0;
      if (!empty) {
        // Which of +0.0 and -0.0 a max/min reduction returns depends on its order.
        check(
            "max/min " + context, {any_zero_sign()},
            [&](const Array& a, const Array& b) {
              return Arrays{max(a, chosen, keepdims), min(a, chosen, keepdims), max(producer(a, b), chosen, keepdims),
                            min(producer(a, b), chosen, keepdims)};
            },
            x, y);
        Tolerance lse;
        lse.absolute = (8 + 4 * root) * eps;
        lse.relative = 4 * eps;
        check(
            "logsumexp " + context, {lse},
            [&](const Array& a, const Array& b) {
              return Arrays{logsumexp(a, chosen, keepdims), logsumexp(producer(a, b), chosen, keepdims)};
            },
            x, y);
      }
      if (!s.empty() && s[s.size() - 1] > 0 && shape_size(s) > 0) {
        int64_t axis = integer(-static_cast<int64_t>(s.size()), static_cast<int64_t>(s.size()) - 1);
        double along = std::sqrt(
            static_cast<double>(s[static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(s.size()) : axis)]));
        Tolerance soft;
        soft.relative = (8 + 4 * along) * eps;
        soft.absolute = std::numeric_limits<float>::denorm_min();
        Tolerance log_soft;
        log_soft.relative = 4 * eps;
        log_soft.absolute = (8 + 4 * along) * eps;
        check(
            "softmax/log_softmax " + context, {soft, log_soft, soft, log_soft},
            [&](const Array& a, const Array& b) {
              return Arrays{softmax(a, axis), log_softmax(a, axis), softmax(producer(a, b), axis),
                            log_softmax(producer(a, b), axis)};
            },
            x, y);
        check(
            "argmax/argmin " + context, {},
            [&](const Array& a, const Array& b) {
              return Arrays{argmax(a, axis, keepdims), argmin(a, axis), argmax(a), argmin(producer(a, b), axis, true)};
            },
            x, y);
      }
      check(
          "cumsum " + context, {},
          [&](const Array& a, const Array& b) {
            Arrays out = {cumsum(a), cumsum(producer(a, b))};
            if (!s.empty()) out.push_back(cumsum(a, -1));
            return out;
          },
          x, y);
    }
  }
}

// ---- linear algebra ------------------------------------------------------------------

TEST_F(Differential, MatmulEveryDtypeAndShapeKind) {
  const std::vector<std::pair<Shape, Shape>> shapes = {{{5}, {5}},
                                                       {{4}, {4, 3}},
                                                       {{3, 4}, {4}},
                                                       {{3, 4}, {4, 5}},
                                                       {{2, 3, 4}, {4, 5}},
                                                       {{1, 3, 4}, {2, 4, 2}},
                                                       {{2, 1, 3, 4}, {3, 4, 2}},
                                                       {{0, 4}, {4, 3}},
                                                       {{3, 0}, {0, 2}},
                                                       {{3, 4}, {4, 0}},
                                                       {{17, 33}, {33, 9}}};
  for (DType dtype : all_dtypes) {
    for (const auto& [sa, sb] : shapes) {
      Array a = data(sa, dtype, false), b = data(sb, dtype, false);
      int64_t k = sa.back();
      Tolerance tolerance;
      if (is_floating(dtype)) {
        tolerance.scale = matmul(abs(a), abs(b));
        tolerance.scale_factor = epsilon(dtype) * static_cast<double>(k + 2);
      }
      std::string context = "matmul " + name_of(dtype) + shape_string(sa) + " @ " + shape_string(sb);
      check(
          context, {tolerance}, [](const Array& x, const Array& y) { return Arrays{matmul(x, y)}; }, a, b);
      if (dtype == DType::bool_) continue;
      // Elementwise producers and consumers around the BLAS step.
      Tolerance chain = tolerance;
      if (is_floating(dtype)) {
        chain.scale = matmul(abs(a) + 1, abs(b));
        chain.scale_factor *= 4;
        chain.relative = 4 * epsilon(dtype);
      }
      check(
          context + " in a chain", {chain},
          [](const Array& x, const Array& y) { return Arrays{relu(matmul(x + 1, y) * 2 - 1)}; }, a, b);
    }
  }
}

// Transposes of the last two axes feeding a matmul are read transposed by
// BLAS instead of materialized — unless something else reads them too.
TEST_F(Differential, MatmulOfTransposedOperands) {
  for (DType dtype : all_dtypes) {
    Array a = data({5, 3}, dtype, false), b = data({5, 4}, dtype, false), c = data({4, 3}, dtype, false);
    Array square = data({4, 4}, dtype, false), batched = data({2, 6, 3}, dtype, false),
          other = data({2, 6, 5}, dtype, false);
    Tolerance tolerance;
    if (is_floating(dtype)) {
      tolerance.absolute = 64 * epsilon(dtype);
      tolerance.relative = 16 * epsilon(dtype);
    }
    check(
        "transposed matmul " + name_of(dtype), {tolerance},
        [](const Array& x, const Array& y, const Array& z, const Array& s, const Array& p, const Array& q) {
          Array xt = transpose(x), yt = transpose(y);
          return Arrays{matmul(xt, y),                                          // a^T b
                        matmul(transpose(matmul(xt, y)), transpose(z)),         // (x^T y)^T z^T
                        matmul(transpose(s), transpose(s)),                     // one transpose, both operands
                        matmul(transpose(p, {0, 2, 1}), q),                     // batched
                        matmul(transpose(q, {0, 2, 1}), p), matmul(xt, x), xt,  // also an output
                        // A swap of the last two axes of a batch-permuted value.
                        matmul(transpose(transpose(p, {1, 0, 2}), {0, 2, 1}), transpose(q, {1, 0, 2})),
                        // A transpose that a reduction reads too.
                        matmul(yt, y) + sum(yt, {1})};
        },
        a, b, c, square, batched, other);
  }
}

// Products large enough to be split across the thread pool: by output rows
// (more rows than columns), by output columns (fewer), by batch entries
// (batches of at least as many entries as threads), with either operand
// stored transposed — each part is a separate BLAS call on its own slice.
TEST_F(Differential, MatmulSplitAcrossThreads) {
  for (DType dtype : float_dtypes) {
    Array tall = data({301, 67}, dtype, false), wide = data({67, 509}, dtype, false);
    Array narrow = data({67, 5}, dtype, false), batched = data({3, 129, 40}, dtype, false);
    Array batched_right = data({3, 40, 77}, dtype, false), single = data({1, 129, 40}, dtype, false);
    Tolerance tolerance;
    tolerance.absolute = 512 * epsilon(dtype);
    tolerance.relative = 64 * epsilon(dtype);
    check(
        "split matmul " + name_of(dtype), {tolerance},
        [](const Array& t, const Array& w, const Array& n, const Array& b, const Array& r, const Array& s) {
          return Arrays{matmul(t, n),                         // rows split
                        matmul(t, w),                         // columns split
                        matmul(transpose(w), transpose(t)),   // both stored transposed, rows split
                        matmul(transpose(n), transpose(t)),   // columns split, transposed operands
                        matmul(b, r),                         // batch entries split
                        matmul(s, r),                         // broadcast batch of one
                        matmul(transpose(b, {0, 2, 1}), b)};  // batched, A transposed
        },
        tall, wide, narrow, batched, batched_right, single);
  }
}

// ---- indexing ------------------------------------------------------------------------

TEST_F(Differential, IndexingOps) {
  for (DType dtype : all_dtypes) {
    for (DType index_dtype : {DType::i32, DType::i64}) {
      Shape s = {4, 3, 5};
      Array x = data(s, dtype, false);
      Array indices = astype(array(std::vector<int64_t>{0, -1, 3, 7, -9, 2}, {2, 3}), index_dtype);
      Array along = astype(data({4, 2, 5}, DType::i64, false, -4, 4), index_dtype);
      Array start = astype(scalar(int64_t{1}), index_dtype);
      Array update = data({2, 2, 5}, dtype, false);
      Array updates = data({4, 6, 5}, dtype, false);
      Array flat_indices = astype(array(std::vector<int64_t>{1, 1, 0, 2, 2, 2}, {6}), index_dtype);
      check(
          "indexing " + name_of(dtype) + " with " + name_of(index_dtype), {},
          [&](const Array& v, const Array& i, const Array& a, const Array& st, const Array& u, const Array& us,
              const Array& fi) {
            Array produced = maximum(v, v);
            Arrays out = {take(v, i),
                          take(produced, i, -2),
                          take(v, i, 0),
                          take_along_axis(v, a, 1),
                          dynamic_slice(produced, {st, 0, Operand(st)}, {2, 3, 4}),
                          dynamic_slice(v, {7, -2, 2}, {4, 1, 5}),
                          dynamic_update_slice(v, u, {st, 1, 0}),
                          dynamic_update_slice(produced, u, {10, st, -1}),
                          one_hot(fi, 4, DType::f32),
                          one_hot(i, 3, DType::i32)};
            if (dtype != DType::bool_) out.push_back(scatter_add(v, fi, us, 1));
            for (const Array& result :
                 {gather(v, i), gather(produced, reshape(i, {3, 2})), scatter(v, fi, us, 1),
                  scatter_mul(produced, fi, us, 1), scatter_max(v, fi, us, 1), scatter_min(produced, fi, us, 1),
                  put_along_axis(v, a, take_along_axis(produced, a, 1), 1), v.at({i, Slice{}, 1}).add(2),
                  cumprod(produced, 1, true)})
              out.push_back(result);
            return out;
          },
          x, indices, along, start, update, updates, flat_indices);
    }
  }
}

// ---- creation and random numbers inside a trace ---------------------------------------

TEST_F(Differential, CreationInsideATrace) {
  for (DType dtype : numeric_dtypes) {
    Array x = data({3, 4}, dtype, false);
    check(
        "creation " + name_of(dtype), {},
        [&](const Array& v) {
          return Arrays{v + zeros({3, 4}, dtype),
                        v * ones({4}, dtype),
                        full({3, 1}, 2, dtype) + v,
                        v + arange(4),
                        arange(1, 9, 2),
                        arange(0.5, 3.0, 0.25),
                        eye(3, 4, 1, dtype) * v,
                        linspace(0, 1, 7),
                        linspace(-1, 1, 4, false, DType::f64),
                        full({}, 2.5)};
        },
        x);
  }
}

TEST_F(Differential, RandomNumbers) {
  Array key = random::key(42);
  check(
      "random", {{}, {}, {}, ulps(16, DType::f32), {}, {}, {}, ulps(16, DType::f64), {}},
      [](const Array& k) {
        Array keys = random::split(k, 3);
        std::vector<Array> parts = random::split_keys(k, 2);
        return Arrays{keys,
                      random::uniform(parts[0], {3, 5}),
                      random::uniform(parts[1], {4}, DType::f64, -2, 5),
                      random::normal(parts[0], {2, 7}),
                      random::randint(parts[1], {9}, -5, 17),
                      random::randint(parts[1], {2, 2}, 0, 1000, DType::i64),
                      random::bernoulli(k, 0.3, {10}),
                      random::normal(k, {6}, DType::f64),
                      random::uniform(random::key(7), {0, 3})};
      },
      key);
}

// ---- fusion chains and graph shapes the plan must handle ------------------------------

TEST_F(Differential, ElementwiseChainsWithBroadcastsAndLiterals) {
  for (DType dtype : float_dtypes) {
    Array x = data({3, 1, 4}, dtype, false), y = data({4}, dtype, false), z = data({}, dtype, false);
    Array w = data({2, 3, 5, 4}, dtype, false);
    // Terms up to ~30 cancel in the first output: an absolute part on top of the ulps.
    Tolerance chain = ulps(16, dtype);
    chain.absolute = 16 * 30 * epsilon(dtype);
    check(
        "float chain " + name_of(dtype), {chain},
        [](const Array& a, const Array& b, const Array& c, const Array& d) {
          Array t = exp(a * 0.5) * b + 2.5 - sin(c) / (1 + abs(a));
          return Arrays{t, kiln::where(t > 1, t, -t) * d, maximum(tanh(d), sigmoid(b)) - erf(c),
                        sqrt(abs(d)) + square(a)};
        },
        x, y, z, w);
  }
  for (DType dtype : {DType::i32, DType::i64}) {
    Array a = data({5, 1}, dtype), b = data({1, 6}, dtype), c = data({6}, dtype);
    check(
        "integer chain " + name_of(dtype), {},
        [](const Array& p, const Array& q, const Array& r) {
          Array t = maximum(p * q - 7, r) + abs(-p) * sign(q);
          return Arrays{t, pow(t, 2) + minimum(q, 3), astype(t, DType::f64) / 3.0, kiln::where(t > r, t, p)};
        },
        a, b, c);
  }
  Array p = data({4, 5}, DType::bool_), q = data({5}, DType::bool_), f = data({4, 5}, DType::f32);
  check(
      "bool chain", {},
      [](const Array& a, const Array& b, const Array& v) {
        return Arrays{logical_or(a, !b) & (v > 0), a == b, astype(a, DType::f32) + astype(b, DType::i32), !(a | b)};
      },
      p, q, f);
}

// A flat kernel with a long body (many transcendental functions) runs its
// last partial vector masked inside the vector loop instead of in a scalar
// copy: every length around the vector width must come out right.
TEST_F(Differential, LongFlatKernelsAtEveryTailLength) {
  auto chain = [](const Array& a) {
    Array t = a;
    for (int i = 0; i < 10; ++i) t = tanh(t * 1.5 + 0.25) + 0.1 * exp(-abs(t));
    return Arrays{t};
  };
  for (DType dtype : float_dtypes) {
    for (int64_t n : {1, 7, 15, 16, 17, 31, 33, 1000, 4099}) {
      Tolerance tolerance = ulps(32, dtype);
      tolerance.absolute = 32 * epsilon(dtype);
      check("long chain " + name_of(dtype) + " n=" + std::to_string(n), {tolerance}, chain, data({n}, dtype, true));
    }
  }
}

// Flat kernels streaming 64 MiB or more run in blocks, each prefetching the
// lines a few KiB ahead in every array it reads (here an f64 and a bool
// input of one merged loop with two outputs). The length is no multiple of
// the block, threads split it anywhere, and the last blocks prefetch past
// the arrays' ends: all of it must come out exact. Small kernels do not
// prefetch.
TEST_F(Differential, StreamingKernelsPrefetchAhead) {
  auto update = [](const Array& v, const Array& mask) {
    Array t = kiln::where(mask, v * 1.5, -v) + 1;
    return Arrays{t, t * t - v};
  };
  int64_t n = (int64_t{1} << 23) + 37;
  Array x = random::normal(random::key(9), {n}, DType::f64);
  Array mask = random::bernoulli(random::key(10), 0.5, {n});
  auto test = trace_case("streaming", update, x, mask);
  std::string plan = describe_plan(test.graph);
  EXPECT_NE(plan.find("also writing"), std::string::npos) << plan;
  EXPECT_NE(plan.find("prefetching ahead"), std::string::npos) << plan;
  EXPECT_EQ(run_differential(test, {}), "");
  Array small = random::normal(random::key(9), {4096}, DType::f64);
  std::string small_plan = describe_plan(trace_case("small", update, small, small > 0).graph);
  EXPECT_EQ(small_plan.find("prefetching"), std::string::npos) << small_plan;
}

// Kernels merged into one loop store only what is read outside it: in a
// chain y -> tanh(y) - y / 2 whose every link is read twice, the links in the
// middle stay in registers and only the last one, which a reduction reads,
// is written besides the kernel's first value.
TEST_F(Differential, MergedKernelsStoreOnlyWhatOthersRead) {
  auto chain = [](const Array& v) {
    Array y = v;
    for (int i = 0; i < 6; ++i) y = tanh(y * 1.01 + 0.1 * i) - y * 0.5;
    return Arrays{sum(y, -1)};
  };
  Array x = data({64, 33}, DType::f32, false);
  auto test = trace_case("merged_chain", chain, x);
  std::string plan = describe_plan(test.graph);
  size_t writes = 0;
  for (size_t at = plan.find("also writing"); at != std::string::npos; at = plan.find("also writing", at + 1)) ++writes;
  EXPECT_EQ(writes, 1u) << plan;
  Tolerance tolerance = ulps(64, DType::f32);
  tolerance.absolute = 64 * 33 * epsilon(DType::f32);
  EXPECT_EQ(run_differential(test, {tolerance}), "");
}

// A broadcast that repeats an expensive value reads it stored once rather
// than recomputing its chain per repeat: exp(x) * 2 broadcast to [3, n]
// runs exp once per element of x, in a kernel of its own.
TEST_F(Differential, BroadcastOfAnExpensiveChainReadsItStored) {
  auto repeated = [](const Array& x, const Array& rows) { return Arrays{(exp(x) * 2.0f + 1.0f) * rows}; };
  Array x = data({1000}, DType::f32, false), rows = data({3, 1}, DType::f32, false);
  auto test = trace_case("repeated_exp", repeated, x, rows);
  std::string plan = describe_plan(test.graph);
  EXPECT_NE(plan.find("f32[1000]: elementwise kernel"), std::string::npos) << plan;
  EXPECT_EQ(run_differential(test, {ulps(8, DType::f32)}), "");
  auto cheap = [](const Array& x, const Array& rows) { return Arrays{(x * 2.0f + 1.0f) * rows}; };
  std::string cheap_plan = describe_plan(trace_case("repeated_mul", cheap, x, rows).graph);
  EXPECT_EQ(cheap_plan.find("f32[1000]: elementwise kernel"), std::string::npos) << cheap_plan;  // recomputed
}

TEST_F(Differential, ReductionsAndSoftmaxOfFusedProducers) {
  for (DType dtype : float_dtypes) {
    Array x = data({4, 3, 50}, dtype, false), y = data({50}, dtype, false);
    double eps = epsilon(dtype);
    Tolerance loose;
    loose.absolute = 200 * eps * 50;
    loose.relative = 64 * eps;
    check(
        "reductions of producers " + name_of(dtype), {loose},
        [](const Array& a, const Array& b) {
          Array e = exp(a - 1) * b;
          return Arrays{sum(e, {-1}),           max(a * b, {0, 2}, true), min(abs(a) + b, {1}),
                        mean(e, {0, -1}, true), logsumexp(a * b, {-1}),   softmax(a + b, 1),
                        log_softmax(a * 2, -1), softmax(sum(e, {2}), 0)};
        },
        x, y);
  }
}

TEST_F(Differential, MatmulFollowedByElementwiseAndReshapeViews) {
  Array x = data({8, 16}, DType::f32, false), w = data({16, 10}, DType::f32, false), b = data({10}, DType::f32, false);
  Tolerance tolerance;
  tolerance.absolute = 1e-4;
  tolerance.relative = 1e-5;
  check(
      "mlp layer", {tolerance},
      [](const Array& input, const Array& weight, const Array& bias) {
        Array hidden = relu(matmul(input, weight) + bias);
        Array flat = reshape(hidden * 2, {-1});
        Array back = reshape(flat, {10, 8});
        return Arrays{hidden,
                      flat + 1,
                      sum(back, {0}),
                      log_softmax(hidden, -1),
                      reshape(reshape(input, {2, 64}), {128}),
                      matmul(transpose(hidden), hidden)};
      },
      x, w, b);
}

// Large enough that kernels are split across the thread pool.
TEST_F(Differential, LargeArraysSplitAcrossThreads) {
  for (DType dtype : {DType::i32, DType::f32, DType::f64}) {
    Array x = data({257, 1031}, dtype, false), y = data({1031}, dtype, false), z = data({257, 1}, dtype, false);
    auto sum_tolerance = [&](const Array& magnitude, const Axes& axes, int64_t n) {
      Tolerance t;
      if (!is_floating(dtype)) return t;
      t.scale = sum(magnitude, axes);
      t.scale_factor = 4 * epsilon(dtype) * std::sqrt(static_cast<double>(n));
      return t;
    };
    Tolerance soft;
    soft.relative = (8 + 4 * std::sqrt(1031.0)) * epsilon(float_of(dtype));
    soft.absolute = std::numeric_limits<float>::denorm_min();
    check(
        "large " + name_of(dtype),
        {{},
         ulps(4, float_of(dtype)),
         sum_tolerance(x * x, {1}, 1031),
         sum_tolerance(abs(x), {0}, 257),
         any_zero_sign(),
         soft,
         {}},
        [](const Array& a, const Array& b, const Array& c) {
          return Arrays{a * b + c, exp(a), sum(a * a, {1}), sum(a, {0}), max(a, {0, 1}), softmax(a, -1), argmax(a, 0)};
        },
        x, y, z);
    Array indices = astype(array(std::vector<int64_t>{5, -1, 1030, 0, 77, 2000, -3000}, {7}), DType::i32);
    check(
        "large movement and indexing " + name_of(dtype), {},
        [](const Array& a, const Array& i) {
          return Arrays{transpose(a),
                        slice(a, {1, 3}, {256, 1030}, {2, 3}),
                        concatenate({a, a * 2}, 1),
                        take(a, i, 1),
                        take(a, i),
                        flip(a, {0}),
                        pad(a, {1, 2}, {3, 0}, 1),
                        cumsum(a, 0),
                        cumsum(a, 1),
                        argmin(a, 1),
                        dynamic_slice(a, {10, 20}, {200, 1000}),
                        dynamic_update_slice(a, slice(a * 3, {0, 0}, {100, 500}), {50, 400}),
                        scatter_add(a, i, take(a, i, 1), 1),
                        scatter_add(a, i, take(a, i, 0) * 2, 0)};  // one row: its columns are split
        },
        x, indices);
  }
}

// An executable may run on many threads at once, each call splitting its
// own kernels across the pool.
// A donated argument's memory may receive an output, but only once nothing
// else reads it: here a reshape (a view of the same memory) is read after the
// kernel that could overwrite the argument, or is itself an output.
TEST_F(Differential, DonatedArgumentsStillReadThroughViews) {
  Array x = data({4, 40}, DType::f32, false), y = data({4, 40}, DType::i32, false);
  check(
      "view returned", {},
      [](const Array& a) {
        return Arrays{reshape(a, {160}), a * 2};
      },
      x);
  check(
      "view read after a kernel", {},
      [](const Array& a) {
        Array view = reshape(a, {160});
        Array doubled = a * 2;
        return Arrays{doubled, view + 1};
      },
      x);
  check(
      "views and transposes", {},
      [](const Array& a, const Array& b) {
        Array view = reshape(a, {2, 80});
        Array sum_of = a + astype(b, DType::f32);
        return Arrays{sum_of, transpose(view), max(view, {1}), b * 3, reshape(b, {160}) - 1};
      },
      x, y);
}

TEST_F(Differential, OneExecutableRunningOnManyThreads) {
  Array x = data({300, 700}, DType::f32, false), y = data({700}, DType::f32, false);
  DifferentialCase test = trace_case(
      "threads",
      [](const Array& a, const Array& b) {
        return Arrays{maximum(a * b + 1, 0), max(a, {1}), transpose(a) - 1, a * 2};
      },
      x, y);
  std::vector<Array> expected = detail::interpret(test.graph, test.arguments, test.captures);
  auto executable = cache::default_backend().compile(detail::shared_ir(test.graph));
  std::vector<std::string> failures(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < failures.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int call = 0; call < 20 && failures[t].empty(); ++call) {
        std::vector<Array> got = executable->run(test.arguments, test.captures);
        for (size_t i = 0; i < got.size() && failures[t].empty(); ++i)
          failures[t] = compare_arrays(got[i], expected[i], any_zero_sign());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (size_t t = 0; t < failures.size(); ++t)
    EXPECT_TRUE(failures[t].empty()) << "thread " << t << ": " << failures[t];
}

TEST_F(Differential, OutputsThatAliasInputsOrAreLiterals) {
  Array x = data({2, 3}, DType::f32, false), n = data({4}, DType::i32, false);
  check(
      "aliases", {},
      [](const Array& a, const Array& i) {
        Array e = a * 2;
        return Arrays{a, a, i, reshape(a, {3, 2}), e, e, stop_gradient(a), squeeze(expand_dims(i, 0))};
      },
      x, n);
  check(
      "literals", {},
      [](const Array& a) {
        return Arrays{full({}, 2.5f), zeros({2, 3}), full({3}, true), arange(5), ones_like(a), a + full({}, 1.0f)};
      },
      x);
  check("literal only", {}, []() { return Arrays{full({}, 7), full({2}, 1.5)}; });
}

TEST_F(Differential, ZeroSizeAndScalarGraphs) {
  for (DType dtype : all_dtypes) {
    Array empty = data({2, 0, 3}, dtype), single = data({}, dtype);
    check(
        "zero-size " + name_of(dtype), {},
        [&](const Array& e, const Array& s) {
          Arrays out = {maximum(e, s), reshape(e, {0, 6}), concatenate({e, e}, 1), transpose(e),
                        max(maximum(e, s), {2}, true)};
          if (dtype != DType::bool_) out.push_back(sum(e * s, {1}));
          return out;
        },
        empty, single);
  }
}

TEST_F(Differential, CapturedArraysBecomeImplicitInputs) {
  Array captured = data({3, 4}, DType::f32, false), bias = data({4}, DType::f64, false);
  Array x = data({3, 4}, DType::f32, false);
  check(
      "captures", {},
      [&](const Array& a) {
        return Arrays{a * captured + 1, astype(a, DType::f64) - bias, captured};
      },
      x);
}

// Graph-level simplifications (identities, merged duplicates, folded
// literal subgraphs) must keep every value bit for bit, signed zeros and NaN
// included: x + 0.0 turns -0.0 into +0.0, x * 0 is not 0 for NaN or inf.
TEST_F(Differential, AlgebraicIdentitiesKeepSignedZerosAndNaN) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  for (DType dtype : float_dtypes) {
    Array x = astype(array(std::vector<double>{-0.0, 0.0, nan, inf, -inf, -1.5, 2.0, 1e-310}, {8}), dtype);
    std::vector<Tolerance> tolerances(22);
    tolerances[20] = ulps(4, dtype);  // exp(v) + exp(v): merged or not, exp is within a few ulps
    check(
        "float identities " + name_of(dtype), tolerances,
        [](const Array& v) {
          Array m = reshape(v, {2, 4});
          return Arrays{v * 1,
                        1 * v,
                        v / 1,
                        neg(neg(v)),
                        astype(v, v.dtype()),
                        reshape(v, {8}),
                        v + 0.0,
                        0.0 + v,
                        v - 0.0,
                        v + -0.0,
                        -0.0 + v,
                        v * 0,
                        v - v,
                        v * -1,
                        transpose(transpose(m)),
                        transpose(m, {0, 1}),
                        reshape(reshape(m, {4, 2}), {8}),
                        broadcast_to(broadcast_to(v, {1, 8}), {3, 8}),
                        maximum(v, v),
                        v + v * 0,
                        exp(v) + exp(v),
                        stop_gradient(v) * 1};
        },
        x);
    check(
        "literal subgraphs " + name_of(dtype), {{}, {}, ulps(4, dtype), {}, {}},
        [&](const Array& v) {
          Array two = full({}, 2.0, dtype);
          return Arrays{two * 3 + 1, v + two * 0.5, exp(two) * v, full({3}, 1.5, dtype) * 2, -full({}, 0.0, dtype)};
        },
        x);
  }
  for (DType dtype : {DType::i32, DType::i64, DType::bool_}) {
    Array x = data({9}, dtype);
    check(
        "integer identities " + name_of(dtype), {},
        [&](const Array& v) {
          Arrays out = {v * 1, 1 * v, v + 0, 0 + v, astype(v, v.dtype()), maximum(v, v)};
          if (dtype != DType::bool_) out.push_back(v - 0);
          if (dtype != DType::bool_) out.push_back(neg(neg(v)));
          return out;
        },
        x);
  }
}

// Through jit, numbers that change between calls are lifted into runtime
// inputs of the compiled graph (after their second value): every value must
// still give the eager result.
TEST_F(Differential, JitWithChangingNumbersMatchesEager) {
  for (DType dtype : float_dtypes) {
    Array x = data({4, 5}, dtype, false);
    double scale = 0;
    auto function = [&](const Array& v) {
      return Arrays{v * scale + 1, maximum(v, scale), kiln::where(v > scale, v, -scale), pow(abs(v) + 1, 2.0)};
    };
    auto compiled = jit(function);
    for (double value : {0.5, 1.5, -2.25, 3.0, 0.1, 0.1 + 1e-12, 1.0 / 3.0}) {
      scale = value;
      Arrays got = compiled(x), expected = function(x);
      ASSERT_EQ(got.size(), expected.size());
      for (size_t i = 0; i < got.size(); ++i) {
        Tolerance tolerance = i == 3 ? ulps(4, dtype) : Tolerance{};
        std::string mismatch = compare_arrays(got[i], expected[i], tolerance);
        EXPECT_TRUE(mismatch.empty()) << name_of(dtype) << " scale " << value << " output " << i << ": " << mismatch;
      }
    }
  }
}

// Compiled kernels are shared between graphs of one process: graphs that
// differ only in a literal's value, or in shapes, must never share code that
// depends on them.
TEST_F(Differential, GraphsDifferingInLiteralsOrShapesDoNotShareKernels) {
  for (DType dtype : float_dtypes) {
    Array x = data({6}, dtype, false, 0.5, 3);
    // Values that agree in their first 9 significant digits, then in fewer.
    for (double value : {0.1, 0.1 + 1e-12, 0.1 + 1e-10, 0.1 + 1e-8, 1.0 / 3.0, 0.3333333333}) {
      std::ostringstream context;
      context.precision(17);
      context << "x * " << value << " + 1 " << name_of(dtype);
      check(
          context.str(), {}, [&](const Array& v) { return Arrays{v * value + 1}; }, x);
    }
    for (double exponent : {1.5, 2.0, 0.5, 3.0, -1.0}) {
      check(
          "pow(x, " + std::to_string(exponent) + ") " + name_of(dtype), {ulps(4, dtype)},
          [&](const Array& v) { return Arrays{pow(v, exponent)}; }, x);
    }
  }
  for (DType dtype : all_dtypes) {
    for (const Shape& s : std::vector<Shape>{{5}, {2, 3}, {}, {1}, {3, 1, 2}, {0, 4}, {4, 4}}) {
      Array x = data(s, dtype, false), y = data(s, dtype, false),
            row = data(s.empty() ? Shape{} : Shape{s.back()}, dtype, false);
      check(
          "shapes " + name_of(dtype) + shape_string(s), {},
          [](const Array& a, const Array& b, const Array& r) {
            return Arrays{maximum(a, b), minimum(maximum(a, b), r), maximum(a, r)};
          },
          x, y, row);
    }
  }
}

// The exponent of pow is compiled into the kernel (not passed in like other
// literals), so it must be part of the kernel's cache key in full: two f64
// exponents that agree in their first 9 significant digits are different.
TEST_F(Differential, PowExponentsAgreeingInNineDigitsDoNotShareAKernel) {
  Array x = array({1.5, 2.75, 0.5}, {3});
  check(
      "pow(x, 1.5) f64", {ulps(4, DType::f64)}, [](const Array& v) { return Arrays{pow(v, 1.5)}; }, x);
  check(
      "pow(x, 1.500000001) f64", {ulps(4, DType::f64)}, [](const Array& v) { return Arrays{pow(v, 1.500000001)}; }, x);
}

// Compiled max/min reductions are vectorized, so among equal elements the one
// that wins is unspecified: the sign of a zero result may differ from the
// reference's (first of equal elements), as in XLA. The value must agree, and
// a NaN anywhere must still give NaN.
TEST_F(Differential, MaxMinReductionsOfSignedZerosAndNaNs) {
  Array x = array({-0.0f, 0.0f, 0.0f, -0.0f}, {2, 2});
  check(
      "max/min of signed zeros", {any_zero_sign()},
      [](const Array& v) {
        return Arrays{max(v, {1}), min(v, {1})};
      },
      x);
  Array with_nan = array({1.0f, std::nanf(""), -2.0f, 3.0f, 5.0f, -1.0f}, {2, 3});
  check(
      "max/min with a NaN", {},
      [](const Array& v) {
        return Arrays{max(v, {1}), min(v, {1}), max(v), min(v)};
      },
      with_nan);
}

// A reduction to one value over many elements runs in slices across threads
// whose results are combined by the reference kernel: sums within the
// tolerance of any summation order, everything else exact, and a NaN in the
// last slice still wins.
TEST_F(Differential, ReductionsToOneValueRunInSlicesAcrossThreads) {
  Shape s = {300, 1001};
  for (DType dtype : all_dtypes) {
    Array x = data(s, dtype, false), scale = data({}, dtype, false);
    bool numeric = dtype != DType::bool_;
    bool floating = is_floating(dtype);
    // A float product of 300,000 random factors over- or underflows at an
    // order-dependent place; one of factors +-1 is exact in any order.
    auto reductions = [numeric, floating](const Array& a, const Array& c) {
      Arrays out = {sum(a), max(a), min(a), prod(floating ? a / abs(a) : a)};
      if (numeric) out.push_back(sum(a * c + 1, Axes::all(), true));
      return out;
    };
    auto test = trace_case("slices", reductions, x, scale);
    std::string plan = describe_plan(test.graph);
    EXPECT_NE(plan.find("in slices across threads"), std::string::npos) << plan;
    Tolerance total;
    if (is_floating(dtype)) {
      total.scale = sum(abs(x) * abs(scale) + 1, Axes::all(), true);
      total.scale_factor = 4 * epsilon(dtype) * std::sqrt(static_cast<double>(shape_size(s)));
    }
    Tolerance plain = total;
    if (is_floating(dtype)) plain.scale = sum(abs(x));
    EXPECT_EQ(run_differential(test, {plain, {}, {}, {}, total}), "") << name_of(dtype);
  }
  for (DType dtype : float_dtypes) {
    std::vector<double> values(static_cast<size_t>(shape_size(s)), 1.5);
    values[values.size() - 5] = std::nan("");
    Array with_nan = astype(array(values, s), dtype);
    check(
        "NaN in the last slice " + name_of(dtype), {},
        [](const Array& a) {
          return Arrays{max(a), min(a)};
        },
        with_nan);
  }
  Array small = data({200, 300}, DType::f32, false);
  std::string plan = describe_plan(trace_case(
                                       "small", [](const Array& a) { return sum(a); }, small)
                                       .graph);
  EXPECT_EQ(plan.find("in slices"), std::string::npos) << plan;
}

// A reduction over consecutive axes followed by kept ones ([outer, reduced,
// inner]) accumulates whole rows into its output. Each output element still
// combines its rows in the reference's order, so max and min match it
// exactly, signed zeros and NaNs included. The output range is split across
// threads mid-row (63 * 41 outputs), and a row group cuts it into blocks.
TEST_F(Differential, ReductionsOverMiddleAxesAccumulateRowByRow) {
  for (DType dtype : numeric_dtypes) {
    Array x = data({63, 200, 41}, dtype, true), y = data({6, 5, 4, 40}, dtype, true);
    auto sum_tolerance = [&](const Array& v, const Axes& axes, int64_t n) {
      Tolerance t;
      if (!is_floating(dtype)) return t;
      t.scale = sum(abs(v), axes);
      t.scale_factor = 4 * epsilon(dtype) * std::sqrt(static_cast<double>(n));
      t.relative = 2 * epsilon(dtype);
      return t;
    };
    check(
        "middle axes " + name_of(dtype), {sum_tolerance(x, {1}, 200), {}, {}, sum_tolerance(y, {1, 2}, 20), {}},
        [](const Array& a, const Array& b) {
          return Arrays{sum(a, {1}), max(a, {1}), min(a, {1}, true), sum(b, {1, 2}), max(b, {-3, -2})};
        },
        x, y);
  }
  Array x = data({64, 30, 32}, DType::f32, false, 0.5, 3);
  auto normalized = trace_case(
      "normalized", [](const Array& v) { return v / sum(v, 1, true); }, x);
  EXPECT_EQ(run_differential(normalized, {Tolerance{.relative = 1e-5}}), "") << describe_plan(normalized.graph);
}

// A value computed from literals alone is folded when the graph compiles,
// but only small ones are evaluated: a small reduction of a large literal
// producer (here 10000 elements) must still be computed, not left empty.
// (Read by a kernel instead of returned, the empty value crashes the process:
// `x + max(arange(5000))`.)
TEST_F(Differential, SmallReductionsOfLargeLiteralProducersAreComputed) {
  Array x = array({1.0f, 2.0f}, {2});
  check(
      "sum(full({100, 100}, 2))", {},
      [](const Array&) {
        return Arrays{sum(full({100, 100}, 2.0f))};
      },
      x);
  check(
      "x + max(arange(5000))", {}, [](const Array& v) { return Arrays{v + max(arange(5000))}; }, x);
  // Past any bound on what is evaluated when compiling (here 4.4 million elements).
  check(
      "sum(full({2100, 2100}, 1))", {},
      [](const Array&) {
        return Arrays{sum(full({2100, 2100}, 1))};
      },
      x);
}

}  // namespace
}  // namespace kiln::testing
