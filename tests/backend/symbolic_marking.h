// Symbolic graphs made by hand, for tests and benchmarks of backends that
// run one executable at every size: a function traced at sizes chosen to be
// recognizable (37 for s0, 41 for s1, ...), then every number equal to one
// of them, or to a known polynomial of them (74 for 2*s0), marked as the
// polynomial it stands for (ir/symbolic.h).
#pragma once

#include <kiln/kiln.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace kiln::testing {

/// The numbers to mark: each value at the traced sizes and its polynomial.
using SymbolMarks = std::vector<std::pair<int64_t, ir::DimExpr>>;

/// `graph` with its numbers equal to a marked value marked symbolic: the
/// dimensions of every node, integer attributes (but an input's) and shape
/// attributes, and literals equal to a marked value or to its reciprocal
/// (the 1/n of a mean), bodies included. The graph's symbol count is the
/// highest symbol id marked, plus one.
Graph mark_symbols(const Graph& graph, const SymbolMarks& marks);

/// s0 and its multiples by `factors` at s0 = `hint` (37 -> s0, 74 -> 2*s0, ...).
SymbolMarks marks_of_s0(int64_t hint, const std::vector<int64_t>& factors = {1});

}  // namespace kiln::testing
