// cummax and cummin against NumPy's maximum/minimum.accumulate: every dtype,
// random shapes with zero-size dims, every axis and none, ties and NaN; the
// same under jit; derivatives against finite differences; errors.
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

TEST(Cumulative, ErrorsNameTheOperation) {
  const int line = __LINE__ + 1;
  auto far = [] { cummax(ones({2, 3}), 2); };
  testing::expect_error(line, far, {"[cummax]", "axis 2", "[2,3]"});
}

}  // namespace
}  // namespace kiln
