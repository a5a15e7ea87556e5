// Google Benchmark drives the timing; a reporter keeps each repetition so the
// summary can print median and min of the same run side by side, next to the
// median ratio measured in interleaved pairs (see paired_ratios).
#include "harness.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <thread>

extern "C" int openblas_get_num_threads();
extern "C" void openblas_set_num_threads(int);

namespace kiln::bench {

namespace {
// Benchmarks time compiles: a persistent cache left by an earlier run would
// turn them into loads. Unless the environment says otherwise, it is off
// (bench_persistent configures its own); the cache reads this on first use.
[[maybe_unused]] const bool persistent_cache_off = ::setenv("KILN_CACHE", "off", /*overwrite=*/0) == 0;
// Rows time steady states: a jitted call's first calls wait for its
// optimized code rather than run op by op beside a background compile
// (bench_first_call measures the tiers).
[[maybe_unused]] const bool compiles_sync = ::setenv("KILN_COMPILE", "sync", /*overwrite=*/0) == 0;
// Each iteration times its call's work, not its queueing: calls run on the
// calling thread (bench_async measures queued dispatch).
[[maybe_unused]] const bool dispatch_sync = ::setenv("KILN_DISPATCH", "sync", /*overwrite=*/0) == 0;

std::map<std::string, std::vector<double>>& samples() {
  static std::map<std::string, std::vector<double>> values;
  return values;
}

std::map<std::string, std::function<void()>>& bodies() {
  static std::map<std::string, std::function<void()>> values;
  return values;
}

double seconds_per_call(const std::function<void()>& body, int64_t calls) {
  auto start = std::chrono::steady_clock::now();
  for (int64_t k = 0; k < calls; ++k) body();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / static_cast<double>(calls);
}

// This machine's speed drifts over seconds (shared hosts), which skews a
// ratio of two timings taken one after the other. So each ratio is also
// measured in pairs, as a check: rounds of ~20 ms of one workload right next
// to ~20 ms of the other, in alternating order, one ratio per round. Each
// half starts after a pause, then one untimed call: thread pools that spin
// after their work (OpenBLAS's workers spin for up to 2^28 cycles, libgomp's
// for a while) must be asleep again, or they would slow down what runs next.
std::vector<double> paired_ratios(const std::string& ours, const std::string& theirs) {
  constexpr int rounds = 15;
  constexpr double round_seconds = 0.02;
  auto calls = [&](const std::string& name) {
    return std::max<int64_t>(1, static_cast<int64_t>(round_seconds / timing(name).median_seconds));
  };
  auto measure = [&](const std::string& name, int64_t count) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    bodies()[name]();
    return seconds_per_call(bodies()[name], count);
  };
  int64_t ours_calls = calls(ours), theirs_calls = calls(theirs);
  std::vector<double> ratios;
  for (int round = 0; round < rounds; ++round) {
    double a, b;
    if (round % 2 == 0) {
      a = measure(ours, ours_calls);
      b = measure(theirs, theirs_calls);
    } else {
      b = measure(theirs, theirs_calls);
      a = measure(ours, ours_calls);
    }
    ratios.push_back(a / b);
  }
  std::sort(ratios.begin(), ratios.end());
  return ratios;
}

class Collector : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs)
      if (run.run_type == Run::RT_Iteration && run.iterations > 0)
        samples()[run.run_name.function_name].push_back(run.real_accumulated_time /
                                                        static_cast<double>(run.iterations));
    ConsoleReporter::ReportRuns(runs);
  }
};
}  // namespace

void add(const std::string& name, std::function<void()> body) {
  bodies()[name] = body;
  benchmark::RegisterBenchmark(name.c_str(),
                               [body](benchmark::State& state) {
                                 for (auto _ : state) body();
                               })
      ->Repetitions(7)
      ->MinTime(0.05)
      ->UseRealTime();
}

void run_all(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  benchmark::Shutdown();
}

bool ran(const std::string& name) { return samples().count(name) && !samples()[name].empty(); }

Timing timing(const std::string& name) {
  if (!ran(name)) throw std::runtime_error("benchmark '" + name + "' did not run");
  std::vector<double> values = samples()[name];
  std::sort(values.begin(), values.end());
  return {values.front(), values[values.size() / 2]};
}

void compare(const std::string& label, const std::string& ours, const std::string& theirs, double max_time_ratio,
             const std::string& goal_text) {
  if (!ran(ours) || !ran(theirs)) return;
  Timing a = timing(ours), b = timing(theirs);
  double median_ratio = a.median_seconds / b.median_seconds, min_ratio = a.min_seconds / b.min_seconds;
  std::vector<double> pairs = paired_ratios(ours, theirs);
  std::printf(
      "%-56s %10.3f us vs %10.3f us  time ratio median %.3f (min %.3f; in pairs median %.3f)  goal <= %.3f (%s)  %s\n",
      label.c_str(), a.median_seconds * 1e6, b.median_seconds * 1e6, median_ratio, min_ratio, pairs[pairs.size() / 2],
      max_time_ratio, goal_text.c_str(), median_ratio <= max_time_ratio ? "MET" : "NOT MET");
}

void absolute(const std::string& label, double seconds_min, double seconds_median, double goal_seconds,
              const std::string& unit) {
  std::printf("%-58s median %.3f us (min %.3f us) per %s  goal <= %.3f us  %s\n", label.c_str(), seconds_median * 1e6,
              seconds_min * 1e6, unit.c_str(), goal_seconds * 1e6, seconds_median <= goal_seconds ? "MET" : "NOT MET");
}

OpenBlasThreads::OpenBlasThreads(int threads) : previous_(openblas_get_num_threads()) {
  openblas_set_num_threads(threads);
}
OpenBlasThreads::~OpenBlasThreads() { openblas_set_num_threads(previous_); }

// Workers wait for a new generation number, run their slice and count down;
// both sides spin (yielding), as kiln's pool polls between kernels.
struct HandLoopPool::State {
  int threads = 1;
  std::vector<std::thread> workers;
  std::atomic<uint64_t> generation{0};
  std::atomic<int> remaining{0};
  std::atomic<bool> stop{false};
  int64_t n = 0;
  const std::function<void(int64_t, int64_t)>* body = nullptr;
};

HandLoopPool::HandLoopPool(int threads) : state_(new State) {
  state_->threads = std::max(1, threads);
  for (int t = 1; t < state_->threads; ++t)
    state_->workers.emplace_back([state = state_, t] {
      uint64_t seen = 0;
      for (;;) {
        uint64_t now = state->generation.load(std::memory_order_acquire);
        while (now == seen && !state->stop.load(std::memory_order_relaxed)) {
          std::this_thread::yield();
          now = state->generation.load(std::memory_order_acquire);
        }
        if (state->stop.load()) return;
        seen = now;
        int64_t n = state->n;
        (*state->body)(n * t / state->threads, n * (t + 1) / state->threads);
        state->remaining.fetch_sub(1, std::memory_order_acq_rel);
      }
    });
}

HandLoopPool::~HandLoopPool() {
  state_->stop.store(true);
  for (std::thread& worker : state_->workers) worker.join();
  delete state_;
}

void HandLoopPool::run(int64_t n, const std::function<void(int64_t, int64_t)>& body) {
  if (state_->threads == 1) return body(0, n);
  state_->n = n;
  state_->body = &body;
  state_->remaining.store(state_->threads - 1, std::memory_order_relaxed);
  state_->generation.fetch_add(1, std::memory_order_acq_rel);
  body(0, n / state_->threads);
  while (state_->remaining.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

}  // namespace kiln::bench
