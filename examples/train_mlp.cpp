// kiln's main demo: an MLP classifier (784 -> 512 -> 512 -> 10, ReLU, softmax
// cross-entropy) trained with Adam written with tree_map, on generated data.
// The whole training step — forward, backward, optimizer — is one jitted
// graph that compiles once. The trained parameters are saved as safetensors
// and loaded back.
#include <kiln/kiln.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "mlp.h"

using kiln::Array;
using namespace mlp;

namespace {

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
  Adam state = initial_state(params);

  // Captureless: the step is cached by signature and never re-traced.
  auto train_step =
      kiln::jit([](const Mlp& p, const Adam& s, const Array& x, const Array& y) { return mlp::train_step(p, s, x, y); },
                {.name = "train_step", .donate_argnums = {0, 1}});
  auto accuracy =
      kiln::jit([](const Mlp& p, const Array& x,
                   const Array& y) { return kiln::mean(kiln::astype(kiln::argmax(logits(p, x), -1) == y, kiln::f32)); },
                {.name = "accuracy"});

  std::printf("MLP %lld-%lld-%lld-%lld, batch %lld, Adam, %d steps on generated data\n", static_cast<long long>(inputs),
              static_cast<long long>(hidden), static_cast<long long>(hidden), static_cast<long long>(classes),
              static_cast<long long>(batch_size), steps);
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
  // A second run finds the step in the persistent cache (~/.cache/kiln).
  kiln::CacheStats process = kiln::global_cache_stats();
  std::printf(
      "this process: %lld executable(s) compiled in %.1f ms, %lld loaded from the persistent cache in %.1f ms "
      "(compiling them took %.1f ms when they were saved)\n",
      static_cast<long long>(process.compiles), process.compile_seconds * 1e3,
      static_cast<long long>(process.persistent_hits), process.load_seconds * 1e3, process.saved_compile_seconds * 1e3);

  std::filesystem::path path = std::filesystem::temp_directory_path() / "kiln_mlp.safetensors";
  kiln::save(path.string(), {{"w1", params.w1},
                             {"b1", params.b1},
                             {"w2", params.w2},
                             {"b2", params.b2},
                             {"w3", params.w3},
                             {"b3", params.b3}});
  auto loaded = kiln::load(path.string());
  Mlp restored{loaded["w1"], loaded["b1"], loaded["w2"], loaded["b2"], loaded["w3"], loaded["b3"]};
  float before = accuracy(params, test_data, test_labels).item<float>();
  float after = accuracy(restored, test_data, test_labels).item<float>();
  std::printf("saved to %s and reloaded: test accuracy %.3f -> %.3f\n", path.string().c_str(), before, after);
  return stats.compiles == 1 && before == after ? 0 : 1;
}
