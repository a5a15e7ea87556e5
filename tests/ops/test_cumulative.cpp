// cummax and cummin against NumPy's maximum/minimum.accumulate, cumprod
// against np.cumprod (forward and reversed): every dtype, random shapes with
// zero-size dims, every axis and none, ties and NaN; the same under jit;
// derivatives against finite differences and, with zeros, torch.cumprod's
// gradient; errors.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <limits>

#include "support/errors.h"
#include "support/gradient_check.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::NumpyOracle;
using testing::RandomArrays;

Array with_ties_and_nan(RandomArrays& random, const Shape& shape, DType dtype) {
  Array x = astype(random.uniform(shape, DType::i32, -4, 5), dtype);
  if (!is_floating(dtype)) return x;
  std::vector<double> values = x.to_vector<double>();
  for (double& v : values)
    if (random.integer(0, 12) == 0) v = std::numeric_limits<double>::quiet_NaN();
  return astype(array(values, shape), dtype);
}

TEST(Cumulative, RunningExtremesMatchNumpy) {
  RandomArrays random(71);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (DType dtype : testing::all_dtypes) {
    for (int trial = 0; trial < 12; ++trial) {
      Shape shape = random.shape(0, 3, 6);
      Array x = with_ties_and_nan(random, shape, dtype);
      std::optional<int64_t> axis;
      std::string python = "None", source = "a.reshape(-1)", along = "0";
      if (x.ndim() > 0 && random.integer(0, 3) > 0) {
        axis = random.integer(-x.ndim(), x.ndim() - 1);
        python = along = std::to_string(*axis);
        source = "a";
      }
      std::string context = std::string(dtype_name(dtype)) + shape_string(shape) + " axis " + python;
      cases.push_back({cummax(x, axis), oracle.add("np.maximum.accumulate(" + source + ", axis=" + along + ")", {x}),
                       "cummax " + context, 0});
      cases.push_back({cummin(x, axis), oracle.add("np.minimum.accumulate(" + source + ", axis=" + along + ")", {x}),
                       "cummin " + context, 0});
      auto traced = jit([axis](const Array& v) { return cummin(v, axis); });
      cases.push_back({traced(x), oracle.add("np.minimum.accumulate(" + source + ", axis=" + along + ")", {x}),
                       "cummin under jit " + context, 0});
    }
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(Cumulative, DerivativesFollowTheRunningExtreme) {
  RandomArrays random(72);
  testing::ArrayFunction fn = [](const std::vector<Array>& in) {
    Array weights = reshape(arange(1, 16, 1, DType::f64), {3, 5});
    return sum(cummax(in[0], 1) * weights) + sum(cummin(in[0], 0) * weights * weights);
  };
  EXPECT_TRUE(testing::check_derivatives(fn, {random.uniform({3, 5}, DType::f64)}));
  // A tie sends the derivative to the later element (torch.cummax's index).
  Array x = array({1.0, 3.0, 2.0, 3.0, 0.5});
  Array dx = grad([](const Array& v) { return sum(cummax(v)); })(x);
  EXPECT_EQ(dx.to_vector<double>(), (std::vector<double>{1, 2, 0, 2, 0}));
}

TEST(Cumulative, CumprodMatchesNumpy) {
  RandomArrays random(73);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (DType dtype : testing::all_dtypes) {
    for (int trial = 0; trial < 12; ++trial) {
      Shape shape = random.shape(0, 3, 6);
      Array x = astype(random.uniform(shape, DType::i32, -3, 4), dtype);
      bool reverse = trial % 2 == 1;
      std::optional<int64_t> axis;
      std::string source = "a.reshape(-1)", along = "0";
      if (x.ndim() > 0 && random.integer(0, 3) > 0) {
        axis = random.integer(-x.ndim(), x.ndim() - 1);
        along = std::to_string(*axis);
        source = "a";
      }
      // NumPy accumulates integers in int64 and bool as integers; kiln keeps
      // i32 (bool gives i32, as cumsum).
      std::string flipped = reverse ? "np.flip(" + source + ", " + along + ")" : source;
      std::string product = "np.cumprod(" + flipped + ", axis=" + along + ")";
      if (reverse) product = "np.flip(" + product + ", " + along + ")";
      std::string expression = product + ".astype(np.int32 if a.dtype == np.bool_ else a.dtype)";
      std::string context =
          std::string(dtype_name(dtype)) + shape_string(shape) + " axis " + along + (reverse ? " reversed" : "");
      int id = oracle.add(expression, {x});
      cases.push_back({cumprod(x, axis, reverse), id, "cumprod " + context, 0});
      auto traced = jit([axis, reverse](const Array& v) { return cumprod(v, axis, reverse); });
      cases.push_back({traced(x), id, "cumprod under jit " + context, 0});
    }
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(Cumulative, CumprodDerivativesWithZerosMatchFiniteDifferencesAndTorch) {
  RandomArrays random(74);
  for (bool reverse : {false, true}) {
    testing::ArrayFunction fn = [reverse](const std::vector<Array>& in) {
      Array weights = reshape(arange(1, 21, 1, DType::f64), {4, 5}) * 0.1;
      return sum(cumprod(in[0], 1, reverse) * weights) + sum(square(cumprod(in[0], 0, reverse)));
    };
    // Rows with no zero, one zero, two zeros, and a zero first.
    Array x = random.uniform({4, 5}, DType::f64, 0.5, 1.5) *
              array<double>({1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 0, 1, 0, 1, 1, 1, 1}, {4, 5});
    EXPECT_TRUE(testing::check_derivatives(fn, {x})) << "reverse " << reverse;
  }
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  Array x = array<double>({2.0, 0.0, 3.0, -1.5, 0.0, 4.0, 0.5, 0.0, 1.0, 2.0, 3.0, 0.5}, {3, 4});
  Array weights = random.uniform({3, 4}, DType::f64);
  for (int64_t axis : {0, 1})
    for (bool reverse : {false, true}) {
      Array dx = grad([&](const Array& v) { return sum(cumprod(v, axis, reverse) * weights); })(x);
      std::string a = std::to_string(axis);
      std::string torch = "__import__('torch')";
      std::string input = reverse ? "x.flip(" + a + ")" : "x";
      std::string product = input + ".cumprod(" + a + ")";
      if (reverse) product += ".flip(" + a + ")";
      std::string expression = "(x := " + torch + ".from_numpy(a).requires_grad_(), " + torch + ".autograd.grad((" +
                               product + " * " + torch + ".from_numpy(b)).sum(), [x])[0].numpy())[-1]";
      cases.push_back({dx, oracle.add(expression, {x, weights}),
                       "torch.cumprod gradient axis " + a + (reverse ? " reversed" : ""), 1e-12});
    }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(Cumulative, ErrorsNameTheOperation) {
  const int line = __LINE__ + 1;
  auto far = [] { cummax(ones({2, 3}), 2); };
  testing::expect_error(line, far, {"[cummax]", "axis 2", "[2,3]"});
  const int product_line = __LINE__ + 1;
  auto product = [] { cumprod(ones({2, 3}), -3); };
  testing::expect_error(product_line, product, {"[cumprod]", "axis -3", "[2,3]"});
}

}  // namespace
}  // namespace kiln
