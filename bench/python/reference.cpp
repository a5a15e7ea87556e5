// The C++ side of bench/python/bench_python.py: the same eager calls the
// Python benchmark makes (W1's chain, the MLP's forward pass), timed the same
// way, so the script can print Python's overhead as a ratio of one run.
//   bench_python_reference REPEATS   prints "name min_us median_us" lines
// Each of REPEATS samples times a batch of calls and divides, as Python's
// timeit does, with the same batch sizes as the script.
#include <kiln/kiln.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "../../examples/mlp.h"

namespace {

void report(const char* name, int repeats, int number, const std::function<void()>& call) {
  call();
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < number; ++k) call();
    times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
                    number);
  }
  std::sort(times.begin(), times.end());
  std::printf("%s %.3f %.3f\n", name, times.front(), times[times.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  using kiln::Array;
  int repeats = argc > 1 ? std::atoi(argv[1]) : 50;
  for (int64_t n : {int64_t{1} << 20, int64_t{1} << 24}) {
    Array x = kiln::random::normal(kiln::random::key(1), {n});
    report(n == (1 << 20) ? "w1_2^20" : "w1_2^24", repeats, 5,
           [&] { Array y = kiln::tanh(0.7f * x + 0.3f) * kiln::sigmoid(x) - 0.5f * x * x; });
  }
  Mlp params = mlp::init(kiln::random::key(0));
  Array batch = kiln::random::normal(kiln::random::key(2), {mlp::batch_size, mlp::inputs});
  report("mlp_forward", repeats, 20, [&] { Array y = mlp::logits(params, batch); });
  // The overhead of one small call.
  Array small = kiln::ones({8});
  report("add_f32[8]", repeats, 20000, [&] { Array y = small + 1; });
  auto add_one = kiln::jit([](const Array& x) { return x + 1; });
  report("jit_add_f32[8]", repeats, 20000, [&] { Array y = add_one(small); });
  // The demo's training step, jitted with its parameters and state donated.
  auto step =
      kiln::jit([](const Mlp& p, const Adam& s, const Array& x, const Array& y) { return mlp::train_step(p, s, x, y); },
                {.name = "train_step", .donate_argnums = {0, 1}});
  Adam state = mlp::initial_state(params);
  Array labels = kiln::random::randint(kiln::random::key(3), {mlp::batch_size}, 0, mlp::classes);
  // The graph's size, so that the script can show that both sides compile the same step.
  std::printf("mlp_train_step_nodes %zu %zu\n", step.lower(params, state, batch, labels).num_nodes(),
              step.lower(params, state, batch, labels).num_nodes());
  report("mlp_train_step", repeats, 5, [&] {
    auto [updated, next, loss] = step(params, state, batch, labels);
    params = std::move(updated);
    state = std::move(next);
  });
  return 0;
}
