// The MLP of the main demo (784 -> 512 -> 512 -> 10, ReLU, softmax
// cross-entropy) and its Adam training step, written with tree_map. The demo
// trains it; bench/bench_mlp.cpp times the very same step.
#pragma once

#include <kiln/kiln.h>

#include <cmath>
#include <tuple>

struct Mlp {
  kiln::Array w1, b1, w2, b2, w3, b3;
};
KILN_TREE(Mlp, w1, b1, w2, b2, w3, b3);

struct Adam {
  Mlp mean, variance;
  kiln::Array step;  // f32 scalar: an argument, so the bias correction never recompiles
};
KILN_TREE(Adam, mean, variance, step);

namespace mlp {

using kiln::Array;

constexpr int64_t inputs = 784, hidden = 512, classes = 10, batch_size = 256;
constexpr float learning_rate = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;

inline Array dense_init(const Array& key, int64_t fan_in, int64_t fan_out) {
  return kiln::random::normal(key, {fan_in, fan_out}) * static_cast<float>(std::sqrt(2.0 / fan_in));
}

inline Mlp init(const Array& key) {
  auto keys = kiln::random::split_keys(key, 3);
  return {dense_init(keys[0], inputs, hidden),  kiln::zeros({hidden}),
          dense_init(keys[1], hidden, hidden),  kiln::zeros({hidden}),
          dense_init(keys[2], hidden, classes), kiln::zeros({classes})};
}

/// Adam's state for `params`: zero moments, step 0.
inline Adam initial_state(const Mlp& params) {
  auto zero = [](const Array& p) { return kiln::zeros_like(p); };
  return {kiln::tree_map(zero, params), kiln::tree_map(zero, params), kiln::scalar(0.0f)};
}

/// Fresh parameters, Adam's state and one batch of random inputs and labels,
/// all from fixed keys: what the benchmarks time the step on.
inline std::tuple<Mlp, Adam, Array, Array> example_arguments() {
  auto keys = kiln::random::split_keys(kiln::random::key(0), 2);
  Mlp params = init(keys[0]);
  Adam state = initial_state(params);
  return {params, state, kiln::random::normal(keys[1], {batch_size, inputs}),
          kiln::random::randint(keys[1], {batch_size}, 0, classes)};
}

inline Array logits(const Mlp& p, const Array& x) {
  Array h = kiln::relu(kiln::matmul(x, p.w1) + p.b1);
  h = kiln::relu(kiln::matmul(h, p.w2) + p.b2);
  return kiln::matmul(h, p.w3) + p.b3;
}

inline Array loss(const Mlp& p, const Array& x, const Array& labels) {
  Array log_probabilities = kiln::log_softmax(logits(p, x));
  return -kiln::mean(kiln::sum(kiln::one_hot(labels, classes) * log_probabilities, -1));
}

/// Adam's update of `p` by `grads`: the updated parameters and state.
inline std::pair<Mlp, Adam> adam_update(const Mlp& p, const Adam& s, const Mlp& grads) {
  Array t = s.step + 1.0f;
  Mlp mean = kiln::tree_map([](const Array& m, const Array& g) { return beta1 * m + (1 - beta1) * g; }, s.mean, grads);
  Mlp variance =
      kiln::tree_map([](const Array& v, const Array& g) { return beta2 * v + (1 - beta2) * g * g; }, s.variance, grads);
  Array correction1 = 1.0f - kiln::exp(t * std::log(beta1));
  Array correction2 = 1.0f - kiln::exp(t * std::log(beta2));
  // The bias corrections folded into two scalars, as torch::optim::Adam does:
  // per element, one square root and one division.
  Array step_size = learning_rate / correction1, scale = 1.0f / kiln::sqrt(correction2);
  Mlp updated = kiln::tree_map([&](const Array& w, const Array& m,
                                   const Array& v) { return w - step_size * m / (kiln::sqrt(v) * scale + epsilon); },
                               p, mean, variance);
  return {updated, Adam{mean, variance, t}};
}

/// One training step: forward, backward and Adam. Returns the updated
/// parameters, the updated state and the loss before the update.
inline std::tuple<Mlp, Adam, Array> train_step(const Mlp& p, const Adam& s, const Array& x, const Array& y) {
  auto [value, grads] = kiln::value_and_grad(loss)(p, x, y);
  auto [updated, state] = adam_update(p, s, grads);
  return {updated, state, value};
}

}  // namespace mlp
