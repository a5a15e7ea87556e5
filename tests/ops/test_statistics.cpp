// any, all, count_nonzero, var, std, isclose, allclose, array_equal against
// NumPy over every dtype, random shapes (0-d, zero-size dims), axis lists
// and keepdims, NaN and infinities; the same inside jit; derivatives of var
// and std against finite differences; errors.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <limits>

#include "support/errors.h"
#include "support/gradient_check.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::all_close;
using testing::all_dtypes;
using testing::NumpyOracle;
using testing::RandomArrays;

Array with_specials(RandomArrays& random, const Array& x) {
  if (!is_floating(x.dtype())) return x;
  std::vector<double> values = x.to_vector<double>();
  for (double& v : values) {
    int64_t pick = random.integer(0, 11);
    if (pick == 0) v = std::numeric_limits<double>::quiet_NaN();
    if (pick == 1) v = std::numeric_limits<double>::infinity();
    if (pick == 2) v = -std::numeric_limits<double>::infinity();
    if (pick == 3) v = 0;
  }
  return astype(array(values, x.shape()), x.dtype());
}

// A random axis (or all of them) and its Python spelling.
std::pair<Axes, std::string> random_axis(RandomArrays& random, int64_t rank) {
  if (rank == 0 || random.integer(0, 2) == 0) return {Axes::all(), "None"};
  int64_t axis = random.integer(-rank, rank - 1);
  return {Axes(static_cast<int>(axis)), std::to_string(axis)};
}

std::string python_bool(bool value) { return value ? "True" : "False"; }

TEST(Statistics, PredicatesAndCountsMatchNumpy) {
  RandomArrays random(31);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (DType dtype : all_dtypes) {
    for (int trial = 0; trial < 20; ++trial) {
      Shape shape = random.shape(0, 3, 4);
      Array x = with_specials(random, random.uniform(shape, dtype, -1, 1));
      if (!is_floating(dtype)) x = astype(random.uniform(shape, DType::i32, -1, 2), dtype);
      auto [axes, python] = random_axis(random, x.ndim());
      bool keepdims = random.integer(0, 1);
      std::string tail = ", axis=" + python + ", keepdims=" + python_bool(keepdims) + ")";
      std::string context = std::string(dtype_name(dtype)) + shape_string(shape) + " axis=" + python;
      cases.push_back({any(x, axes, keepdims), oracle.add("np.any(a" + tail, {x}), "any " + context, 0});
      cases.push_back({all(x, axes, keepdims), oracle.add("np.all(a" + tail, {x}), "all " + context, 0});
      cases.push_back({count_nonzero(x, axes, keepdims),
                       oracle.add("np.asarray(np.count_nonzero(a" + tail + ", dtype=np.int64)", {x}),
                       "count_nonzero " + context, 0});
      // Inside jit: the same graph of primitives, compiled.
      auto traced = jit([axes = axes, keepdims](const Array& v) { return count_nonzero(v, axes, keepdims); });
      cases.push_back({traced(x), oracle.add("np.asarray(np.count_nonzero(a" + tail + ", dtype=np.int64)", {x}),
                       "count_nonzero under jit " + context, 0});
    }
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(Statistics, VarianceAndDeviationMatchNumpyWithDdof) {
  RandomArrays random(32);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (DType dtype : {DType::f32, DType::f64, DType::i32, DType::i64, DType::bool_}) {
    for (int trial = 0; trial < 20; ++trial) {
      Shape shape = random.shape(0, 3, 5);
      // A large mean against a small spread: one pass of sums of squares would lose it.
      Array x = is_floating(dtype) ? add(random.uniform(shape, dtype, -1, 1), 1000.0) : random.uniform(shape, dtype);
      auto [axes, python] = random_axis(random, x.ndim());
      bool keepdims = random.integer(0, 1);
      int64_t ddof = random.integer(0, 2);
      DType result = is_floating(dtype) ? dtype : DType::f32;
      std::string tail = ", axis=" + python + ", ddof=" + std::to_string(ddof) + ", keepdims=" + python_bool(keepdims) +
                         ").astype(" + testing::numpy_dtype(result) + ")";
      std::string context =
          std::string(dtype_name(dtype)) + shape_string(shape) + " axis=" + python + " ddof=" + std::to_string(ddof);
      double rtol = result == DType::f32 ? 2e-4 : 1e-10;
      cases.push_back({var(x, axes, ddof, keepdims), oracle.add("np.var(a.astype(np.float64)" + tail, {x}),
                       "var " + context, rtol});
      cases.push_back({std(x, axes, ddof, keepdims), oracle.add("np.std(a.astype(np.float64)" + tail, {x}),
                       "std " + context, rtol});
      auto traced = jit([axes = axes, ddof, keepdims](const Array& v) { return var(v, axes, ddof, keepdims); });
      cases.push_back(
          {traced(x), oracle.add("np.var(a.astype(np.float64)" + tail, {x}), "var under jit " + context, rtol});
    }
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(Statistics, ClosenessAndEqualityMatchNumpy) {
  RandomArrays random(33);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (DType dtype : {DType::f32, DType::f64, DType::i32}) {
    for (int trial = 0; trial < 25; ++trial) {
      Shape shape = random.shape(0, 3, 4);
      Array a = with_specials(random, random.uniform(shape, dtype, -2, 2));
      // b near a: some within the tolerances, some not; broadcast now and then.
      Shape b_shape = random.integer(0, 3) == 0 ? random.broadcastable(shape) : shape;
      Array noise = random.uniform(b_shape, DType::f64, -2e-5, 2e-5);
      Array b = astype(add(astype(random.integer(0, 1) ? a : zeros_like(a), DType::f64), noise), dtype);
      if (b.shape() != b_shape) b = astype(random.uniform(b_shape, dtype, -2, 2), dtype);
      b = with_specials(random, b);
      bool equal_nan = random.integer(0, 1);
      std::string flag = ", equal_nan=" + python_bool(equal_nan) + ")";
      std::string context = std::string(dtype_name(dtype)) + shape_string(shape) + " vs " + shape_string(b_shape) +
                            " equal_nan=" + python_bool(equal_nan);
      cases.push_back({isclose(a, b, 1e-5, 1e-8, equal_nan), oracle.add("np.isclose(a, b" + flag, {a, b}),
                       "isclose " + context, 0});
      cases.push_back({allclose(a, b, 1e-5, 1e-8, equal_nan),
                       oracle.add("np.asarray(np.allclose(a, b" + flag + ")", {a, b}), "allclose " + context, 0});
      cases.push_back({array_equal(a, b, equal_nan), oracle.add("np.asarray(np.array_equal(a, b" + flag + ")", {a, b}),
                       "array_equal " + context, 0});
      cases.push_back({array_equal(a, a, equal_nan), oracle.add("np.asarray(np.array_equal(a, a" + flag + ")", {a}),
                       "array_equal with itself " + context, 0});
    }
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(Statistics, VarianceAndDeviationDifferentiate) {
  Array x = array({0.3, -1.2, 2.5, 0.7, 1.1, -0.4}, {2, 3});
  EXPECT_TRUE(testing::check_derivatives([](const std::vector<Array>& in) { return var(in[0], 1, 1); }, {x}));
  EXPECT_TRUE(testing::check_derivatives([](const std::vector<Array>& in) { return std(in[0]); }, {x}));
  EXPECT_TRUE(testing::check_derivatives([](const std::vector<Array>& in) { return std(in[0], 0, 0, true); }, {x}));
}

TEST(Statistics, ErrorsNameTheOperationAndTheFix) {
  const int var_line = __LINE__ + 1;
  auto negative_ddof = [] { var(ones({3}), Axes::all(), -1); };
  testing::expect_error(var_line, negative_ddof, {"[var]", "ddof -1 is negative", "sample variance"});
  const int axis_line = __LINE__ + 1;
  auto bad_axis = [] { any(ones({2, 3}), 2); };
  testing::expect_error(axis_line, bad_axis, {"[any]", "axis 2 is out of range for shape [2,3]"});
  const int tolerance_line = __LINE__ + 1;
  auto negative_tolerance = [] { isclose(ones({2}), ones({2}), -1.0); };
  testing::expect_error(tolerance_line, negative_tolerance, {"[isclose]", "negative tolerance", ">= 0"});
}

}  // namespace
}  // namespace kiln
