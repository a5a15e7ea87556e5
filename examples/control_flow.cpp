// Loops that compile as loops. Two programs:
//
// 1. A Newton solver written with while_loop: the cube roots of many numbers
//    at once, iterating until every residual is small; its forward-mode
//    derivative (jvp) gives the sensitivity d x / d a = 1 / (3 x^2) through
//    the loop itself.
// 2. A recurrent network trained with scan to predict the next sample of
//    noisy sine waves: the whole training step over a 100-step sequence —
//    forward scan, reverse scan for the gradient, SGD — is one jitted graph
//    whose size does not grow with the sequence length.
#include <kiln/kiln.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

using kiln::Array;

namespace {

struct Rnn {
  Array w, u, b, out;
};
}  // namespace
KILN_TREE(Rnn, w, u, b, out);

namespace {

std::string text(const Array& value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// ---- Newton ------------------------------------------------------------------

using Iterate = std::pair<Array, Array>;  // (x, iterations)

Iterate cube_roots(const Array& a) {
  auto unfinished = [&a](const Iterate& it) {
    Array residual = kiln::max(kiln::abs(it.first * it.first * it.first - a));
    return kiln::logical_and(residual > 1e-5f * kiln::max(kiln::abs(a)), it.second < 100);
  };
  auto newton_step = [&a](const Iterate& it) {
    const Array& x = it.first;
    return Iterate{x - (x * x * x - a) / (3.0f * x * x), it.second + 1};
  };
  // Starting at 1 + |a| / 3 keeps every iterate above the root.
  return kiln::while_loop(unfinished, newton_step, Iterate{1.0f + kiln::abs(a) / 3.0f, kiln::zeros({}, kiln::i32)});
}

// ---- RNN ---------------------------------------------------------------------

constexpr int64_t hidden = 16, length = 100, batch = 32;

// One step: h' = tanh(W h + U x + b); the prediction of the next sample is out . h'.
std::pair<Array, Array> rnn_step(const Rnn& p, const Array& h, const Array& x) {
  Array next = kiln::tanh(kiln::matmul(h, p.w) + x * p.u + p.b);
  return {next, kiln::matmul(next, p.out)};
}

// Mean squared error of predicting xs[t + 1] from xs[0..t], over the batch.
Array loss(const Rnn& p, const Array& xs, const Array& targets) {
  auto step = [&p](const Array& h, const Array& x) { return rnn_step(p, h, x); };
  auto [last, predictions] = kiln::scan(step, kiln::zeros({batch, hidden}), xs);
  return kiln::mean(kiln::square(predictions - targets));
}

// Sine waves of random phases and frequencies, [length + 1, batch, 1].
Array waves(const Array& key) {
  auto keys = kiln::random::split_keys(key, 3);
  Array phase = kiln::random::uniform(keys[0], {1, batch, 1}, kiln::f32, 0.0, 6.28);
  Array frequency = kiln::random::uniform(keys[1], {1, batch, 1}, kiln::f32, 0.1, 0.3);
  Array t = kiln::reshape(kiln::astype(kiln::arange(length + 1), kiln::f32), {length + 1, 1, 1});
  return kiln::sin(t * frequency + phase) + 0.05f * kiln::random::normal(keys[2], {length + 1, batch, 1});
}

}  // namespace

int main(int argc, char** argv) {
  int steps = argc > 1 ? std::atoi(argv[1]) : 300;

  std::printf("== Newton's method with while_loop ==\n");
  Array a = kiln::array({2.0f, 27.0f, 1000.0f, 0.125f, 50.0f});
  auto solve = kiln::jit(cube_roots);
  auto [roots, iterations] = solve(a);
  std::printf("cube roots of %s: %s after %d iterations\n", text(a).c_str(), text(roots).c_str(),
              iterations.item<int32_t>());
  auto [value, sensitivity] =
      kiln::jvp([](const Array& v) { return cube_roots(v).first; }, std::tuple{a}, std::tuple{kiln::ones_like(a)});
  std::printf("d root / d a through the loop: %s (1 / (3 root^2): %s)\n", text(sensitivity).c_str(),
              text(1.0f / (3.0f * value * value)).c_str());
  std::printf("the solver's graph has %zu nodes and compiled %lld time(s)\n", solve.lower(a).num_nodes(),
              static_cast<long long>(solve.stats().compiles));

  std::printf("\n== An RNN trained with scan over %lld steps ==\n", static_cast<long long>(length));
  auto keys = kiln::random::split_keys(kiln::random::key(0), 4);
  Rnn params{kiln::random::normal(keys[0], {hidden, hidden}) * 0.2f, kiln::random::normal(keys[1], {1, hidden}) * 0.5f,
             kiln::zeros({hidden}), kiln::random::normal(keys[2], {hidden, 1}) * 0.2f};
  auto train_step = kiln::jit([](const Rnn& p, const Array& sequence) {
    Array xs = kiln::slice(sequence, {0, 0, 0}, {length, batch, 1});
    Array targets = kiln::slice(sequence, {1, 0, 0}, {length + 1, batch, 1});
    auto [value, grads] = kiln::value_and_grad(loss)(p, xs, targets);
    Rnn updated = kiln::tree_map([](const Array& w, const Array& g) { return w - 0.1f * g; }, p, grads);
    return std::pair{updated, value};
  });
  Array data_key = keys[3];
  float first = 0, last = 0;
  auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < steps; ++step) {
    auto split = kiln::random::split_keys(data_key, 2);
    data_key = split[0];
    auto [updated, value] = train_step(params, waves(split[1]));
    params = updated;
    last = value.item<float>();
    if (step == 0) first = last;
    if (step % 50 == 0 || step == steps - 1) std::printf("step %4d  loss %.5f\n", step, last);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("loss %.5f -> %.5f in %d steps (%.2f ms per step, %lld compile(s); the step's graph has %zu nodes)\n",
              first, last, steps, 1e3 * seconds / steps, static_cast<long long>(train_step.stats().compiles),
              train_step.lower(params, waves(keys[3])).num_nodes());
  // Once: compiled, or loaded from the persistent cache by a second run.
  auto once = [](const kiln::CacheStats& stats) { return stats.compiles + stats.persistent_hits == 1; };
  bool compiled_once = once(solve.stats()) && once(train_step.stats());
  return last < first && compiled_once ? 0 : 1;
}
