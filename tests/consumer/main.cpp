// Uses the public API only; prints a checkable line.
#include <kiln/kiln.h>

#include <iostream>

int main() {
  kiln::Array x = kiln::array({1.0f, 2.0f, 3.0f});
  kiln::Array y = kiln::exp(x * 0.0f) + x;  // 2, 3, 4
  kiln::Graph graph = kiln::make_graph(
      "consumer", [](const kiln::Array& v) { return v * 2; }, x);
  // Eager operations on large arrays run the kernels jit compiles (kiln
  // installs its compiler before main), so the two agree bit for bit.
  kiln::Array big = kiln::random::uniform(kiln::random::key(0), {1 << 16}, kiln::DType::f32, 0.01, 4.0);
  auto f = [](const kiln::Array& v) { return kiln::exp(v); };
  if (f(big).to_vector<float>() != kiln::jit(f)(big).to_vector<float>()) {
    std::cout << "consumer: eager operations on large arrays did not run compiled kernels\n";
    return 1;
  }
  std::cout << "consumer ok " << y.to_vector<float>()[2] << " " << graph.num_nodes() << "\n";
  return y.to_vector<float>()[2] == 4.0f ? 0 : 1;
}
