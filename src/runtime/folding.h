// Limits on constant folding: what a graph computes from literals alone is
// evaluated once when it compiles, within these bounds, by every backend.
#pragma once

#include <cstdint>

namespace kiln::runtime {

// Small values only, so an executable never holds large arrays derived from
// literals (e.g. a broadcast to a big shape).
inline constexpr int64_t max_folded_elements = 4096;

// Folding evaluates everything upstream of a folded value once: the elements
// of all of it together stay within this.
inline constexpr int64_t max_folding_work = int64_t{1} << 22;

}  // namespace kiln::runtime
