// Uses the public API only; prints a checkable line.
#include <kiln/kiln.h>

#include <iostream>

int main() {
  kiln::Array x = kiln::array({1.0f, 2.0f, 3.0f});
  kiln::Array y = kiln::exp(x * 0.0f) + x;  // 2, 3, 4
  kiln::Graph graph = kiln::make_graph(
      "consumer", [](const kiln::Array& v) { return v * 2; }, x);
  std::cout << "consumer ok " << y.to_vector<float>()[2] << " " << graph.num_nodes() << "\n";
  return y.to_vector<float>()[2] == 4.0f ? 0 : 1;
}
