// A reinforcement-learning style loop: the loss closes over a fresh batch
// sampled from a replay buffer every step. kiln lifts the captured batch to an
// implicit input, so 1,000 steps compile once and never run stale code.
#include <kiln/kiln.h>

#include <iostream>

int main() {
  using namespace kiln;
  Array buffer = random::normal(random::key(0), {4096, 16});
  Array weights = random::normal(random::key(1), {16, 4}) * 0.1f;
  Array batch;  // replaced every step; the jitted loss reads it by reference

  auto loss = jit([&](const Array& w) { return mean(square(matmul(batch, w))); }, {.name = "replay_loss"});
  Array key = random::key(42);
  double worst = 0;
  for (int step = 0; step < 1000; ++step) {
    auto keys = random::split_keys(key);
    key = keys[0];
    Array rows = random::randint(keys[1], {64}, 0, 4096);
    batch = take(buffer, rows, 0);
    float compiled = loss(weights).item<float>();
    float eager = mean(square(matmul(batch, weights))).item<float>();
    worst = std::max(worst, static_cast<double>(std::abs(compiled - eager) / std::max(1e-30f, std::abs(eager))));
  }
  CacheStats stats = loss.stats();
  std::cout << "1000 steps: " << stats.compiles << " compile, " << stats.hits << " hits, " << stats.traces
            << " traces; largest relative |jit - eager| = " << worst << "\n";
  return stats.compiles + stats.persistent_hits == 1 && worst < 1e-5 ? 0 : 1;
}
