// JitOptions::device through the caches: a graph compiled for one device is
// never another device's executable, and a device's calls hit like any
// other's. The "cuda" device here is the emulated one (KILN_CUDA_EMULATE=1:
// the GPU entries run on the host), so this runs on every machine.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cstdlib>

#include "fresh_cache_fixture.h"

namespace kiln::testing {
namespace {

class JitDevice : public FreshCacheTest {
 protected:
  void SetUp() override {
    FreshCacheTest::SetUp();
    ::setenv("KILN_CUDA_EMULATE", "1", 1);
  }
  void TearDown() override {
    ::unsetenv("KILN_CUDA_EMULATE");
    FreshCacheTest::TearDown();
  }
};

Array normal(const Shape& shape, uint32_t seed) { return random::normal(random::key(seed), shape); }

void expect_close(const Array& got, const Array& expected) {
  std::vector<float> a = got.to_vector<float>(), b = expected.to_vector<float>();
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], b[k], 1e-5f * (1 + std::abs(b[k]))) << "element " << k;
}

TEST_F(JitDevice, TheSameGraphCompilesOnceForEachDevice) {
  auto layer = [](const Array& x, const Array& w) { return tanh(matmul(x, w)) * 2.0f + 1.0f; };
  auto on_cpu = jit(layer);
  auto on_gpu = jit(layer, {.device = "cuda"});
  Array x = normal({8, 16}, 1), w = normal({16, 4}, 2);
  Array expected = on_cpu(x, w);
  expect_close(on_gpu(x, w), expected);
  // Two functions tracing to one graph share its executable on one device
  // (the cpu's compile), never across devices.
  EXPECT_EQ(on_cpu.stats().compiles, 1);
  EXPECT_EQ(on_gpu.stats().compiles, 1);
  auto another_on_gpu = jit(layer, {.device = "cuda"});
  expect_close(another_on_gpu(x, w), expected);
  EXPECT_EQ(another_on_gpu.stats().compiles, 0);
  // New data of the same shapes runs the same code.
  Array y = normal({8, 16}, 3);
  expect_close(on_gpu(y, w), on_cpu(y, w));
  EXPECT_EQ(on_gpu.stats().compiles, 1);
  EXPECT_EQ(on_gpu.stats().hits, 1);
}

TEST_F(JitDevice, ATrainingLoopRunsOnTheDevice) {
  // Linear regression by gradient descent, the same steps on both devices.
  auto step = [](const Array& w, const Array& x, const Array& y) {
    auto loss = [](const Array& weights, const Array& inputs, const Array& targets) {
      return mean(square(matmul(inputs, weights) - targets));
    };
    auto [value, gradient] = value_and_grad(loss)(w, x, y);
    return std::make_pair(w - gradient * 0.1f, value);
  };
  auto cpu_step = jit(step);
  auto gpu_step = jit(step, {.device = "cuda"});
  Array x = normal({64, 8}, 4), true_w = normal({8, 1}, 5);
  Array y = matmul(x, true_w);
  Array w_cpu = zeros({8, 1}), w_gpu = zeros({8, 1});
  for (int k = 0; k < 30; ++k) {
    auto [next_cpu, loss_cpu] = cpu_step(w_cpu, x, y);
    auto [next_gpu, loss_gpu] = gpu_step(w_gpu, x, y);
    EXPECT_NEAR(loss_gpu.item<float>(), loss_cpu.item<float>(), 1e-4f * (1 + loss_cpu.item<float>())) << "step " << k;
    w_cpu = next_cpu;
    w_gpu = next_gpu;
  }
  expect_close(w_gpu, w_cpu);
  EXPECT_EQ(gpu_step.stats().compiles, 1);
}

}  // namespace
}  // namespace kiln::testing
