// Google Benchmark drives the timing; a reporter keeps each repetition so the
// summary can print min and median of the same run side by side.
#include "harness.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <stdexcept>

namespace kiln::bench {

namespace {
std::map<std::string, std::vector<double>>& samples() {
  static std::map<std::string, std::vector<double>> values;
  return values;
}

class Collector : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs)
      if (run.run_type == Run::RT_Iteration && run.iterations > 0)
        samples()[run.run_name.function_name].push_back(run.real_accumulated_time / static_cast<double>(run.iterations));
    ConsoleReporter::ReportRuns(runs);
  }
};
}  // namespace

void add(const std::string& name, std::function<void()> body) {
  benchmark::RegisterBenchmark(name.c_str(), [body](benchmark::State& state) {
    for (auto _ : state) body();
  })->Repetitions(7)->MinTime(0.05)->UseRealTime();
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
  double median_ratio = a.median_seconds / b.median_seconds;
  double min_ratio = a.min_seconds / b.min_seconds;
  std::printf("%-58s %10.3f us vs %10.3f us  time ratio median %.3f (min %.3f)  goal <= %.3f (%s)  %s\n",
              label.c_str(), a.median_seconds * 1e6, b.median_seconds * 1e6, median_ratio, min_ratio,
              max_time_ratio, goal_text.c_str(), median_ratio <= max_time_ratio ? "MET" : "NOT MET");
}

void absolute(const std::string& label, double seconds_min, double seconds_median, double goal_seconds,
              const std::string& unit) {
  std::printf("%-58s median %.3f us (min %.3f us) per %s  goal <= %.3f us  %s\n", label.c_str(),
              seconds_median * 1e6, seconds_min * 1e6, unit.c_str(), goal_seconds * 1e6,
              seconds_median <= goal_seconds ? "MET" : "NOT MET");
}

}  // namespace kiln::bench
