// Loops compiled as loops against loops unrolled by tracing, and against a
// hand-written C++ loop.
//
// 1. An RNN over 10, 100 and 1,000 steps, written with scan and as a C++ loop
//    under jit (unrolled): cold compile time (graph and kernel caches emptied)
//    and run time per step, side by side.
//    Goals: scan's compile flat in the trip count and within 1.5x of the
//    10-step unrolled compile; its run time per step at most 1.2x unrolled's.
// 2. fori_loop over 10^6 iterations of a small body (v = v * 0.5 + 1 on 16
//    floats) against the same body in a hand-written -O3 loop, with and
//    without the compiler's FMA contraction. Goal: 2x.
#include <benchmark/benchmark.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "backend/llvm/kernel_cache.h"
#include "harness.h"

using kiln::Array;

namespace {

constexpr int64_t hidden = 32, inputs = 8;

struct Weights {
  Array w, u, b;
};

Array rnn_step(const Weights& p, const Array& h, const Array& x) {
  return kiln::tanh(kiln::matmul(p.w, h) + kiln::matmul(p.u, x) + p.b);
}

// Both return the last state: an unrolled loop stacking per-step outputs
// would end in one concatenation of `steps` operands, a kernel whose
// compile time grows with it beyond the loop's own.
auto scanned(const Weights& p) {
  return [p](const Array& h0, const Array& xs) {
    auto step = [&p](const Array& h, const Array& x) { return std::pair{rnn_step(p, h, x), std::tuple<>{}}; };
    return kiln::scan(step, h0, xs).first;
  };
}

auto unrolled(const Weights& p, int64_t steps) {
  return [p, steps](const Array& h0, const Array& xs) {
    Array h = h0;
    for (int64_t t = 0; t < steps; ++t)
      h = rnn_step(p, h, kiln::reshape(kiln::slice(xs, {t, 0}, {t + 1, inputs}), {inputs}));
    return h;
  };
}

template <class F>
double cold_compile_seconds(const F& fn, const Array& h0, const Array& xs) {
  kiln::clear_graph_cache();
  kiln::llvm_backend::clear_kernel_cache();
  auto start = std::chrono::steady_clock::now();
  auto compiled = kiln::jit(fn);
  compiled(h0, xs);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

template <class F>
std::pair<double, double> min_and_median(const F& measure, int rounds) {
  std::vector<double> times;
  for (int round = 0; round < rounds; ++round) times.push_back(measure());
  std::sort(times.begin(), times.end());
  return {times.front(), times[times.size() / 2]};
}

// The hand-written body: 16 lanes, one multiply-add each per iteration.
__attribute__((noinline)) void hand_loop(float* v, int64_t iterations) {
  for (int64_t i = 0; i < iterations; ++i)
    for (int k = 0; k < 16; ++k) v[k] = v[k] * 0.5f + 1.0f;
}

// The same loop rounding after the multiply and after the add, as kiln's
// kernels do: the compiler otherwise fuses them into one FMA, whose latency
// (4 cycles against 8) is the whole of the difference.
__attribute__((noinline, optimize("fp-contract=off"))) void hand_loop_two_roundings(float* v, int64_t iterations) {
  for (int64_t i = 0; i < iterations; ++i)
    for (int k = 0; k < 16; ++k) v[k] = v[k] * 0.5f + 1.0f;
}

}  // namespace

int main(int argc, char** argv) {
  Weights p{kiln::random::normal(kiln::random::key(1), {hidden, hidden}) * 0.2f,
            kiln::random::normal(kiln::random::key(2), {hidden, inputs}) * 0.3f, kiln::zeros({hidden})};
  Array h0 = kiln::zeros({hidden});
  const int64_t lengths[] = {10, 100, 1000};
  for (int64_t steps : lengths) {
    Array xs = kiln::random::normal(kiln::random::key(3), {steps, inputs});
    auto scan_fn = kiln::jit(scanned(p));
    auto unrolled_fn = kiln::jit(unrolled(p, steps));
    std::string n = std::to_string(steps);
    kiln::bench::add("rnn " + n + " scan", [=]() mutable { scan_fn(h0, xs); });
    kiln::bench::add("rnn " + n + " unrolled", [=]() mutable { unrolled_fn(h0, xs); });
  }
  Array v0 = kiln::zeros({16});
  auto loop = kiln::jit([](const Array& v) {
    return kiln::fori_loop(
        0, 1000000, [](const Array&, const Array& x) { return x * 0.5f + 1.0f; }, v);
  });
  kiln::bench::add("fori_loop 10^6 kiln", [=]() mutable { loop(v0); });
  kiln::bench::add("fori_loop 10^6 hand loop", [] {
    alignas(64) float v[16] = {};
    hand_loop(v, 1000000);
    benchmark::DoNotOptimize(v);
  });
  kiln::bench::add("fori_loop 10^6 hand loop, two roundings", [] {
    alignas(64) float v[16] = {};
    hand_loop_two_roundings(v, 1000000);
    benchmark::DoNotOptimize(v);
  });
  kiln::bench::run_all(argc, argv);

  std::printf("\n== loops compiled as loops (scan) vs unrolled by tracing ==\n");
  double ten_unrolled_compile = 0;
  for (int64_t steps : lengths) {
    Array xs = kiln::random::normal(kiln::random::key(3), {steps, inputs});
    std::string n = std::to_string(steps);
    int rounds = steps >= 1000 ? 3 : 7;
    auto [scan_min, scan_median] = min_and_median([&] { return cold_compile_seconds(scanned(p), h0, xs); }, rounds);
    auto [unrolled_min, unrolled_median] =
        min_and_median([&] { return cold_compile_seconds(unrolled(p, steps), h0, xs); }, rounds);
    if (steps == 10) ten_unrolled_compile = unrolled_median;
    std::printf(
        "rnn %5lld steps  cold compile: scan %8.2f ms (min %8.2f)  unrolled %9.2f ms (min %9.2f)  scan / 10-step "
        "unrolled %.2f  goal <= 1.50  %s\n",
        static_cast<long long>(steps), 1e3 * scan_median, 1e3 * scan_min, 1e3 * unrolled_median, 1e3 * unrolled_min,
        scan_median / ten_unrolled_compile, scan_median <= 1.5 * ten_unrolled_compile ? "MET" : "NOT MET");
    if (kiln::bench::ran("rnn " + n + " scan") && kiln::bench::ran("rnn " + n + " unrolled"))
      kiln::bench::compare("rnn " + n + " steps, run time: scan vs unrolled", "rnn " + n + " scan",
                           "rnn " + n + " unrolled", 1.2, "<= 1.2x unrolled");
  }
  if (kiln::bench::ran("fori_loop 10^6 kiln") && kiln::bench::ran("fori_loop 10^6 hand loop"))
    kiln::bench::compare("fori_loop 10^6 x (v*0.5+1 on f32[16]) vs hand loop (1 thread)", "fori_loop 10^6 kiln",
                         "fori_loop 10^6 hand loop", 2.0, "<= 2x the hand loop");
  if (kiln::bench::ran("fori_loop 10^6 kiln") && kiln::bench::ran("fori_loop 10^6 hand loop, two roundings"))
    kiln::bench::compare("fori_loop 10^6 vs hand loop without FMA contraction (1 thread)", "fori_loop 10^6 kiln",
                         "fori_loop 10^6 hand loop, two roundings", 2.0, "<= 2x the hand loop");
  return 0;
}
