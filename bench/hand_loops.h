// Hand-written reference loops, compiled -O3 -march=native -ffast-math so
// glibc's vector math is used: what a careful C++ programmer would write.
#pragma once

#include <cstdint>

namespace kiln::bench {

/// y = tanh(a*x + b) * sigmoid(x) - 0.5*x*x over [begin, end).
void w1_hand_loop(const float* x, float* y, float a, float b, int64_t begin, int64_t end);
/// Row sums of a rows x columns matrix over rows [begin, end).
void row_sums_hand_loop(const float* x, float* y, int64_t columns, int64_t begin, int64_t end);

}  // namespace kiln::bench
