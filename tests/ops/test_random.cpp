// Random numbers: the Threefry-2x32 known-answer vectors of Random123, JAX's
// numbers for the same keys, reproducibility eagerly and inside a trace,
// statistics of every distribution over 10^5 samples, and the user errors.
//
// The statistical bounds are five standard errors wide; the keys are fixed,
// so the tests are deterministic, and the margin says the generator is sound
// rather than that a lucky seed was found.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "backend/interp/interpreter.h"
#include "ir/graph.h"
#include "ops/random/threefry.h"
#include "support/errors.h"
#include "support/numpy_oracle.h"
#include "transform/verify.h"

namespace kiln {
namespace {

constexpr int64_t samples = 100000;

using testing::all_close;
using testing::expect_error;
using testing::native_rtol;

struct Moments {
  double mean = 0, variance = 0, min = 0, max = 0;
};

Moments moments(const std::vector<double>& values) {
  Moments m;
  m.min = *std::min_element(values.begin(), values.end());
  m.max = *std::max_element(values.begin(), values.end());
  for (double v : values) m.mean += v;
  m.mean /= static_cast<double>(values.size());
  for (double v : values) m.variance += (v - m.mean) * (v - m.mean);
  m.variance /= static_cast<double>(values.size() - 1);
  return m;
}

/// Five standard errors of a mean of `samples` draws with this variance.
double tolerance(double variance) { return 5 * std::sqrt(variance / samples); }

uint32_t bits(int32_t word) { return static_cast<uint32_t>(word); }

TEST(Random, ThreefryKnownAnswerVectors) {
  // From the Random123 distribution (kat_vectors, threefry2x32 with 20 rounds).
  using ops::threefry2x32;
  static_assert(threefry2x32({0, 0}, {0, 0}) == ops::ThreefryWords{0x6b200159u, 0x99ba4efeu});
  EXPECT_EQ(threefry2x32({0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}),
            (ops::ThreefryWords{0x1cb996fcu, 0xbb002be7u}));
  EXPECT_EQ(threefry2x32({0x13198a2eu, 0x03707344u}, {0x243f6a88u, 0x85a308d3u}),
            (ops::ThreefryWords{0xc4923a9cu, 0x483df7a0u}));
}

TEST(Random, PrimitiveHashesTheCountersLikeJax) {
  // Two words: the counters (0, 1) make one pair.
  std::vector<int32_t> one = random::split(random::key(0), 1).to_vector<int32_t>();
  ops::ThreefryWords pair = ops::threefry2x32({0, 0}, {0, 1});
  EXPECT_EQ(bits(one[0]), pair[0]);
  EXPECT_EQ(bits(one[1]), pair[1]);
  // Three words: counters (0, 2) and (1, 0), the odd count padded with a 0.
  std::vector<float> three = random::uniform(random::key(0), {3}).to_vector<float>();
  ops::ThreefryWords first = ops::threefry2x32({0, 0}, {0, 2});
  ops::ThreefryWords second = ops::threefry2x32({0, 0}, {1, 0});
  auto mantissa = [](uint32_t word) { return static_cast<float>(word >> 9) * 0x1p-23f; };
  EXPECT_EQ(three[0], mantissa(first[0]));
  EXPECT_EQ(three[1], mantissa(second[0]));
  EXPECT_EQ(three[2], mantissa(first[1]));
  // Four words: counters (0, 2) and (1, 3); word j is the first output of
  // pair j, word 2 + j the second.
  Array key = array(std::vector<int32_t>{0x13198a2e, 0x03707344});
  std::vector<int32_t> words = random::split(key, 2).to_vector<int32_t>();
  ops::ThreefryWords pair0 = ops::threefry2x32({0x13198a2eu, 0x03707344u}, {0, 2});
  ops::ThreefryWords pair1 = ops::threefry2x32({0x13198a2eu, 0x03707344u}, {1, 3});
  EXPECT_EQ(bits(words[0]), pair0[0]);
  EXPECT_EQ(bits(words[1]), pair1[0]);
  EXPECT_EQ(bits(words[2]), pair0[1]);
  EXPECT_EQ(bits(words[3]), pair1[1]);
  // JAX: jax.random.split(jax.random.PRNGKey(0)).
  std::vector<int32_t> jax = random::split(random::key(0)).to_vector<int32_t>();
  std::vector<uint32_t> expected{4146024105u, 967050713u, 2718843009u, 1272950319u};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(bits(jax[i]), expected[i]) << i;
  // JAX: jax.random.uniform(jax.random.PRNGKey(0)) is 0x6b200159 >> 9 over 2^23.
  EXPECT_EQ(random::uniform(random::key(0), {}).item<float>(), 3510272.0f / 8388608.0f);
}

TEST(Random, KeysFromSeeds) {
  EXPECT_EQ(random::key(42).to_vector<int32_t>(), (std::vector<int32_t>{0, 42}));
  EXPECT_EQ(random::key((uint64_t{7} << 32) | 5).to_vector<int32_t>(), (std::vector<int32_t>{7, 5}));
  EXPECT_EQ(random::key(std::numeric_limits<uint64_t>::max()).to_vector<int32_t>(), (std::vector<int32_t>{-1, -1}));
  EXPECT_EQ(random::key(0).dtype(), i32);
  EXPECT_EQ(random::key(0).shape(), (Shape{2}));
}

TEST(Random, SameKeySameNumbersEagerAndTraced) {
  Array key = random::key(1234);
  auto draw = [](const Array& k) {
    std::vector<Array> keys = random::split_keys(k, 5);
    return std::vector<Array>{random::uniform(keys[0], {7, 3}),
                              random::normal(keys[1], {11}, f64),
                              random::randint(keys[2], {13}, -5, 17),
                              random::bernoulli(keys[3], 0.25, {2, 9}),
                              random::uniform(keys[4], {5}, f64, -2.0, 3.0),
                              random::split(k, 3)};
  };
  std::vector<Array> first = draw(key);
  std::vector<Array> second = draw(random::key(1234));
  Graph graph = make_graph("draw", draw, key);
  transform::verify(detail::ir_of(graph));
  std::vector<Array> traced = detail::interpret(graph, {key}, {});
  ASSERT_EQ(traced.size(), first.size());
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].dtype(), traced[i].dtype()) << i;
    EXPECT_EQ(first[i].to_vector<double>(), second[i].to_vector<double>()) << i;
    // The interpreter is the libm oracle: normal's log and cos within its bound.
    EXPECT_TRUE(all_close(traced[i], first[i], native_rtol(first[i].dtype()), 0, "draw " + std::to_string(i)));
    EXPECT_TRUE(all_close(jit(draw)(key)[i], first[i], 0, 0, "compiled draw " + std::to_string(i)));
  }
  std::string text = graph.to_string();
  EXPECT_NE(text.find("random_bits"), std::string::npos) << text;
  EXPECT_NE(text.find("shape=[5,2]"), std::string::npos) << text;
  EXPECT_NE(text.find("dtype=f64"), std::string::npos) << text;
  // A key made inside a trace is built from literals, not captured.
  Graph seeded = make_graph(
      "seeded", [](const Array& x) { return x + random::uniform(random::key(1234), {3}); }, zeros({3}));
  EXPECT_EQ(seeded.num_captures(), 0u);
  EXPECT_EQ(detail::interpret(seeded, {zeros({3})}, {}).at(0).to_vector<float>(),
            random::uniform(key, {3}).to_vector<float>());
  // Another key gives other numbers.
  EXPECT_NE(random::uniform(random::key(1235), {7, 3}).to_vector<float>(), first[0].to_vector<float>());
}

TEST(Random, SplitKeysDiffer) {
  Array keys = random::split(random::key(3), 64);
  EXPECT_EQ(keys.shape(), (Shape{64, 2}));
  EXPECT_EQ(keys.dtype(), i32);
  std::vector<int32_t> words = keys.to_vector<int32_t>();
  std::set<std::pair<int32_t, int32_t>> distinct;
  for (size_t i = 0; i < 64; ++i) distinct.insert({words[2 * i], words[2 * i + 1]});
  EXPECT_EQ(distinct.size(), 64u);
  EXPECT_EQ(distinct.count({0, 3}), 0u);  // none equals the parent key
  std::vector<Array> separate = random::split_keys(random::key(3), 64);
  ASSERT_EQ(separate.size(), 64u);
  for (size_t i = 0; i < 64; ++i) {
    EXPECT_EQ(separate[i].shape(), (Shape{2}));
    EXPECT_EQ(separate[i].to_vector<int32_t>(), (std::vector<int32_t>{words[2 * i], words[2 * i + 1]}));
  }
  EXPECT_EQ(random::split(random::key(3), 0).shape(), (Shape{0, 2}));
  // Children of split keys draw different numbers.
  EXPECT_NE(random::uniform(separate[0], {4}).to_vector<float>(), random::uniform(separate[1], {4}).to_vector<float>());
}

TEST(Random, UniformStatistics) {
  for (DType dtype : {f32, f64}) {
    Array u = random::uniform(random::key(10), {samples}, dtype);
    EXPECT_EQ(u.dtype(), dtype);
    std::vector<double> values = u.to_vector<double>();
    Moments m = moments(values);
    EXPECT_GE(m.min, 0.0);
    EXPECT_LT(m.max, 1.0);
    EXPECT_NEAR(m.mean, 0.5, tolerance(1.0 / 12));
    // Var of (u - 1/2)^2 is 1/80 - 1/144.
    EXPECT_NEAR(m.variance, 1.0 / 12, tolerance(1.0 / 80 - 1.0 / 144));
    // Values are multiples of the mantissa step.
    double step = dtype == f32 ? 0x1p-23 : 0x1p-52;
    for (size_t i = 0; i < 100; ++i) EXPECT_EQ(std::fmod(values[i], step), 0.0);
    // Ten equal bins, each within five standard errors of a tenth.
    std::vector<double> bins(10, 0);
    for (double v : values) bins[static_cast<size_t>(v * 10)] += 1;
    for (double count : bins) EXPECT_NEAR(count / samples, 0.1, tolerance(0.09));
  }
  Array shifted = random::uniform(random::key(11), {samples}, f32, -2.0, 3.0);
  Moments m = moments(shifted.to_vector<double>());
  EXPECT_GE(m.min, -2.0);
  EXPECT_LT(m.max, 3.0);
  EXPECT_NEAR(m.mean, 0.5, tolerance(25.0 / 12));
  EXPECT_NEAR(m.variance, 25.0 / 12, 25 * tolerance(1.0 / 80 - 1.0 / 144));
  // A narrow interval where u * scale + minval rounds onto maxval stays half-open.
  Array narrow = random::uniform(random::key(12), {samples}, f32, 1.0, 1.0 + 0x1p-22);
  for (double v : narrow.to_vector<double>()) ASSERT_TRUE(v >= 1.0 && v < 1.0 + 0x1p-22) << v;
  EXPECT_EQ(random::uniform(random::key(0), {0, 3}).shape(), (Shape{0, 3}));
}

TEST(Random, NormalStatistics) {
  for (DType dtype : {f32, f64}) {
    Array z = random::normal(random::key(20), {samples}, dtype);
    EXPECT_EQ(z.dtype(), dtype);
    std::vector<double> values = z.to_vector<double>();
    for (double v : values) ASSERT_TRUE(std::isfinite(v));
    Moments m = moments(values);
    EXPECT_NEAR(m.mean, 0.0, tolerance(1.0));
    EXPECT_NEAR(m.variance, 1.0, tolerance(2.0));  // var of z^2 is 2
    double within_one = 0, within_two = 0, fourth = 0;
    for (double v : values) {
      within_one += std::abs(v) < 1;
      within_two += std::abs(v) < 2;
      fourth += v * v * v * v;
    }
    EXPECT_NEAR(within_one / samples, 0.682689, tolerance(0.682689 * 0.317311));
    EXPECT_NEAR(within_two / samples, 0.954500, tolerance(0.954500 * 0.045500));
    EXPECT_NEAR(fourth / samples, 3.0, tolerance(96.0));  // E z^4 = 3, var of z^4 = 105 - 9
    EXPECT_GT(m.max, 3.0);
    EXPECT_LT(m.min, -3.0);
  }
}

TEST(Random, RandintStatistics) {
  Array r = random::randint(random::key(30), {samples}, -3, 7);
  EXPECT_EQ(r.dtype(), i32);
  std::vector<int32_t> values = r.to_vector<int32_t>();
  std::vector<double> counts(10, 0);
  for (int32_t v : values) {
    ASSERT_TRUE(v >= -3 && v < 7) << v;
    counts[static_cast<size_t>(v + 3)] += 1;
  }
  // Chi-square with 9 degrees of freedom: 35 is beyond the 0.99995 quantile.
  double chi_square = 0;
  for (double c : counts) chi_square += (c - samples / 10.0) * (c - samples / 10.0) / (samples / 10.0);
  EXPECT_LT(chi_square, 35.0);

  // Full ranges: no overflow, every value in range, mean near the middle.
  constexpr int64_t i32_min = std::numeric_limits<int32_t>::min();
  Array wide = random::randint(random::key(31), {samples}, i32_min, int64_t{1} << 31);
  Moments m = moments(wide.to_vector<double>());
  double spread = std::ldexp(1.0, 32);
  EXPECT_NEAR(m.mean, -0.5, tolerance(spread * spread / 12));
  EXPECT_LT(m.max - m.min, spread);
  EXPECT_GT(m.max - m.min, spread * 0.999);
  Array full_i64 = random::randint(random::key(32), {samples}, std::numeric_limits<int64_t>::min(),
                                   std::numeric_limits<int64_t>::max(), i64);
  EXPECT_EQ(full_i64.dtype(), i64);
  std::vector<int64_t> big = full_i64.to_vector<int64_t>();
  double negative = 0, mean = 0;
  for (int64_t v : big) {
    ASSERT_LT(v, std::numeric_limits<int64_t>::max());
    negative += v < 0;
    mean += std::ldexp(static_cast<double>(v), -63);
  }
  EXPECT_NEAR(negative / samples, 0.5, tolerance(0.25));
  EXPECT_NEAR(mean / samples, 0.0, tolerance(1.0 / 3));
  // A span of one gives the lower bound; large offsets are exact in i64.
  for (int64_t v : random::randint(random::key(33), {100}, 5, 6, i64).to_vector<int64_t>()) EXPECT_EQ(v, 5);
  int64_t base = int64_t{1} << 60;
  for (int64_t v : random::randint(random::key(34), {1000}, base, base + 3, i64).to_vector<int64_t>())
    EXPECT_TRUE(v >= base && v < base + 3) << v;
}

TEST(Random, BernoulliStatistics) {
  for (double p : {0.3, 0.5, 0.97}) {
    Array b = random::bernoulli(random::key(40), p, {samples});
    EXPECT_EQ(b.dtype(), bool_);
    std::vector<double> values = b.to_vector<double>();
    double mean = 0;
    for (double v : values) mean += v;
    EXPECT_NEAR(mean / samples, p, tolerance(p * (1 - p)));
  }
  for (bool v : random::bernoulli(random::key(41), 0.0, {1000}).to_vector<bool>()) EXPECT_FALSE(v);
  for (bool v : random::bernoulli(random::key(41), 1.0, {1000}).to_vector<bool>()) EXPECT_TRUE(v);
}

// Each failing call sits on the line its error must name.
// clang-format off
TEST(Random, Errors) {
  Array key = random::key(0);
  expect_error(__LINE__, [&] { random::uniform(zeros({2}), {3}); }, {"[random.uniform]", "f32[2]", "i32[2]"});
  expect_error(__LINE__, [&] { random::uniform(zeros({3}, i32), {3}); }, {"[random.uniform]", "i32[3]"});
  expect_error(__LINE__, [&] { random::split(zeros({2, 2}, i32)); }, {"[random.split]", "i32[2,2]"});
  expect_error(__LINE__, [&] { random::split(key, -1); }, {"[random.split]", "-1"});
  expect_error(__LINE__, [&] { random::normal(zeros({2}, i64), {3}); }, {"[random.normal]", "i64[2]"});
  expect_error(__LINE__, [&] { random::randint(zeros({1}, i32), {3}, 0, 2); }, {"[random.randint]", "i32[1]"});
  expect_error(__LINE__, [&] { random::bernoulli(Array(), 0.5, {3}); }, {"[random.bernoulli]"});
  expect_error(__LINE__, [&] { random::uniform(key, {3}, f32, 1.0, 1.0); }, {"[random.uniform]", "minval < maxval"});
  expect_error(__LINE__, [&] { random::uniform(key, {3}, f32, 2.0, 1.0); }, {"[random.uniform]", "minval < maxval"});
  expect_error(__LINE__, [&] { random::uniform(key, {3}, f32, 0.0, INFINITY); }, {"[random.uniform]", "finite"});
  expect_error(__LINE__, [&] { random::uniform(key, {3}, f32, -3e38, 3e38); }, {"[random.uniform]", "overflows f32"});
  expect_error(__LINE__, [&] { random::uniform(key, {3}, i32); }, {"[random.uniform]", "floating", "i32"});
  expect_error(__LINE__, [&] { random::uniform(key, {-1}); }, {"[random.uniform]", "[-1]"});
  expect_error(__LINE__, [&] { random::randint(key, {-2, 3}, 0, 4); }, {"[random.randint]", "[-2,3]"});
  expect_error(__LINE__, [&] { random::normal(key, {3}, bool_); }, {"[random.normal]", "bool"});
  expect_error(__LINE__, [&] { random::randint(key, {3}, 5, 5); }, {"[random.randint]", "minval < maxval"});
  expect_error(__LINE__, [&] { random::randint(key, {3}, 0, 10, f32); }, {"[random.randint]", "integer dtype", "f32"});
  expect_error(__LINE__, [&] { random::randint(key, {3}, -1, 10, u8); }, {"[random.randint]", "fit in u8"});
  expect_error(__LINE__, [&] { random::randint(key, {3}, 0, 300, u8); }, {"[random.randint]", "fit in u8"});
  expect_error(__LINE__, [&] { random::randint(key, {3}, 0, int64_t{1} << 40); }, {"[random.randint]", "i32"});
  expect_error(__LINE__, [&] { random::bernoulli(key, 1.5, {3}); }, {"[random.bernoulli]", "[0, 1]", "1.5"});
  expect_error(__LINE__, [&] { random::bernoulli(key, -0.1, {3}); }, {"[random.bernoulli]", "[0, 1]"});
  expect_error(__LINE__, [&] { random::bernoulli(key, NAN, {3}); }, {"[random.bernoulli]", "[0, 1]"});
  expect_error(__LINE__, [&] { random::uniform(key, {int64_t{1} << 20, int64_t{1} << 20});
               },
               {"[random.uniform]", "2^32"});
}
// clang-format on

}  // namespace
}  // namespace kiln
