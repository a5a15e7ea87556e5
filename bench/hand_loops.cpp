// Hand-written reference loops (see the header); built with
// -O3 -march=native -ffast-math.
#include "hand_loops.h"

#include <cmath>

namespace kiln::bench {

void w1_hand_loop(const float* x, float* y, float a, float b, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    float v = x[i];
    y[i] = std::tanh(a * v + b) * (1.0f / (1.0f + std::exp(-v))) - 0.5f * v * v;
  }
}

void row_sums_hand_loop(const float* x, float* y, int64_t columns, int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; ++r) {
    float total = 0;
    const float* row = x + r * columns;
    for (int64_t c = 0; c < columns; ++c) total += row[c];
    y[r] = total;
  }
}

}  // namespace kiln::bench
