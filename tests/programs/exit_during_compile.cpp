// Exits while kiln compiles in the background: a 1,000-operation chain's
// first call runs op by op, prints its result and returns from main with
// the optimized compile still running. The test that runs this program
// checks that it exits at once, cleanly, and that the persistent cache got
// no entry for the abandoned compile (KILN_CACHE_DIR names a fresh one).
#include <kiln/kiln.h>

#include <cstdio>

int main() {
  auto chain = kiln::jit(
      [](const kiln::Array& x, const kiln::Array& y) {
        kiln::Array z = x;
        for (int i = 0; i < 333; ++i) z = (i % 2 ? kiln::exp(-z * z) : kiln::tanh(z)) * y + x;
        return z;
      },
      {.name = "long_chain", .compile_mode = kiln::CompileMode::Background});
  kiln::Array x = kiln::full({1024}, 0.5f), y = kiln::full({1024}, 0.75f);
  float first = kiln::sum(chain(x, y)).item<float>();
  bool compiling = kiln::global_cache_stats().compile_seconds == 0;  // a finished compile adds its time
  std::printf("first %.9g, %s\n", first, compiling ? "compiling at exit" : "compiled before exit");
  return 0;
}
