// The min and median of a benchmark's repeated timings, for the benchmarks
// that time whole runs themselves (no Google Benchmark: bench_gpu travels to
// GPU machines without it).
#pragma once

#include <algorithm>
#include <vector>

namespace kiln::bench {

struct Spread {
  double min = 0, median = 0;
};

inline Spread spread(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return {values.front(), values[values.size() / 2]};
}

}  // namespace kiln::bench
