// logaddexp and hypot against NumPy (broadcasting, huge and tiny values,
// infinities and NaN), under jit, and the composites' derivatives against
// finite differences. The unary composites (tan, sinh, ...) are in
// test_elementwise.cpp's table.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <limits>

#include "support/gradient_check.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::all_close;
using testing::NumpyOracle;
using testing::RandomArrays;

TEST(ElementwiseComposites, LogaddexpAndHypotMatchNumpy) {
  RandomArrays random(51);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> pending;
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (DType dtype : {DType::f32, DType::f64}) {
    for (int trial = 0; trial < 12; ++trial) {
      Shape shape = random.shape(0, 3, 4);
      Array a = random.uniform(shape, dtype, -50, 50);
      Array b = random.uniform(random.broadcastable(shape), dtype, -50, 50);
      std::string context = std::string(dtype_name(dtype)) + shape_string(a.shape()) + " " + shape_string(b.shape());
      std::string cast = ".astype(" + testing::numpy_dtype(dtype) + ")";
      pending.push_back({logaddexp(a, b),
                         oracle.add("np.logaddexp(a.astype(np.float64), b.astype(np.float64))" + cast, {a, b}),
                         "logaddexp " + context});
      pending.push_back({hypot(a, b), oracle.add("np.hypot(a.astype(np.float64), b.astype(np.float64))" + cast, {a, b}),
                         "hypot " + context});
      auto traced = jit([](const Array& x, const Array& y) { return hypot(x, y); });
      pending.push_back({traced(a, b),
                         oracle.add("np.hypot(a.astype(np.float64), b.astype(np.float64))" + cast, {a, b}),
                         "hypot under jit " + context});
    }
    // Extremes: squares that would overflow or underflow, equal and opposite infinities, NaN.
    double huge = dtype == DType::f32 ? 3e38 : 1e308, tiny = dtype == DType::f32 ? 1e-40 : 1e-310;
    Array a = astype(array({huge, tiny, inf, -inf, inf, nan, 0.0, -inf, 1000.0}), dtype);
    Array b = astype(array({huge, tiny, 1.0, -inf, nan, 1.0, 0.0, inf, 1000.0}), dtype);
    std::string cast = ".astype(" + testing::numpy_dtype(dtype) + ")";
    pending.push_back({logaddexp(a, b),
                       oracle.add("np.logaddexp(a.astype(np.float64), b.astype(np.float64))" + cast, {a, b}),
                       "logaddexp extremes"});
    pending.push_back({hypot(a, b), oracle.add("np.hypot(a.astype(np.float64), b.astype(np.float64))" + cast, {a, b}),
                       "hypot extremes"});
  }
  oracle.run();
  for (const testing::OracleCase& p : pending) {
    auto expected = oracle.result(p.id);
    ASSERT_TRUE(expected) << p.context << ": " << oracle.error(p.id);
    EXPECT_TRUE(all_close(p.actual, *expected, testing::native_rtol(p.actual.dtype()) * 4, 0, p.context));
  }
}

TEST(ElementwiseComposites, DerivativesMatchFiniteDifferences) {
  Array x = array({0.3, -1.2, 0.9, 0.05}), y = array({1.5, 0.4, -2.0, 0.7});
  auto unary = [](Array (*fn)(const Array&, Location)) {
    return [fn](const std::vector<Array>& in) { return fn(in[0], Location::current()); };
  };
  for (auto fn : {&kiln::tan, &kiln::sinh, &kiln::cosh, &kiln::reciprocal, &kiln::degrees, &kiln::radians})
    EXPECT_TRUE(testing::check_derivatives(unary(fn), {x}));
  EXPECT_TRUE(testing::check_derivatives([](const std::vector<Array>& in) { return logaddexp(in[0], in[1]); }, {x, y}));
  EXPECT_TRUE(testing::check_derivatives([](const std::vector<Array>& in) { return hypot(in[0], in[1]); }, {x, y}));
}

}  // namespace
}  // namespace kiln
