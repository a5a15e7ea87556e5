// kiln's main demo: eager operations, the IR of a traced function with its
// source lines, and a jitted function whose cache compiles once.
#include <kiln/kiln.h>

#include <iostream>

namespace {
using kiln::Array;

// A small dense layer; `scale` is read from the enclosing scope.
Array layer(const Array& x, const Array& w, const Array& b) { return kiln::tanh(kiln::matmul(x, w) + b); }
}  // namespace

int main() {
  using namespace kiln;

  std::cout << "== eager operations ==\n";
  Array x = array({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, {2, 3});
  std::cout << "x             = " << x << "\n";
  std::cout << "x * 2.0 + 1   = " << x * 2.0 + 1 << "   (2.0 is weakly typed: still f32)\n";
  std::cout << "sum(x, 1)     = " << sum(x, 1) << "\n";
  std::cout << "softmax(x)    = " << softmax(x) << "\n";
  std::cout << "x @ x^T       = " << matmul(x, transpose(x)) << "\n";

  std::cout << "\n== the traced graph (captured `bias` is an implicit input; 0.5 is a literal) ==\n";
  Array w = random::normal(random::key(0), {3, 4});
  Array bias = zeros({4});
  auto forward = [&](const Array& input) { return layer(input, w, bias) * 0.5; };
  Graph graph = make_graph("forward", forward, x);
  std::cout << graph;

  std::cout << "\n== jit ==\n";
  auto fast = jit(forward, {.name = "forward"});
  for (int step = 0; step < 100; ++step) {
    bias = full({4}, 0.01f * static_cast<float>(step));  // new data every call: rebound, never recompiled
    fast(x);
  }
  Array result = fast(x);
  std::cout << "jitted result = " << result << "\n";
  std::cout << "eager result  = " << forward(x) << "\n";
  CacheStats stats = fast.stats();
  std::cout << "calls " << stats.calls << ", compiles " << stats.compiles << ", loaded from the persistent cache "
            << stats.persistent_hits << ", hits " << stats.hits << "\n";
}
