// Fitting symbolic dimensions: a function traced at several sizes of its
// dynamic dimensions gives graphs that differ only in numbers; each number
// that changes with the sizes becomes the polynomial (or the reciprocal of
// one, as a mean's 1/n) it follows.
//
// The sizes form a grid: the call's own sizes n, and n + d in every subset
// of the symbols (d = +1 or -1 per symbol: a function valid up to a limit is
// probed below it), which determines a polynomial of degree one in each
// symbol (s0*s1 included); then check points further away, where every
// fitted number must still hold. A trace whose structure changes with the
// sizes (a C++ loop over x.shape()[0], a branch on it) or whose numbers
// follow no such polynomial does not fit, and names the node where the
// traces part.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::transform {

/// Where a fit traces: the grid at `hints` with a step per symbol, then the check points.
struct ProbeGrid {
  std::vector<int64_t> hints;                // the call's sizes, one per symbol (each >= 2)
  std::vector<int64_t> steps;                // per symbol: +1 or -1
  std::vector<std::vector<int64_t>> checks;  // further off, at least two
  /// The grid (points()[0] == hints; bit i of a grid point's index moves
  /// symbol i by its step), then the check points.
  std::vector<std::vector<int64_t>> points() const;
};

/// The offsets of the k-th candidate check point, one per symbol, or nothing
/// past the last: each symbol moves by a different amount, so that no two
/// move together and a square or a division shows; candidates alternate
/// above and below the call's sizes, further out as k grows.
std::vector<int64_t> check_offsets(size_t k, size_t symbols);

struct FitResult {
  std::shared_ptr<const ir::Graph> graph;  // the first trace with its symbolic numbers; null when the fit failed
  std::string failure;                     // why not, naming the node
  std::vector<int> culprits;               // the symbols whose change parts the traces
};

/// Fits `traces[p]`, traced at `grid.points()[p]`.
FitResult fit_symbols(const std::vector<const ir::Graph*>& traces, const ProbeGrid& grid);

}  // namespace kiln::transform
