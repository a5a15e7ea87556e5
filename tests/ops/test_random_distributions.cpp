// erfinv against PyTorch (eagerly and compiled); gumbel, laplace and truncated_normal against their
// CDFs (Kolmogorov-Smirnov); categorical and choice against their
// probabilities; permutation and shuffle as permutations; every draw the
// same under jit and eagerly; errors.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>

#include "support/errors.h"
#include "support/gradient_check.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::all_close;

TEST(RandomDistributions, ErfinvMatchesPyTorch) {
  testing::NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  std::vector<double> central, tails{0.999, -0.9999, 1 - 1e-7, -(1 - 1e-10), 1 - 1e-13}, ends{1.0, -1.0, 1.5, -2.0};
  for (int i = -99; i <= 99; ++i) central.push_back(i / 100.0);
  central.push_back(1e-300);
  central.push_back(-1e-8);
  ends.push_back(std::numeric_limits<double>::quiet_NaN());
  std::string torch = "__import__('torch').special.erfinv(__import__('torch').from_numpy(a)).numpy()";
  for (DType dtype : {DType::f32, DType::f64}) {
    Array c = astype(array(central), dtype), t = astype(array(tails), dtype), e = astype(array(ends), dtype);
    bool f32 = dtype == DType::f32;
    cases.push_back({erfinv(c), oracle.add(torch, {c}), "central", f32 ? 2e-6 : 2e-14});
    cases.push_back(
        {jit([](const Array& v) { return erfinv(v); })(c), oracle.add(torch, {c}), "central, jit", f32 ? 2e-6 : 2e-14});
    // Next to +-1, checked by the round trip through Python's erfc (PyTorch's
    // own erfinv is off by 6e-5 in erfc at 1 - 1e-13): erfc(|x|) = 1 - |y|.
    // Its native code (jit) computes the steps of its reference kernel.
    auto compiled = jit([](const Array& v) { return erfinv(v); });
    if (!f32)
      for (const Array& roots : {erfinv(t), compiled(t)})
        cases.push_back(
            {ones_like(t),
             oracle.add("np.array([__import__('math').erfc(abs(v)) for v in a]) / (1 - np.abs(b))", {roots, t}),
             "tails, erfc(|erfinv(y)|) / (1 - |y|)", 1e-6});
    cases.push_back({erfinv(e), oracle.add(torch, {e}), "ends and beyond", 0});
    cases.push_back({compiled(e), oracle.add(torch, {e}), "ends and beyond, jit", 0});
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
  // f16 and bf16 compute in f32 and round once.
  for (DType half : {DType::f16, DType::bf16}) {
    Array x = astype(astype(array(central), half), DType::f32);
    Array rounded = astype(astype(erfinv(x), half), DType::f32);
    EXPECT_TRUE(all_close(astype(erfinv(astype(x, half)), DType::f32), rounded, 1e-2, 0, "erfinv in halves"));
    Array compiled = jit([](const Array& v) { return erfinv(v); })(astype(x, half));
    EXPECT_TRUE(all_close(astype(compiled, DType::f32), rounded, 1e-2, 0, "erfinv in halves, jit"));
  }
  testing::ArrayFunction fn = [](const std::vector<Array>& in) { return sum(erfinv(in[0])); };
  EXPECT_TRUE(testing::check_derivatives(fn, {array({-0.9, -0.3, 0.0, 0.5, 0.97})}));
}

// The largest gap between the samples' empirical CDF and `cdf`.
double kolmogorov_smirnov(const Array& samples, const std::function<double(double)>& cdf) {
  std::vector<double> sorted = samples.to_vector<double>();
  std::sort(sorted.begin(), sorted.end());
  double n = static_cast<double>(sorted.size()), gap = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    double f = cdf(sorted[i]);
    gap = std::max({gap, std::abs(f - static_cast<double>(i) / n), std::abs(static_cast<double>(i + 1) / n - f)});
  }
  return gap;
}

double normal_cdf(double x) { return 0.5 * (1 + std::erf(x / std::numbers::sqrt2)); }

constexpr int64_t draws = 50000;
// The 1% critical value of the Kolmogorov-Smirnov statistic: 1.63 / sqrt(n).
const double critical = 1.63 / std::sqrt(static_cast<double>(draws));

TEST(RandomDistributions, ContinuousDrawsFollowTheirDistributions) {
  Array key = random::key(61);
  for (DType dtype : {DType::f32, DType::f64}) {
    std::string name(dtype_name(dtype));
    Array g = random::gumbel(key, {draws}, dtype);
    EXPECT_LT(kolmogorov_smirnov(g, [](double x) { return std::exp(-std::exp(-x)); }), critical) << "gumbel " << name;
    Array l = random::laplace(key, {draws}, dtype);
    auto laplace_cdf = [](double x) { return x < 0 ? 0.5 * std::exp(x) : 1 - 0.5 * std::exp(-x); };
    EXPECT_LT(kolmogorov_smirnov(l, laplace_cdf), critical) << "laplace " << name;
    for (auto [lower, upper] :
         {std::pair{-1.0, 2.0}, std::pair{0.0, std::numeric_limits<double>::infinity()}, std::pair{3.0, 5.0}}) {
      Array t = random::truncated_normal(key, lower, upper, {draws}, dtype);
      double mass = normal_cdf(upper) - normal_cdf(lower);
      auto cdf = [&](double x) { return (normal_cdf(x) - normal_cdf(lower)) / mass; };
      EXPECT_LT(kolmogorov_smirnov(t, cdf), critical) << "truncated_normal " << lower << " " << upper << " " << name;
      EXPECT_TRUE(all(greater(t, lower) & less(t, upper)).item<bool>()) << "inside (" << lower << ", " << upper << ")";
    }
  }
}

TEST(RandomDistributions, DiscreteDrawsFollowTheirProbabilities) {
  Array key = random::key(62);
  std::vector<double> p{0.1, 0.2, 0.7};
  Array logits = broadcast_to(log(array(p)), {draws, 3});
  Array classes = random::categorical(key, logits);
  for (int32_t c = 0; c < 3; ++c) {
    double frequency = mean(astype(equal(classes, c), DType::f64)).item<double>();
    EXPECT_NEAR(frequency, p[static_cast<size_t>(c)], 0.01) << "categorical class " << c;
    Array picked = random::choice(key, 3, {draws}, true, array(p));
    EXPECT_NEAR(mean(astype(equal(picked, c), DType::f64)).item<double>(), p[static_cast<size_t>(c)], 0.01)
        << "choice with p, class " << c;
  }
  // Without replacement, the first pick of each draw follows p.
  std::vector<Array> keys = random::split_keys(key, 3000);
  std::vector<int64_t> first(3, 0);
  for (const Array& k : keys) {
    std::vector<int32_t> two = random::choice(k, 3, {2}, false, array(p)).to_vector<int32_t>();
    EXPECT_NE(two[0], two[1]);
    ++first[static_cast<size_t>(two[0])];
  }
  for (size_t c = 0; c < 3; ++c) EXPECT_NEAR(static_cast<double>(first[c]) / 3000, p[c], 0.03) << "first pick " << c;
  Array uniform_pick = random::choice(key, 30, {4, 5}, false);
  std::vector<int32_t> values = uniform_pick.to_vector<int32_t>();
  std::sort(values.begin(), values.end());
  EXPECT_EQ(std::unique(values.begin(), values.end()), values.end()) << "without replacement: distinct";
  EXPECT_EQ(uniform_pick.shape(), (Shape{4, 5}));
}

TEST(RandomDistributions, MultivariateNormalHasItsMeanAndCovariance) {
  Array mean = array({1.0, -2.0, 0.5});
  Array covariance = array({2.0, 0.6, -0.3, 0.6, 1.0, 0.2, -0.3, 0.2, 0.5}, {3, 3});
  Array x = random::multivariate_normal(random::key(67), mean, covariance, {draws});
  ASSERT_EQ(x.shape(), (Shape{draws, 3}));
  Array centered = x - kiln::mean(x, 0);
  Array sample_covariance = matmul(transpose(centered), centered) / static_cast<double>(draws - 1);
  // Standard errors of about sqrt(2 / n) * scale: 0.03 holds them with room.
  EXPECT_TRUE(all_close(kiln::mean(x, 0), mean, 0, 0.03, "mean"));
  EXPECT_TRUE(all_close(sample_covariance, covariance, 0, 0.05, "covariance"));
}

TEST(RandomDistributions, PermutationsAreShuffles) {
  Array key = random::key(63);
  Array order = random::permutation(key, 1000);
  EXPECT_TRUE(all_close(sort(order), arange(0, 1000, 1, DType::i32), 0, 0, "a permutation"));
  EXPECT_FALSE(all_close(order, random::permutation(random::key(64), 1000), 0, 0)) << "other keys, other orders";
  Array x = reshape(arange(0, 12, 1, DType::f64), {3, 4});
  Array columns = random::shuffle(key, x, 1);
  EXPECT_TRUE(all_close(sort(columns, 1), x, 0, 0, "columns shuffled within rows"));
  EXPECT_TRUE(all_close(columns, take(x, random::permutation(key, 4), 1), 0, 0, "shuffle is take of a permutation"));
  Array rows = random::choice(key, x, {2}, false);
  EXPECT_EQ(rows.shape(), (Shape{2, 4}));
}

TEST(RandomDistributions, EveryDrawIsTheSameUnderJit) {
  Array key = random::key(65), logits = array({0.5, -1.0, 2.0, 0.0}), p = array({0.4, 0.1, 0.3, 0.2});
  auto draw_all = [&](const Array& k) {
    return std::vector<Array>{random::gumbel(k, {7}),
                              random::laplace(k, {7}, DType::f64),
                              random::truncated_normal(k, -0.5, 1.5, {7}),
                              astype(random::categorical(k, broadcast_to(logits, {5, 4})), DType::f32),
                              astype(random::permutation(k, 9), DType::f32),
                              astype(random::choice(k, 4, {3}, false, p), DType::f32)};
  };
  std::vector<Array> eager = draw_all(key), traced = jit(draw_all)(key);
  // The same bits are drawn. The floating draws then go through kiln's
  // vector math, whose fused kernels may differ from the eager ones in an
  // ulp, which gumbel's -log(-log(u)) amplifies near 0 by up to 1/|result|;
  // the discrete draws agree exactly.
  for (size_t i = 0; i < eager.size(); ++i) {
    double rtol = i >= 3 ? 0 : eager[i].dtype() == DType::f32 ? 1e-5 : 1e-12;
    EXPECT_TRUE(all_close(traced[i], eager[i], rtol, rtol, "draw " + std::to_string(i))) << i;
  }
}

TEST(RandomDistributions, ErrorsNameTheDrawAndTheFix) {
  Array key = random::key(66);
  const int bounds_line = __LINE__ + 1;
  auto bounds = [&] { random::truncated_normal(key, 2.0, 1.0, {3}); };
  testing::expect_error(bounds_line, bounds, {"[random.truncated_normal]", "lower < upper", "[2.0"});
  const int many_line = __LINE__ + 1;
  auto many = [&] { random::choice(key, 3, {4}, false); };
  testing::expect_error(many_line, many, {"[random.choice]", "cannot draw 4 without replacement from 3", "replace"});
  const int p_line = __LINE__ + 1;
  auto wrong_p = [&] { random::choice(key, 3, {2}, true, array({0.5, 0.5})); };
  testing::expect_error(p_line, wrong_p, {"[random.choice]", "vector of 3 probabilities", "f64[2]"});
}

}  // namespace
}  // namespace kiln
