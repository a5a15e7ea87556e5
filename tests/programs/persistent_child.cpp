// A program run by the persistent cache tests in fresh processes: three
// jitted functions (a small MLP's loss and gradients, an RNN over a scan, a
// loop compiled whole), whose results it prints exactly (as hex floats) with
// the process's compile and persistent-hit counts.
//   KILN_CACHE_DIR=dir kiln_persistent_child [first | second | both | dynamic LENGTH | lines]
// `lines` also prints the gradients' IR, whose nodes name their source lines.
//
// Built a second time as kiln_persistent_child_moved (KILN_CHILD_MOVED):
// every line further down, in a file of another name, the functions
// renamed. Its keys must be the first program's.
#include <kiln/kiln.h>

#include <cstdio>
#include <string>

#ifdef KILN_CHILD_MOVED
#define CHILD_NAME(name) "moved_" name
#line 5000 "moved_child.cpp"
#else
#define CHILD_NAME(name) name
#endif

using kiln::Array;

namespace {

void print(const char* name, const Array& array) {
  std::printf("%s", name);
  for (float value : array.to_vector<float>()) std::printf(" %a", static_cast<double>(value));
  std::printf("\n");
}

}  // namespace

// Two functions whose first compile in a fresh process gets the same symbol
// names: a process loading both must run each one's own code.
int twins(const std::string& which) {
  Array v = kiln::array({1.0f, 2.0f});
  auto first = [](const Array& x) { return kiln::exp(x) + 1.0f; };
  auto second = [](const Array& x) { return x * x - 7.0f; };
  if (which != "second") print("first", kiln::jit(first, {.name = "first"})(v));
  if (which != "first") print("second", kiln::jit(second, {.name = "second"})(v));
  kiln::CacheStats stats = kiln::global_cache_stats();
  std::printf("process compiles=%lld persistent_hits=%lld\n", static_cast<long long>(stats.compiles),
              static_cast<long long>(stats.persistent_hits));
  return 0;
}

// A function with a dynamic length, called at `length`: a process that
// compiled it at one length saves an executable a later process loads for
// another (the key holds the symbol, not the size).
int dynamic_length(int64_t length) {
  Array weights = kiln::random::normal(kiln::random::key(7), {16, 16}) * 0.25f;
  auto attend = kiln::jit(
      [](const Array& x, const Array& w) {
        Array scores = kiln::matmul(kiln::matmul(x, w), kiln::transpose(x));
        return kiln::matmul(kiln::softmax(scores, -1), x) + kiln::mean(x, 0);
      },
      {.name = "dynamic_length", .dynamic_dims = {{0, 0}}});
  print("attend", attend(kiln::random::normal(kiln::random::key(8), {length, 16}), weights));
  kiln::CacheStats stats = attend.stats();
  std::printf("process compiles=%lld persistent_hits=%lld\n", static_cast<long long>(stats.compiles),
              static_cast<long long>(stats.persistent_hits));
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 2 && std::string(argv[1]) == "dynamic") return dynamic_length(std::stoll(argv[2]));
  bool lines = argc > 1 && std::string(argv[1]) == "lines";
  if (argc > 1 && !lines) return twins(argv[1]);
  Array w1 = kiln::random::normal(kiln::random::key(1), {16, 32}) * 0.2f;
  Array w2 = kiln::random::normal(kiln::random::key(2), {32, 4}) * 0.2f;
  Array x = kiln::random::normal(kiln::random::key(3), {8, 16});
  auto loss = [](const Array& a, const Array& b, const Array& input) {
    return kiln::mean(kiln::square(kiln::matmul(kiln::tanh(kiln::matmul(input, a)), b) - 0.5f));
  };
  auto gradients = kiln::jit(kiln::grad(loss, {0, 1}), {.name = CHILD_NAME("mlp_gradients")});
  auto [g1, g2, unused] = gradients(w1, w2, x);  // a tuple over every argument
  print("g1", g1);
  print("g2", g2);
  if (lines) std::printf("%s", gradients.lower(w1, w2, x).to_string().c_str());

  Array u = kiln::random::normal(kiln::random::key(4), {8, 8}) * 0.3f;
  auto rnn = kiln::jit(
      [&u](const Array& h0, const Array& xs) {
        auto step = [&u](const Array& h, const Array& input) {
          Array next = kiln::tanh(kiln::matmul(u, h) + input);
          return std::pair{next, kiln::sum(next)};
        };
        auto [last, sums] = kiln::scan(step, h0, xs);
        return last + kiln::sum(sums);
      },
      {.name = CHILD_NAME("rnn")});
  print("rnn", rnn(kiln::zeros({8}), kiln::random::normal(kiln::random::key(5), {30, 8})));

  auto decay = kiln::jit(
      [](const Array& v) {
        return kiln::fori_loop(
            0, 1000, [](const Array&, const Array& value) { return value * 0.99f + 0.01f; }, v);
      },
      {.name = CHILD_NAME("decay")});
  print("decay", decay(kiln::array({1.0f, 2.0f, 3.0f, 4.0f})));

  kiln::CacheStats stats = kiln::global_cache_stats();
  std::printf("jitted compiles=%lld persistent_hits=%lld\n",
              static_cast<long long>(gradients.stats().compiles + rnn.stats().compiles + decay.stats().compiles),
              static_cast<long long>(gradients.stats().persistent_hits + rnn.stats().persistent_hits +
                                     decay.stats().persistent_hits));
  std::printf("process compiles=%lld persistent_hits=%lld\n", static_cast<long long>(stats.compiles),
              static_cast<long long>(stats.persistent_hits));
  return 0;
}
