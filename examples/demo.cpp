// kiln's main demo: eager operations, the IR of a traced function with its
// source lines, and running that graph.
#include <iostream>

#include <kiln/kiln.h>

int main() {
  using namespace kiln;
  Array x = array({1.0f, 2.0f, 3.0f});
  Array y = x * 2.0 + 1;
  std::cout << "eager: x * 2 + 1 = " << y << "\n";
  std::cout << "tanh(x) = " << tanh(x) << "\n";

  Array scale = full({3}, 0.5f);  // captured: becomes an implicit input, never a constant
  auto fn = [&](const Array& v) { return exp(v) * scale - 3.0; };
  Graph graph = make_graph("fn", fn, x);
  std::cout << graph;
  std::cout << "interpreted: " << detail::interpret(graph, {x}, {scale})[0] << "\n";
}
