// What kiln says when something recompiles: a shape change, a missing map
// key, a changing step counter (lifted after its second value), and a storm
// of new lengths.
#include <kiln/kiln.h>

#include <iostream>

int main() {
  using namespace kiln;
  using Batch = std::map<std::string, Array>;
  auto f =
      jit([](const Array& w, const std::map<std::string, Array>& batch) { return sum(matmul(batch.at("tokens"), w)); },
          {.name = "forward"});
  Array w = ones({128, 4});
  f(w, Batch{{"tokens", ones({32, 128})}});
  f(w, Batch{{"tokens", ones({48, 128})}});
  std::cout << "shape change:\n  " << f.last_miss_explanation() << "\n\n";

  auto g = jit([](const std::map<std::string, Array>& batch) { return batch.at("x") * 2; }, {.name = "keys"});
  g(Batch{{"x", ones({2})}, {"mask", ones({2})}});
  g(Batch{{"x", ones({2})}});
  std::cout << "structure change:\n  " << g.last_miss_explanation() << "\n\n";

  int step = 0;
  auto schedule = jit([&](const Array& x) { return x * (0.1 / (1 + step)); }, {.name = "schedule"});
  for (step = 0; step < 100; ++step) schedule(ones({4}));
  std::cout << "a step counter over 100 steps: " << schedule.stats().compiles << " compiles\n";
  std::cout << "  " << schedule.last_miss_explanation() << "\n\n";

  // Without automatic dynamic shapes every new length compiles again: past
  // recompile_limit compiles the storm is reported (KILN_LOG=storms, on by default).
  auto unpadded = jit([](const Array& x) { return x * 2; }, {.name = "unpadded", .automatic_dynamic = false});
  for (int64_t length = 1; length <= 10; ++length) unpadded(ones({length}));
  std::cout << "a new length every call, automatic_dynamic off: " << unpadded.stats().compiles << " compiles\n";
}
