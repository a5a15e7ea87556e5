// Eager results equal compiled results bit for bit at every size: an eager
// operation whose native code is kiln's vector math runs that code at every
// size (never libm for small arrays), and constant folding leaves vector math
// to the kernels. Random numbers are the same eagerly and inside jit.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cache/backend_choice.h"

namespace kiln {
namespace {

bool same_bits(const Array& a, const Array& b) {
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0;
}

class EagerEqualsCompiled : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cache::default_backend().name() != "llvm") GTEST_SKIP() << "the interpreter is libm eagerly and compiled";
  }
};

const std::vector<int64_t> sizes = {1, 2, 3, 7, 16, 100, 1000, 4096, 16383, 16384, 65536};

TEST_F(EagerEqualsCompiled, TranscendentalFunctionsAtEverySize) {
  std::vector<std::pair<const char*, std::function<Array(const Array&)>>> functions = {
      {"exp", [](const Array& x) { return exp(x); }},
      {"log", [](const Array& x) { return log(x); }},
      {"log1p", [](const Array& x) { return log1p(x); }},
      {"expm1", [](const Array& x) { return expm1(x); }},
      {"tanh", [](const Array& x) { return tanh(x); }},
      {"sigmoid", [](const Array& x) { return sigmoid(x); }},
      {"erf", [](const Array& x) { return erf(x); }},
      {"sin", [](const Array& x) { return sin(x); }},
      {"cos", [](const Array& x) { return cos(x); }},
      {"pow", [](const Array& x) { return pow(x, 1.7); }},
      {"softmax", [](const Array& x) { return softmax(x); }},
      {"sigmoid*exp", [](const Array& x) { return sigmoid(x) * exp(-x); }},
  };
  for (DType dtype : {f32, f64})
    for (int64_t n : sizes) {
      Array x = random::uniform(random::key(static_cast<uint64_t>(n)), {n}, dtype, 0.01, 4.0);
      for (auto& [name, f] : functions) {
        auto jitted = jit(f);
        EXPECT_TRUE(same_bits(f(x), jitted(x))) << name << " " << dtype_name(dtype) << "[" << n << "]";
      }
    }
}

TEST_F(EagerEqualsCompiled, RandomNumbersAtEverySizeAndDistribution) {
  for (int64_t n = 1; n <= (int64_t{1} << 16); n *= 4) {
    for (DType dtype : {f32, f64}) {
      std::string where = std::string(dtype_name(dtype)) + "[" + std::to_string(n) + "]";
      auto draw_all = [n, dtype](const Array& key) {
        std::vector<Array> keys = random::split_keys(key, 4);
        return std::vector<Array>{random::uniform(keys[0], {n}, dtype), random::normal(keys[1], {n}, dtype),
                                  random::bernoulli(keys[2], 0.3, {n}), random::randint(keys[3], {n}, -5, 9)};
      };
      Array key = random::key(42);
      std::vector<Array> eager = draw_all(key), compiled = jit(draw_all)(key);
      // The key made inside jit from a constant seed is folded: the same numbers too.
      auto seeded = jit([draw_all](const Array&) { return draw_all(random::key(42)); });
      std::vector<Array> folded = seeded(key);
      for (size_t k = 0; k < eager.size(); ++k) {
        EXPECT_TRUE(same_bits(eager[k], compiled[k])) << "distribution " << k << " " << where;
        EXPECT_TRUE(same_bits(eager[k], folded[k])) << "distribution " << k << " " << where << " (seed inside jit)";
      }
    }
  }
}

TEST_F(EagerEqualsCompiled, LiteralOnlyValuesAreNotFoldedWithLibm) {
  auto f = jit([](const Array& x) { return x + exp(full({8}, 0.3f)) + tanh(full({}, 1.7f)); });
  Array x = zeros({8});
  Array eager = x + exp(full({8}, 0.3f)) + tanh(full({}, 1.7f));
  EXPECT_TRUE(same_bits(eager, f(x)));
}

}  // namespace
}  // namespace kiln
