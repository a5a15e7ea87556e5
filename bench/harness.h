// Side-by-side measurement on top of Google Benchmark: every workload runs
// with repetitions in one process, and the report prints min and median per
// call plus each ratio next to its goal.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln::bench {

struct Timing {
  double min_seconds = 0;     // per call, best repetition
  double median_seconds = 0;  // per call, median repetition
};

/// Registers `body` (one call per iteration) under `name`.
void add(const std::string& name, std::function<void()> body);
/// Runs everything registered (respecting --benchmark_filter etc.).
void run_all(int argc, char** argv);
/// The timing of a registered workload after run_all; throws if it did not run.
Timing timing(const std::string& name);
bool ran(const std::string& name);

/// Prints both median times, the ours/theirs ratio of the medians and of the
/// mins, and the median ratio measured in interleaved pairs, next to the
/// goal: `max_time_ratio` is the largest acceptable ratio of the medians.
void compare(const std::string& label, const std::string& ours, const std::string& theirs, double max_time_ratio,
             const std::string& goal_text);
/// kiln sets OpenBLAS to one thread process-wide (its pool splits products
/// itself), and Debian's libtorch calls that same OpenBLAS: a peer's row holds
/// one of these while it runs so its products get the threads the row names.
/// Switching costs nanoseconds (measured 7 ns a pair).
class OpenBlasThreads {
 public:
  explicit OpenBlasThreads(int threads);
  ~OpenBlasThreads();
  OpenBlasThreads(const OpenBlasThreads&) = delete;
  OpenBlasThreads& operator=(const OpenBlasThreads&) = delete;

 private:
  int previous_;
};

/// A fixed set of worker threads made once, for the hand-written loops of
/// "all threads" rows: spawning threads per call would charge the peer
/// tens of microseconds kiln's own pool does not pay.
class HandLoopPool {
 public:
  explicit HandLoopPool(int threads);
  ~HandLoopPool();
  HandLoopPool(const HandLoopPool&) = delete;
  HandLoopPool& operator=(const HandLoopPool&) = delete;
  /// Runs body(begin, end) over [0, n) in one slice per thread; returns when all are done.
  void run(int64_t n, const std::function<void(int64_t, int64_t)>& body);

 private:
  struct State;
  State* state_;
};

/// Prints an absolute figure against an absolute goal (seconds per unit).
void absolute(const std::string& label, double seconds_min, double seconds_median, double goal_seconds,
              const std::string& unit);

}  // namespace kiln::bench
