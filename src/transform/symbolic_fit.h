// Fitting symbolic dimensions: a function traced at several sizes of its
// dynamic dimensions gives graphs that differ only in numbers; each number
// that changes with the sizes becomes the polynomial (or the reciprocal of
// one, as a mean's 1/n) it follows.
//
// The sizes form a grid: the call's own sizes n, and n + 1 in every subset
// of the symbols, which determines a polynomial of degree one in each symbol
// (s0*s1 included); then check points further away, where every fitted
// number must still hold. A trace whose structure changes with the sizes (a
// C++ loop over x.shape()[0], a branch on it) or whose numbers follow no such
// polynomial does not fit, and names the node where the traces part.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::transform {

/// The sizes to trace at for `hints` (one per symbol, each >= 2): the grid
/// first (probe_points(h)[0] == h), then the check points.
std::vector<std::vector<int64_t>> probe_points(const std::vector<int64_t>& hints);

struct FitResult {
  std::shared_ptr<const ir::Graph> graph;  // the first trace with its symbolic numbers; null when the fit failed
  std::string failure;                     // why not, naming the node
  std::vector<int> culprits;               // the symbols whose change parts the traces
};

/// Fits `traces[p]`, traced at `probe_points(hints)[p]`.
FitResult fit_symbols(const std::vector<const ir::Graph*>& traces, const std::vector<int64_t>& hints);

}  // namespace kiln::transform
