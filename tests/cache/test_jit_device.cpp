// JitOptions::device through the caches: a graph compiled for one device is
// never another device's executable, and a device's calls hit like any
// other's. The "cuda" device here is the emulated one (KILN_CUDA_EMULATE=1:
// the GPU entries run on the host), so this runs on every machine.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <cstdlib>

#include "fresh_cache_fixture.h"
#include "persistent_fixture.h"

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

TEST_F(JitDevice, ACompileForAnotherDeviceSaysSo) {
  std::vector<telemetry::Event> compiles;
  auto subscription = telemetry::subscribe([&](const telemetry::Event& event) {
    if (event.kind == telemetry::EventKind::compile) compiles.push_back(event);
  });
  auto scale = [](const Array& x) { return exp(x) * 3.0f; };
  Array x = normal({32}, 1);
  jit(scale, {.name = "on_cpu"})(x);
  jit(scale, {.name = "on_gpu", .device = "cuda"})(x);
  jit([](const Array& x) { return x - 1.0f; }, {.name = "new_graph", .device = "cuda"})(x);
  ASSERT_EQ(compiles.size(), 3u);
  EXPECT_EQ(compiles[0].reason, "first call");
  EXPECT_EQ(compiles[1].function, "on_gpu");
  EXPECT_EQ(compiles[1].reason,
            "first call; for device 'cuda' (the graph cache holds this graph compiled for device 'cpu': each device "
            "compiles its own code)");
  EXPECT_EQ(compiles[2].reason, "first call");  // no other device has this graph
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

// The persistent cache with the "cuda" device: its entries hold the device's
// code under the device's target.
class JitDeviceSaved : public PersistentCacheTest {
 protected:
  void SetUp() override {
    PersistentCacheTest::SetUp();
    ::setenv("KILN_CUDA_EMULATE", "1", 1);
  }
  void TearDown() override {
    ::unsetenv("KILN_CUDA_EMULATE");
    PersistentCacheTest::TearDown();
  }

  // One call of a fresh jitted function for `device`; its executables are
  // forgotten when this returns, as when a process ends.
  static std::pair<std::vector<float>, CacheStats> call(const std::string& device) {
    auto step = jit(
        [](const Array& x, const Array& w) {
          Array h = fori_loop(
              0, 2, [](const Array&, const Array& c) { return tanh(c) + 0.5f; }, matmul(x, w));
          return softmax(h, -1) * sum(square(x));
        },
        {.name = "saved_step", .device = device});
    std::vector<float> result = step(normal({16, 32}, 1), normal({32, 8}, 2)).to_vector<float>();
    CacheStats stats = step.stats();
    forget_in_memory();
    return {result, stats};
  }

  // Entries of the step (the eager operations making its inputs have theirs).
  int64_t saved_steps() {
    std::vector<cache::EntryInfo> all = entries(/*check=*/false);
    return std::count_if(all.begin(), all.end(), [](const cache::EntryInfo& entry) {
      return entry.function == "saved_step" && entry.problem.empty();
    });
  }
};

TEST_F(JitDeviceSaved, AFreshStartLoadsTheDevicesCodeAndComputesTheSame) {
  auto [cold, cold_stats] = call("cuda");
  EXPECT_EQ(cold_stats.compiles, 1);
  EXPECT_EQ(saved_steps(), 1);
  auto [warm, warm_stats] = call("cuda");
  EXPECT_EQ(warm_stats.compiles, 0);
  EXPECT_EQ(warm_stats.persistent_hits, 1);
  EXPECT_EQ(warm, cold);  // the same code, bit for bit
  // The cpu's executable of the same graph is an entry of its own.
  auto [on_cpu, cpu_stats] = call("cpu");
  EXPECT_EQ(cpu_stats.compiles, 1);
  EXPECT_EQ(cpu_stats.persistent_hits, 0);
  EXPECT_EQ(saved_steps(), 2);
  ASSERT_EQ(on_cpu.size(), cold.size());
  for (size_t k = 0; k < cold.size(); ++k) EXPECT_NEAR(on_cpu[k], cold[k], 1e-5f * (1 + std::abs(cold[k])));
}

}  // namespace
}  // namespace kiln::testing
