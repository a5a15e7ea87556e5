// The cuda device's backend against the reference interpreter: every kernel
// family, products, slices of reductions to one value, host steps, and the
// random-graph fuzzer. Each test runs on the emulated device (the same GPU
// entries compiled for the host, the grid run thread after thread) and,
// where a GPU and its driver are present, on the GPU; there it is skipped
// elsewhere.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <atomic>
#include <thread>

#include "backend/cuda/cuda_device.h"
#include "backend/cuda/cuda_driver.h"
#include "backend/cuda/emulated_device.h"
#include "backend/cuda/gpu_backend.h"
#include "mlp.h"
#include "random_graph.h"
#include "support/errors.h"

namespace kiln::testing {
namespace {

using cuda_backend::Device;

class GpuBackendTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    // jit's device "cuda" is the emulated device under KILN_CUDA_EMULATE=1.
    if (GetParam() == "emulated") {
      ::setenv("KILN_CUDA_EMULATE", "1", 1);
      device_ = cuda_backend::make_emulated_device();
    } else {
      ::unsetenv("KILN_CUDA_EMULATE");
      try {
        device_ = cuda_backend::cuda_device();
      } catch (const Error& error) {
        GTEST_SKIP() << "no CUDA device here: " << error.what();
      }
    }
    backend_ = cuda_backend::make_gpu_backend(device_);
  }

  void TearDown() override { ::unsetenv("KILN_CUDA_EMULATE"); }

  std::string check(const DifferentialCase& test, const std::vector<Tolerance>& tolerances = {}) {
    return run_differential(test, tolerances, *backend_);
  }

  std::shared_ptr<Device> device_;
  std::unique_ptr<runtime::Backend> backend_;
};

Array normal(const Shape& shape, uint32_t seed = 1) { return random::normal(random::key(seed), shape); }

// Sums and transcendental functions round differently from the
// interpreter's (slices, kiln's own exp and tanh); products are OpenBLAS's
// or cuBLAS's, blocked differently from the interpreter's loops.
const Tolerance close{.absolute = 1e-5, .relative = 1e-5};

TEST_P(GpuBackendTest, AnElementwiseChainMatches) {
  Array x = normal({1000}), y = normal({1000}, 2);
  EXPECT_EQ(
      check(trace_case(
                "chain", [](const Array& a, const Array& b) { return tanh(a * 2.0f + 1.0f) * b - exp(-a); }, x, y),
            {close}),
      "");
  // Broadcasting rows and columns, integers and comparisons.
  Array rows = normal({7, 33}), column = normal({7, 1}, 3);
  EXPECT_EQ(check(trace_case(
                "broadcast",
                [](const Array& a, const Array& b) {
                  return std::vector<Array>{where(a > b, a - b, b * 0.5f), remainder(astype(a * 10.0f, DType::i32), 7)};
                },
                rows, column)),
            "");
}

TEST_P(GpuBackendTest, RowReductionsSoftmaxAndLayerNormMatch) {
  Array x = normal({37, 300}) * 3.0f;
  EXPECT_EQ(check(trace_case(
                      "rows",
                      [](const Array& v) {
                        Array centered = v - mean(v, -1, true);
                        return std::vector<Array>{
                            softmax(v, -1), log_softmax(v, -1),
                            max(v, -1),     min(v, 0),
                            sum(v, 0),      centered * rsqrt(mean(square(centered), -1, true) + 1e-5f)};
                      },
                      x),
                  {close}),
            "");
}

TEST_P(GpuBackendTest, AReductionToOneValueCombinesItsSlicesInOrder) {
  // Long enough to be sliced (llvm_backend::chunked_reduction_minimum).
  Array x = normal({1 << 17});
  EXPECT_EQ(check(trace_case(
                      "total",
                      [](const Array& v) {
                        return std::vector<Array>{sum(v * v), max(v), min(abs(v))};
                      },
                      x),
                  {close}),
            "");
  // NaN wins a maximum from whichever slice it is in.
  Array with_nan = where(arange(0, 1 << 17) == 70000, full({1 << 17}, NAN), x);
  EXPECT_EQ(check(trace_case(
                "nan", [](const Array& v) { return max(v * 1.0f); }, with_nan)),
            "");
}

TEST_P(GpuBackendTest, ProductsMatchWithTransposesReadAsFlags) {
  Array a = normal({33, 17}), b = normal({17, 9}, 2), c = normal({9, 17}, 3), batch = normal({4, 5, 6}, 4);
  EXPECT_EQ(check(trace_case(
                      "products",
                      [](const Array& x, const Array& y, const Array& z, const Array& w) {
                        return std::vector<Array>{matmul(x, y), matmul(x, transpose(z)),
                                                  matmul(transpose(y), transpose(x)),
                                                  matmul(w, transpose(w, {0, 2, 1}))};
                      },
                      a, b, c, batch),
                  {close}),
            "");
  Array a64 = astype(a, DType::f64), b64 = astype(b, DType::f64);
  EXPECT_EQ(check(trace_case(
                      "f64 product", [](const Array& x, const Array& y) { return matmul(x, y); }, a64, b64),
                  {{.absolute = 1e-12, .relative = 1e-12}}),
            "");
}

TEST_P(GpuBackendTest, AnMlpTrainingStepMatches) {
  Array w1 = normal({64, 32}) * 0.1f, b1 = zeros({32}), w2 = normal({32, 10}, 2) * 0.1f;
  Array x = normal({16, 64}, 3);
  Array labels = one_hot(astype(remainder(arange(0, 16), 10), DType::i32), 10);
  auto loss = [](const Array& first, const Array& bias, const Array& second, const Array& inputs,
                 const Array& targets) {
    Array hidden = relu(matmul(inputs, first) + bias);
    return -mean(sum(log_softmax(matmul(hidden, second), -1) * targets, -1));
  };
  auto step = [&](const Array& first, const Array& bias, const Array& second, const Array& inputs,
                  const Array& targets) {
    auto [value, gradients] = value_and_grad(loss, {0, 1, 2})(first, bias, second, inputs, targets);
    return std::vector<Array>{value, std::get<0>(gradients), std::get<1>(gradients), std::get<2>(gradients)};
  };
  EXPECT_EQ(check(trace_case("mlp step", step, w1, b1, w2, x, labels), {close}), "");
}

TEST_P(GpuBackendTest, TheDemoMlpTrainsLossForLossLikeTheCpu) {
  // examples/mlp.h: 784 -> 512 -> 512 -> 10 with Adam, 50 steps jitted for
  // each device, the GPU's parameters and state staying on it throughout.
  auto [params, state, batch, labels] = mlp::example_arguments();
  auto on_gpu = [](const Array& a) { return to_device(a, "cuda"); };
  Mlp gpu_params = tree_map(on_gpu, params);
  Adam gpu_state{tree_map(on_gpu, state.mean), tree_map(on_gpu, state.variance), on_gpu(state.step)};
  Array gpu_batch = on_gpu(batch), gpu_labels = on_gpu(labels);
  EXPECT_EQ(gpu_batch.device(), "cuda");
  auto cpu_step = jit(mlp::train_step);
  auto gpu_step = jit(mlp::train_step, {.device = "cuda"});
  for (int step = 0; step < 50; ++step) {
    auto [next_params, next_state, loss] = cpu_step(params, state, batch, labels);
    auto [next_gpu_params, next_gpu_state, gpu_loss] = gpu_step(gpu_params, gpu_state, gpu_batch, gpu_labels);
    EXPECT_EQ(gpu_loss.device(), "cuda");
    float expected = loss.item<float>(), got = gpu_loss.item<float>();
    EXPECT_NEAR(got, expected, 1e-4f * std::abs(expected)) << "step " << step;
    params = next_params;
    state = next_state;
    gpu_params = next_gpu_params;
    gpu_state = next_gpu_state;
  }
  EXPECT_EQ(gpu_step.stats().compiles, 1);
  EXPECT_EQ(gpu_params.w1.device(), "cuda");
}

TEST_P(GpuBackendTest, ArraysMoveBetweenDevicesAndAreReadOnTheHost) {
  Array x = normal({3, 5});
  Array on_gpu = to_device(x, "cuda");
  EXPECT_EQ(x.device(), "cpu");
  EXPECT_EQ(on_gpu.device(), "cuda");
  EXPECT_EQ(to_device(on_gpu, "cuda").device(), "cuda");
  // Read on the host, and by an eager operation, through one host copy.
  EXPECT_EQ(on_gpu.to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ((on_gpu * 2.0f).to_vector<float>(), (x * 2.0f).to_vector<float>());
  Array back = to_device(on_gpu, "cpu");
  EXPECT_EQ(back.device(), "cpu");
  EXPECT_EQ(back.to_vector<float>(), x.to_vector<float>());
  // A jitted function's result stays on the device until read.
  auto double_it = jit([](const Array& a) { return a * 2.0f; }, {.device = "cuda"});
  Array doubled = double_it(on_gpu);
  EXPECT_EQ(doubled.device(), "cuda");
  doubled.block_until_ready();
  EXPECT_EQ(doubled.to_vector<float>(), (x * 2.0f).to_vector<float>());
}

TEST_P(GpuBackendTest, StandaloneKernelsAndRandomNumbersMatch) {
  Array x = normal({32, 48});
  Array indices = astype(arange(0, 32, 3), DType::i32);
  EXPECT_EQ(check(trace_case(
                "standalone",
                [](const Array& v, const Array& i) {
                  return std::vector<Array>{transpose(v) + 1.0f, concatenate({v, v * 2.0f}, 1), take(v, i, 0),
                                            pad(v, {1, 2}, {3, 0}), argmax(v, 1)};
                },
                x, indices)),
            "");
  EXPECT_EQ(check(trace_case(
                      "cumsum", [](const Array& v) { return cumsum(v, 1); }, x),
                  {close}),
            "");
  EXPECT_EQ(check(trace_case(
                      "random",
                      [](const Array& key) {
                        return std::vector<Array>{random::uniform(key, {4096}), random::normal(key, {64, 3})};
                      },
                      random::key(7)),
                  {close}),
            "");
}

TEST_P(GpuBackendTest, StepsWithoutGpuCodeRunOnTheHost) {
  Array x = normal({6, 6}) + eye(6) * 6.0f;
  EXPECT_EQ(check(trace_case(
                      "host step",
                      [](const Array& v) {
                        return std::vector<Array>{linalg::inv(v) * 2.0f, sort(v, -1)};
                      },
                      x),
                  {close}),
            "");
}

TEST_P(GpuBackendTest, OutputsThatAreInputsOrConstantsComeBackAsThey) {
  Array x = normal({5});
  EXPECT_EQ(check(trace_case(
                "passing",
                [](const Array& v) {
                  return std::vector<Array>{v, full({3}, 2.5f), v + 1.0f};
                },
                x)),
            "");
}

TEST_P(GpuBackendTest, EmptyArraysRunNoKernel) {
  Array empty = zeros({0, 3});
  EXPECT_EQ(check(trace_case(
                "empty",
                [](const Array& v) {
                  return std::vector<Array>{exp(v) + 1.0f, sum(v, 0), sum(v)};
                },
                empty)),
            "");
}

TEST_P(GpuBackendTest, RandomGraphsMatchTheInterpreter) {
  std::vector<uint64_t> failing;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    std::string report = check_random_graph(make_random_graph(seed), *backend_);
    if (!report.empty()) {
      failing.push_back(seed);
      ADD_FAILURE() << report;
    }
  }
  EXPECT_TRUE(failing.empty()) << failing.size() << " failing seeds";
}

TEST_P(GpuBackendTest, FreedMemoryServesTheNextCall) {
  Array x = normal({4096});
  DifferentialCase test = trace_case(
      "twice", [](const Array& v) { return exp(v) * v; }, x);
  auto executable = backend_->compile(std::make_shared<ir::Graph>(detail::ir_of(test.graph)));
  executable->run({&x, 1}, {});
  size_t cached = device_->cached_bytes();
  size_t used = device_->used_bytes();
  EXPECT_GT(cached, 0u);
  executable->run({&x, 1}, {});
  EXPECT_EQ(device_->cached_bytes(), cached);
  EXPECT_EQ(device_->used_bytes(), used);
}

TEST_P(GpuBackendTest, CallsFromSeveralThreadsTakeTurnsOnTheDevice) {
  // Runs on one device take turns; memory freed by one thread's call serves
  // another's, and each result is read on the host by the thread that made it.
  auto scaled = jit([](const Array& v, const Array& by) { return tanh(v * by) + sum(v); }, {.device = "cuda"});
  Array x = to_device(normal({3000}), "cuda");
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 25; ++k) {
        float factor = static_cast<float>(t * 25 + k) / 50.0f;
        std::vector<float> got = scaled(x, scalar(factor)).to_vector<float>();
        std::vector<float> expected =
            (tanh(to_device(x, "cpu") * factor) + sum(to_device(x, "cpu"))).to_vector<float>();
        for (size_t i = 0; i < got.size(); ++i)
          wrong += std::abs(got[i] - expected[i]) > 1e-4f * (1 + std::abs(expected[i]));
      }
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(scaled.stats().compiles, 1);
}

TEST_P(GpuBackendTest, LoopsAndBranchesRunTheirBodiesOnTheDevice) {
  Array x = normal({8}), h0 = normal({4}, 2), xs = normal({5, 4}, 3);
  EXPECT_EQ(check(trace_case(
                      "control",
                      [](const Array& v, const Array& h, const Array& rows) {
                        Array doubled = fori_loop(
                            0, 3, [](const Array&, const Array& c) { return c * 2.0f + 1.0f; }, v);
                        auto [halved, steps] =
                            while_loop([](const std::pair<Array, Array>& s) { return sum(abs(s.first)) > 1.0f; },
                                       [](const std::pair<Array, Array>& s) {
                                         return std::pair{s.first * 0.5f, s.second + 1};
                                       },
                                       std::pair{v, scalar(0)});
                        Array sign = cond(
                            sum(v) > 0.0f, [](const Array& a) { return exp(a); }, [](const Array& a) { return -a; }, v);
                        auto [last, hidden] = scan(
                            [](const Array& carry, const Array& row) {
                              Array next = tanh(carry + row);
                              return std::pair{next, next * 2.0f};
                            },
                            h, rows);
                        return std::vector<Array>{doubled, halved, steps, sign, last, hidden};
                      },
                      x, h0, xs),
                  {close}),
            "");
}

TEST_P(GpuBackendTest, ADynamicGraphCompilesOnceAndRunsAtEverySize) {
  // Rows and a sequence length marked dynamic: one symbolic graph, its
  // kernels reading their sizes from their constants at each call.
  JitOptions options;
  options.dynamic_dims = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};
  auto model = [](const Array& v, const Array& w) {
    return std::vector<Array>{softmax(matmul(v, w), -1), sum(exp(v), -1), mean(v, 0)};
  };
  auto on_cpu = jit(model, options);
  options.device = "cuda";
  auto on_gpu = jit(model, options);
  for (int64_t rows : {8, 37, 3}) {
    for (int64_t features : {16, 5}) {
      Array v = normal({rows, features}, static_cast<uint32_t>(rows)), w = normal({features, features}, 9);
      std::vector<Array> expected = on_cpu(v, w), got = on_gpu(to_device(v, "cuda"), w);
      EXPECT_EQ(compare_outputs(got, expected, {close}), "") << rows << " x " << features;
    }
  }
  EXPECT_EQ(on_gpu.stats().compiles, on_cpu.stats().compiles);
  EXPECT_EQ(on_gpu.stats().compiles, 1);  // six sizes, one symbolic graph
}

TEST_P(GpuBackendTest, DynamicDimensionsWithLoopsCompileOnceAndRunAtEverySize) {
  // Rows marked dynamic: a loop body whose literal depends on them (a mean
  // over the rows), a scan over the rows and a branch, one symbolic graph.
  JitOptions options;
  options.dynamic_dims = {{0, 0}};
  auto model = [](const Array& v, const Array& h) {
    Array smoothed = fori_loop(
        0, 3, [](const Array&, const Array& c) { return c * 0.5f + mean(c, 0, true); }, v);
    auto [last, hidden] = scan(
        [](const Array& carry, const Array& row) {
          Array next = tanh(carry + row);
          return std::pair{next, next * 2.0f};
        },
        h, v);
    Array branch = cond(
        sum(v) > 0.0f, [](const Array& a) { return exp(a); }, [](const Array& a) { return -a; }, v);
    return std::vector<Array>{smoothed, last, hidden, branch};
  };
  auto on_cpu = jit(model, options);
  options.device = "cuda";
  auto on_gpu = jit(model, options);
  Array h = normal({6}, 2);
  for (int64_t rows : {8, 37, 3, 8}) {
    Array v = normal({rows, 6}, static_cast<uint32_t>(rows));
    EXPECT_EQ(compare_outputs(on_gpu(to_device(v, "cuda"), h), on_cpu(v, h), {close}), "") << rows << " rows";
  }
  EXPECT_EQ(on_cpu.stats().compiles, 1);
  EXPECT_EQ(on_gpu.stats().compiles, 1);  // three sizes, one symbolic graph
}

TEST_P(GpuBackendTest, ASavedExecutableLoadsWithoutGeneratingCode) {
  // Kernels, a reduction in slices, a product, and a loop whose body is
  // saved with it.
  Array x = normal({1 << 17}), rows = normal({37, 300}, 2), w = normal({300, 8}, 3);
  DifferentialCase test = trace_case(
      "saved",
      [](const Array& v, const Array& r, const Array& m) {
        Array looped = fori_loop(
            0, 3, [](const Array&, const Array& c) { return tanh(c) * 1.5f; }, r);
        return std::vector<Array>{sum(v * v), softmax(matmul(looped, m), -1)};
      },
      x, rows, w);
  auto graph = std::make_shared<ir::Graph>(detail::ir_of(test.graph));
  auto compiled = backend_->compile(graph);
  std::string saved = backend_->save(*compiled);
  ASSERT_FALSE(saved.empty());
  size_t programs = device_->programs_compiled();
  auto loaded = backend_->load(graph, saved);
  EXPECT_EQ(device_->programs_compiled(), programs);  // the loop's body neither
  std::vector<Array> expected = compiled->run(test.arguments, test.captures);
  EXPECT_EQ(compare_outputs(loaded->run(test.arguments, test.captures), expected, std::vector<Tolerance>{}),
            "");  // bit for bit

  // Bytes that do not describe the graph are refused before anything runs.
  EXPECT_THROW(backend_->load(graph, saved.substr(0, saved.size() / 2)), runtime::SavedExecutableMismatch);
  DifferentialCase other = trace_case(
      "other", [](const Array& v) { return exp(v) - v; }, x);
  EXPECT_THROW(backend_->load(std::make_shared<ir::Graph>(detail::ir_of(other.graph)), saved),
               runtime::SavedExecutableMismatch);
}

TEST_P(GpuBackendTest, ASavedSymbolicExecutableRunsAtEveryBinding) {
  JitOptions options;
  options.dynamic_dims = {{0, 0}};
  auto model = [](const Array& v) {
    return fori_loop(
        0, 2, [](const Array&, const Array& c) { return softmax(c - mean(c, 0, true), -1); }, v);
  };
  Graph traced = jit(model, options).lower(normal({8, 5}));
  auto graph = std::make_shared<ir::Graph>(detail::ir_of(traced));
  ASSERT_GT(graph->symbols, 0);
  auto compiled = backend_->compile(graph);
  size_t programs = device_->programs_compiled();
  auto loaded = backend_->load(graph, backend_->save(*compiled));
  EXPECT_EQ(device_->programs_compiled(), programs);
  for (int64_t rows : {8, 21, 2}) {
    Array v = normal({rows, 5}, static_cast<uint32_t>(rows));
    EXPECT_EQ(compare_outputs(loaded->run({&v, 1}, {}), compiled->run({&v, 1}, {}), std::vector<Tolerance>{}), "")
        << rows << " rows";
  }
}

TEST(CudaDriver, AMissingOrWrongDriverIsAClearError) {
  std::string missing = error_message([] { cuda_backend::CudaDriver::open("/no/such/libcuda.so.1"); });
  for (const char* part :
       {"[cuda]", "cannot open the CUDA driver '/no/such/libcuda.so.1'", "KILN_CUDA_DRIVER", "use device \"cpu\""})
    EXPECT_NE(missing.find(part), std::string::npos) << part << " in " << missing;
  // A library that is not the driver.
  std::string wrong = error_message([] { cuda_backend::CudaDriver::open("libm.so.6"); });
  EXPECT_NE(wrong.find("'libm.so.6' has no cuInit"), std::string::npos) << wrong;
  // Where no driver is installed, asking for the device says so, every time.
  if (void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    ::dlclose(driver);
    GTEST_SKIP() << "this machine has a CUDA driver";
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string none = error_message([] { cuda_backend::cuda_device(); });
    EXPECT_NE(none.find("cannot open the CUDA driver 'libcuda.so.1'"), std::string::npos) << none;
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, GpuBackendTest, ::testing::Values("emulated", "cuda"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace kiln::testing
