// exp2, log2, log10 and the inverse trigonometric and hyperbolic functions
// (arctan2 included) against NumPy: random shapes (0-d and zero-size
// included) over every dtype, integers and bool promoting to f32; special
// values (signed zeros, +-1, the domain ends, infinities, NaN, tiny and huge)
// with NaN, infinities and signs of zero exactly as NumPy's; arctan2 over
// every dtype pair with broadcasting and every pair of special values; and
// results traced equal to eager ones.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::all_close;
using testing::all_dtypes;
using testing::numpy_dtype;
using testing::NumpyOracle;
using testing::RandomArrays;

struct Case {
  const char* name;
  std::function<Array(const Array&)> kiln;
  const char* numpy;
  double lo, hi;  // where random operands are drawn
};

const std::vector<Case>& cases() {
  static const std::vector<Case> list = {
      {"exp2", [](const Array& x) { return exp2(x); }, "np.exp2", -20, 20},
      {"log2", [](const Array& x) { return log2(x); }, "np.log2", 0, 50},
      {"log10", [](const Array& x) { return log10(x); }, "np.log10", 0, 50},
      {"arctan", [](const Array& x) { return arctan(x); }, "np.arctan", -10, 10},
      {"arcsin", [](const Array& x) { return arcsin(x); }, "np.arcsin", -1, 1},
      {"arccos", [](const Array& x) { return arccos(x); }, "np.arccos", -1, 1},
      {"arcsinh", [](const Array& x) { return arcsinh(x); }, "np.arcsinh", -10, 10},
      {"arccosh", [](const Array& x) { return arccosh(x); }, "np.arccosh", 1, 20},
      {"arctanh", [](const Array& x) { return arctanh(x); }, "np.arctanh", -1, 1},
  };
  return list;
}

// The functions are within a few ulps (test_math_accuracy.cpp); NumPy's
// float64 result rounded to the dtype is the reference.
double rtol(DType dtype) { return dtype == DType::f32 ? 4e-7 : 1e-15; }

Array uniform(RandomArrays& random, const Shape& shape, DType dtype, double lo, double hi) {
  std::uniform_real_distribution<double> real(lo, hi);
  std::vector<double> values(static_cast<size_t>(shape_size(shape)));
  for (double& v : values) v = real(random.engine());
  if (dtype == DType::bool_) {
    std::vector<bool> b;
    for (double v : values) b.push_back(v > (lo + hi) / 2);
    return array(b, shape);
  }
  Array x = astype(array(values, shape), is_floating(dtype) ? dtype : DType::f64);
  return is_floating(dtype) ? x : astype(floor(x), dtype);
}

/// all_close within `tolerance`, with NaN, infinities and zeros (sign
/// included) exactly where the expected result has them.
::testing::AssertionResult matches(const Array& actual, const Array& expected, double tolerance,
                                   const std::string& context) {
  ::testing::AssertionResult close = all_close(actual, expected, tolerance, 0, context);
  if (!close) return close;
  std::vector<double> got = astype(actual, DType::f64).to_vector<double>();
  std::vector<double> want = astype(expected, DType::f64).to_vector<double>();
  for (size_t i = 0; i < got.size(); ++i) {
    bool same_class = std::isnan(got[i]) == std::isnan(want[i]) && std::isinf(got[i]) == std::isinf(want[i]) &&
                      (got[i] == 0) == (want[i] == 0) &&
                      (want[i] != 0 || std::signbit(got[i]) == std::signbit(want[i]));
    if (!same_class)
      return ::testing::AssertionFailure()
             << context << ": element " << i << " is " << got[i] << ", NumPy's " << want[i];
  }
  return ::testing::AssertionSuccess();
}

struct Pending {
  int id;
  Array actual;
  std::string context;
};

TEST(ElementwiseInverseFunctions, MatchNumpyOnRandomShapesAndDtypes) {
  RandomArrays random(41);
  NumpyOracle oracle;
  std::vector<Pending> pending;
  for (const Case& c : cases()) {
    for (DType dtype : all_dtypes) {
      for (int trial = 0; trial < 3; ++trial) {
        Array x = uniform(random, random.shape(0, 3), dtype, c.lo, c.hi);
        std::string context =
            std::string(c.name) + "(" + std::string(dtype_name(dtype)) + shape_string(x.shape()) + ")";
        Array y = c.kiln(x);
        DType result = is_floating(dtype) ? dtype : DType::f32;
        EXPECT_EQ(y.dtype(), result) << context;
        EXPECT_EQ(y.shape(), x.shape()) << context;
        pending.push_back(
            {oracle.add(std::string(c.numpy) + "(a.astype(np.float64)).astype(" + numpy_dtype(result) + ")", {x}), y,
             context});
      }
    }
  }
  oracle.run();
  for (const Pending& p : pending)
    EXPECT_TRUE(matches(p.actual, oracle.expected(p.id), rtol(p.actual.dtype()), p.context));
}

TEST(ElementwiseInverseFunctions, SpecialValuesMatchNumpy) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> specials = {0.0,  -0.0,         1,     -1,     0.5,    -0.5,   2,        -2,       inf,
                                        -inf, std::nan(""), 1e-30, -1e-30, 1e-300, 1e-310, 0.999999, 1.000001, 100,
                                        -100, 1e30,         -1e30, 1e300};
  NumpyOracle oracle;
  std::vector<Pending> pending;
  for (DType dtype : {DType::f32, DType::f64}) {
    Array x = astype(array(specials, {static_cast<int64_t>(specials.size())}), dtype);
    for (const Case& c : cases())
      pending.push_back(
          {oracle.add(std::string(c.numpy) + "(a.astype(np.float64)).astype(" + numpy_dtype(dtype) + ")", {x}),
           c.kiln(x), std::string(c.name) + " of special " + std::string(dtype_name(dtype))});
  }
  oracle.run();
  for (const Pending& p : pending)
    EXPECT_TRUE(matches(p.actual, oracle.expected(p.id), rtol(p.actual.dtype()), p.context));
}

TEST(ElementwiseInverseFunctions, Arctan2MatchesNumpyOverDtypePairsAndBroadcasting) {
  RandomArrays random(42);
  NumpyOracle oracle;
  std::vector<Pending> pending;
  for (DType da : all_dtypes) {
    for (DType db : all_dtypes) {
      for (int trial = 0; trial < 2; ++trial) {
        Shape sa = random.shape(0, 3), sb = random.broadcastable(sa);
        if (trial == 1) std::swap(sa, sb);
        Array y = uniform(random, sa, da, -5, 5), x = uniform(random, sb, db, -5, 5);
        DType result = std::max(da, db);
        if (!is_floating(result)) result = DType::f32;
        std::string context = "arctan2(" + std::string(dtype_name(da)) + shape_string(sa) + ", " +
                              std::string(dtype_name(db)) + shape_string(sb) + ")";
        Array angle = arctan2(y, x);
        EXPECT_EQ(angle.dtype(), result) << context;
        pending.push_back(
            {oracle.add("np.arctan2(a.astype(np.float64), b.astype(np.float64)).astype(" + numpy_dtype(result) + ")",
                        {y, x}),
             angle, context});
      }
    }
  }
  // Every pair of special values (C99 Annex F's quadrants and signed zeros).
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> specials = {0.0, -0.0, 1, -1, 1e-300, -3e300, inf, -inf, std::nan("")};
  auto n = static_cast<int64_t>(specials.size());
  for (DType dtype : {DType::f32, DType::f64}) {
    Array column = astype(array(specials, {n, 1}), dtype), row = astype(array(specials, {1, n}), dtype);
    pending.push_back({oracle.add("np.arctan2(a, b)", {column, row}), arctan2(column, row),
                       "arctan2 of special pairs " + std::string(dtype_name(dtype))});
  }
  oracle.run();
  for (const Pending& p : pending)
    EXPECT_TRUE(matches(p.actual, oracle.expected(p.id), rtol(p.actual.dtype()), p.context));
  // A weak number keeps the array's dtype.
  EXPECT_EQ(arctan2(array({1.0f}), 2).dtype(), DType::f32);
  EXPECT_EQ(arctan2(1, array({2.0})).dtype(), DType::f64);
}

TEST(ElementwiseInverseFunctions, TracedEqualsEager) {
  RandomArrays random(43);
  for (const Case& c : cases()) {
    for (DType dtype : all_dtypes) {
      Array x = uniform(random, {3, 7}, dtype, c.lo, c.hi);
      testing::eager_and_traced(std::string(c.name) + " " + std::string(dtype_name(dtype)), c.kiln, x);
    }
  }
  Array y = uniform(random, {3, 7}, DType::f64, -5, 5), x = uniform(random, {7}, DType::f64, -5, 5);
  testing::eager_and_traced(
      "arctan2", [](const Array& a, const Array& b) { return arctan2(a, b); }, y, x);
}

}  // namespace
}  // namespace kiln
