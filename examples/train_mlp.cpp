// kiln's main demo: an MLP classifier (784 -> 512 -> 512 -> 10, ReLU, softmax
// cross-entropy) trained with Adam written with tree_map, on generated data.
// The whole training step — forward, backward, optimizer — is one jitted
// graph that compiles once. The trained parameters are saved as safetensors
// and loaded back.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <kiln/kiln.h>

using kiln::Array;

struct Mlp {
  Array w1, b1, w2, b2, w3, b3;
};
KILN_TREE(Mlp, w1, b1, w2, b2, w3, b3);

struct Adam {
  Mlp mean, variance;
  Array step;  // f32 scalar: an argument, so the bias correction never recompiles
};
KILN_TREE(Adam, mean, variance, step);

namespace {

constexpr int64_t inputs = 784, hidden = 512, classes = 10, batch_size = 256;
constexpr float learning_rate = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;

Array dense_init(const Array& key, int64_t fan_in, int64_t fan_out) {
  return kiln::random::normal(key, {fan_in, fan_out}) * static_cast<float>(std::sqrt(2.0 / fan_in));
}

Mlp init(const Array& key) {
  auto keys = kiln::random::split_keys(key, 3);
  return {dense_init(keys[0], inputs, hidden), kiln::zeros({hidden}), dense_init(keys[1], hidden, hidden),
          kiln::zeros({hidden}), dense_init(keys[2], hidden, classes), kiln::zeros({classes})};
}

Array logits(const Mlp& p, const Array& x) {
  Array h = kiln::relu(kiln::matmul(x, p.w1) + p.b1);
  h = kiln::relu(kiln::matmul(h, p.w2) + p.b2);
  return kiln::matmul(h, p.w3) + p.b3;
}

Array loss(const Mlp& p, const Array& x, const Array& labels) {
  Array log_probabilities = kiln::log_softmax(logits(p, x));
  return -kiln::mean(kiln::sum(kiln::one_hot(labels, classes) * log_probabilities, -1));
}

// Ten classes, each a noisy cloud around its own random prototype (the noise
// is much larger than the prototypes), seen through a saturating nonlinearity.
std::pair<Array, Array> make_dataset(const Array& prototypes, const Array& key, int64_t count) {
  auto keys = kiln::random::split_keys(key, 2);
  Array labels = kiln::random::randint(keys[0], {count}, 0, classes);
  Array noise = kiln::random::normal(keys[1], {count, inputs}) * 3.0f;
  return {kiln::tanh(kiln::take(prototypes, labels, 0) + noise), labels};
}

}  // namespace

int main(int argc, char** argv) {
  int steps = argc > 1 ? std::atoi(argv[1]) : 300;
  Array prototypes = kiln::random::normal(kiln::random::key(2024), {classes, inputs}) * 0.3f;
  auto [data, labels] = make_dataset(prototypes, kiln::random::key(1), 16384);
  auto [test_data, test_labels] = make_dataset(prototypes, kiln::random::key(7), 2048);

  Mlp params = init(kiln::random::key(0));
  auto zero = [](const Array& p) { return kiln::zeros_like(p); };
  Adam state{kiln::tree_map(zero, params), kiln::tree_map(zero, params), kiln::scalar(0.0f)};

  // Captureless: the step is cached by signature and never re-traced.
  auto train_step = kiln::jit(
      [](const Mlp& p, const Adam& s, const Array& x, const Array& y) {
        auto [value, grads] = kiln::value_and_grad(loss)(p, x, y);
        Array t = s.step + 1.0f;
        Mlp mean = kiln::tree_map([&](const Array& m, const Array& g) { return beta1 * m + (1 - beta1) * g; }, s.mean,
                                  grads);
        Mlp variance = kiln::tree_map(
            [&](const Array& v, const Array& g) { return beta2 * v + (1 - beta2) * g * g; }, s.variance, grads);
        Array correction1 = 1.0f - kiln::exp(t * std::log(beta1));
        Array correction2 = 1.0f - kiln::exp(t * std::log(beta2));
        // The bias corrections folded into two scalars: per element, one square
        // root and one division.
        Array step_size = learning_rate / correction1, scale = 1.0f / kiln::sqrt(correction2);
        Mlp updated = kiln::tree_map(
            [&](const Array& w, const Array& m, const Array& v) {
              return w - step_size * m / (kiln::sqrt(v) * scale + epsilon);
            },
            p, mean, variance);
        return std::make_tuple(updated, Adam{mean, variance, t}, value);
      },
      {.name = "train_step", .donate_argnums = {0, 1}});
  auto accuracy = kiln::jit([](const Mlp& p, const Array& x, const Array& y) {
    return kiln::mean(kiln::astype(kiln::argmax(logits(p, x), -1) == y, kiln::f32));
  }, {.name = "accuracy"});

  std::printf("MLP %lld-%lld-%lld-%lld, batch %lld, Adam, %d steps on generated data\n",
              static_cast<long long>(inputs), static_cast<long long>(hidden), static_cast<long long>(hidden),
              static_cast<long long>(classes), static_cast<long long>(batch_size), steps);
  Array key = kiln::random::key(3);
  auto start = std::chrono::steady_clock::now();
  for (int step = 1; step <= steps; ++step) {
    auto keys = kiln::random::split_keys(key);
    key = keys[0];
    Array rows = kiln::random::randint(keys[1], {batch_size}, 0, data.shape(0));
    Array value;
    Array bx = kiln::take(data, rows, 0), by = kiln::take(labels, rows, 0);
    std::tie(params, state, value) = train_step(params, state, bx, by);
    if (step == 1 || step % 50 == 0 || step == steps) {
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("step %4d  loss %.4f  %.1f steps/s\n", step, value.item<float>(), step / seconds);
    }
  }
  std::printf("test accuracy %.3f\n", accuracy(params, test_data, test_labels).item<float>());
  kiln::CacheStats stats = train_step.stats();
  std::printf("train_step cache: %lld calls, %lld compile(s), %lld hits, compile %.1f ms, trace %.1f ms\n",
              static_cast<long long>(stats.calls), static_cast<long long>(stats.compiles),
              static_cast<long long>(stats.hits), stats.compile_seconds * 1e3, stats.trace_seconds * 1e3);

  std::filesystem::path path = std::filesystem::temp_directory_path() / "kiln_mlp.safetensors";
  kiln::save(path.string(), {{"w1", params.w1}, {"b1", params.b1}, {"w2", params.w2},
                             {"b2", params.b2}, {"w3", params.w3}, {"b3", params.b3}});
  auto loaded = kiln::load(path.string());
  Mlp restored{loaded["w1"], loaded["b1"], loaded["w2"], loaded["b2"], loaded["w3"], loaded["b3"]};
  float before = accuracy(params, test_data, test_labels).item<float>();
  float after = accuracy(restored, test_data, test_labels).item<float>();
  std::printf("saved to %s and reloaded: test accuracy %.3f -> %.3f\n", path.string().c_str(), before, after);
  return stats.compiles == 1 && before == after ? 0 : 1;
}
