// Exits while kiln compiles in the background.
//
// With no argument: a 1,000-operation chain's first call runs op by op,
// prints its result and returns from main with the optimized compile still
// running. The test that runs this checks that it exits at once, cleanly,
// and that the persistent cache got no entry for the abandoned compile
// (KILN_CACHE_DIR names a fresh one).
//
// With `plain MICROSECONDS`: a chain of multiplies and adds on three floats,
// whose first tier compiles nothing, so the background compile is the first
// code generation of the process; main returns that long after the first
// call. Swept over the compile's length, one exit lands while it generates
// code (before the code generator's statics were made on the calling
// thread, that exit crashed in a destroyed LLVM table).
//
// With `queued`: calls of a jitted step of matrix products are queued on the
// dispatch thread and main returns without reading their results, so the
// exit finds the dispatch thread busy. The thread pool is first used after
// the exit hook that drains the queue was registered (an earlier pool was
// destroyed before that drain, and the queued products waited forever for
// its joined workers).
#include <kiln/kiln.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

int long_chain() {
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

int plain_chain(int microseconds) {
  auto chain = kiln::jit(
      [](const kiln::Array& x, const kiln::Array& y) {
        kiln::Array z = x;
        for (int i = 0; i < 400; ++i) z = z * y + x;
        return z;
      },
      {.name = "plain_chain", .compile_mode = kiln::CompileMode::Background});
  kiln::Array x = kiln::array({0.5f, 0.25f, 0.125f}), y = kiln::array({0.75f, 0.5f, 0.25f});
  float first = chain(x, y).to_vector<float>()[0];
  std::this_thread::sleep_for(std::chrono::microseconds(microseconds));
  std::printf("first %.9g\n", first);
  return 0;
}

int queued_steps() {
  auto step = kiln::jit([](const kiln::Array& w, const kiln::Array& x) { return kiln::tanh(kiln::matmul(x, w)); },
                        {.name = "queued_step", .compile_mode = kiln::CompileMode::Sync});
  kiln::Array w = kiln::random::normal(kiln::random::key(1), {256, 256}) * 0.01f,
              x = kiln::random::normal(kiln::random::key(2), {512, 256});
  std::vector<kiln::Array> unread;
  for (int call = 0; call < 40; ++call) unread.push_back(step(w, x));
  std::printf("queued %zu calls\n", unread.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "plain") == 0) return plain_chain(std::atoi(argv[2]));
  if (argc == 2 && std::strcmp(argv[1], "queued") == 0) return queued_steps();
  return long_chain();
}
