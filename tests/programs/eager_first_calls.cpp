// Eager operations of kiln's vector math in background mode (the test that
// runs this sets KILN_COMPILE=background; the suites themselves run sync):
// the first call of each returns its result with nothing compiled, its code
// interpreted, while its kernel compiles on the compile thread; later calls
// run that kernel, with the same bits. Prints "eager first calls ok", or
// what differed, and exits 1 on a difference.
#include <kiln/kiln.h>

#include <cstdio>
#include <string>

#include "backend/llvm/backend.h"
#include "support/compile_gate.h"

int main() {
  using namespace kiln;
  Array x = random::normal(random::key(3), {64, 48});
  x.to_vector<float>();
  wait_for_background_compiles();  // random's own kernels (its log compiles in the background too)
  auto results = [&] { return testing::bytes_of(tanh(x)) + testing::bytes_of(log1p(x * x)); };
  std::string first;
  size_t before = 0, during = 0;
  {
    testing::CompileGate gate;  // holds the background compiles until the first results are in
    before = llvm_backend::modules_compiled();
    first = results();
    during = llvm_backend::modules_compiled();
  }
  size_t after = llvm_backend::modules_compiled();
  std::string later = results();
  size_t again = llvm_backend::modules_compiled();
  bool ok = during == before && after == before + 2 && again == after && first == later;
  std::printf(
      "eager first calls %s: %zu modules compiled before the first results, %zu in the background, %zu "
      "after them; the same bits: %s\n",
      ok ? "ok" : "FAILED", during - before, after - during, again - after, first == later ? "yes" : "no");
  return ok ? 0 : 1;
}
