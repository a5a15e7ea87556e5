// Dynamic dimensions against static ones on the same work, in one run: the
// executable compiled once for every size (dynamic_dims) against the one
// compiled for this size alone. Goals: a dynamic kernel runs at >= 0.9x the
// static one's speed (time ratio <= 1.11), and a dynamic compile costs at
// most 1.5x a static one (it also traces the function at the probe sizes).
//   W1: y = tanh(0.7x + 0.3) * sigmoid(x) - 0.5x^2 over f32[2^24], dynamic length
//   softmax over the last axis of f32[4096, 1024], dynamic rows
//   an MLP training step (784 -> 256 -> 10, value_and_grad, SGD), dynamic batch 512
// Each dynamic row runs at the size of its static twin, after a first call
// at another size (so the executable is truly the generic one). Run with
// KILN_CACHE=off so that compiles are not loads from the persistent cache.
#include <benchmark/benchmark.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness.h"

using kiln::Array;

namespace {

Array w1(const Array& x) { return kiln::tanh(0.7 * x + 0.3) * kiln::sigmoid(x) - 0.5 * x * x; }
Array softmax_rows(const Array& x) { return kiln::softmax(x, -1); }

std::vector<Array> mlp_step(const Array& w1, const Array& b1, const Array& w2, const Array& b2, const Array& x,
                            const Array& labels) {
  auto loss = [&](const Array& a, const Array& b, const Array& c, const Array& d) {
    Array hidden = kiln::relu(kiln::matmul(x, a) + b);
    Array logits = kiln::matmul(hidden, c) + d;
    return -kiln::mean(kiln::sum(kiln::log_softmax(logits, -1) * labels, -1));
  };
  auto [value, grads] = kiln::value_and_grad(loss, {0, 1, 2, 3})(w1, b1, w2, b2);
  auto& [g1, gb1, g2, gb2] = grads;
  return {value, w1 - 0.01f * g1, b1 - 0.01f * gb1, w2 - 0.01f * g2, b2 - 0.01f * gb2};
}

double seconds_of(const std::function<void()>& body) {
  auto start = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Compile times, static against dynamic, over fresh jitted objects with the
// process-wide caches cleared: the median of `repeats` first calls each.
struct CompileTimes {
  std::vector<double> static_seconds, dynamic_seconds;
};

// Executables and the process-wide kernel cache both go: every compile generates its code.
void clear_caches() {
  kiln::CacheLimits limits = kiln::cache_limits();
  kiln::set_cache_limits({.per_function = limits.per_function, .graphs = 0, .kernels = 0});
  kiln::set_cache_limits(limits);
}

template <class F, class... Args>
void time_compiles(CompileTimes& times, const F& fn, std::vector<kiln::DynamicDim> dims, const Args&... args) {
  clear_caches();
  auto fixed = kiln::jit(fn, {.automatic_dynamic = false});
  times.static_seconds.push_back(seconds_of([&] { fixed(args...); }));
  clear_caches();
  auto generic = kiln::jit(fn, {.dynamic_dims = dims});
  times.dynamic_seconds.push_back(seconds_of([&] { generic(args...); }));
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  auto x = std::make_shared<Array>(kiln::random::normal(kiln::random::key(1), {int64_t{1} << 24}));
  auto rows = std::make_shared<Array>(kiln::random::normal(kiln::random::key(2), {4096, 1024}));
  auto parameters = std::make_shared<std::vector<Array>>(
      std::vector<Array>{kiln::random::normal(kiln::random::key(3), {784, 256}) * 0.05f, kiln::zeros({256}),
                         kiln::random::normal(kiln::random::key(4), {256, 10}) * 0.05f, kiln::zeros({10})});
  auto batch = std::make_shared<Array>(kiln::random::normal(kiln::random::key(5), {512, 784}));
  auto labels =
      std::make_shared<Array>(kiln::one_hot(kiln::random::randint(kiln::random::key(6), {512}, 0, 10), 10, kiln::f32));

  auto static_w1 = kiln::jit(w1, {.name = "w1_static", .automatic_dynamic = false});
  auto dynamic_w1 = kiln::jit(w1, {.name = "w1_dynamic", .dynamic_dims = {{0, 0}}});
  auto static_softmax = kiln::jit(softmax_rows, {.name = "softmax_static", .automatic_dynamic = false});
  auto dynamic_softmax = kiln::jit(softmax_rows, {.name = "softmax_dynamic", .dynamic_dims = {{0, 0}}});
  auto static_step = kiln::jit(mlp_step, {.name = "mlp_static", .automatic_dynamic = false});
  auto dynamic_step = kiln::jit(mlp_step, {.name = "mlp_dynamic", .dynamic_dims = {{4, 0}, {5, 0}}});
  // The dynamic executables are compiled at other sizes first.
  dynamic_w1(kiln::ones({1000}));
  dynamic_softmax(kiln::ones({3, 1024}));
  const auto& p = *parameters;
  dynamic_step(p[0], p[1], p[2], p[3], kiln::ones({7, 784}), kiln::ones({7, 10}));

  kiln::bench::add("W1 static", [=] { benchmark::DoNotOptimize(static_w1(*x)); });
  kiln::bench::add("W1 dynamic", [=] { benchmark::DoNotOptimize(dynamic_w1(*x)); });
  kiln::bench::add("softmax static", [=] { benchmark::DoNotOptimize(static_softmax(*rows)); });
  kiln::bench::add("softmax dynamic", [=] { benchmark::DoNotOptimize(dynamic_softmax(*rows)); });
  kiln::bench::add("MLP step static", [=] {
    const auto& q = *parameters;
    benchmark::DoNotOptimize(static_step(q[0], q[1], q[2], q[3], *batch, *labels));
  });
  kiln::bench::add("MLP step dynamic", [=] {
    const auto& q = *parameters;
    benchmark::DoNotOptimize(dynamic_step(q[0], q[1], q[2], q[3], *batch, *labels));
  });
  kiln::bench::run_all(argc, argv);

  std::printf("\n== dynamic against static executables, same size (time ratios; lower is better) ==\n");
  kiln::bench::compare("W1 f32[2^24], dynamic vs static", "W1 dynamic", "W1 static", 1 / 0.9, ">= 0.9x the speed");
  kiln::bench::compare("softmax f32[4096,1024], dynamic rows vs static", "softmax dynamic", "softmax static", 1 / 0.9,
                       ">= 0.9x the speed");
  kiln::bench::compare("MLP step batch 512, dynamic batch vs static", "MLP step dynamic", "MLP step static", 1 / 0.9,
                       ">= 0.9x the speed");

  // Compile times: fresh jitted objects, the process-wide caches cleared, 7 times each.
  std::printf("\n== compile time, dynamic vs static (first call, median of 7; goal <= 1.5) ==\n");
  auto report = [](const char* label, const CompileTimes& times) {
    double fixed = median(times.static_seconds), generic = median(times.dynamic_seconds);
    std::printf("%-40s static %8.2f ms  dynamic %8.2f ms  ratio %.2f  (goal <= 1.5: %s)\n", label, fixed * 1e3,
                generic * 1e3, generic / fixed, generic / fixed <= 1.5 ? "met" : "NOT met");
  };
  CompileTimes w1_times, softmax_times, step_times;
  Array small = kiln::ones({4096}), small_rows = kiln::ones({64, 1024});
  Array small_batch = kiln::ones({64, 784}), small_labels = kiln::ones({64, 10});
  for (int repeat = 0; repeat < 7; ++repeat) {
    time_compiles(w1_times, w1, {{0, 0}}, small);
    time_compiles(softmax_times, softmax_rows, {{0, 0}}, small_rows);
    time_compiles(step_times, mlp_step, {{4, 0}, {5, 0}}, p[0], p[1], p[2], p[3], small_batch, small_labels);
  }
  report("W1", w1_times);
  report("softmax", softmax_times);
  report("MLP step", step_times);
}
