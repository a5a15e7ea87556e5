// The reference interpreter: runs a Graph node by node with the primitives'
// reference kernels. It is the oracle compiled code is tested against.
#pragma once

#include <span>
#include <vector>

#include "ir/graph.h"

namespace kiln::interp {

/// Runs `graph` on concrete `arguments` and `captures` (in the graph's order).
/// Throws kiln::Error when their number or abstract values do not match.
std::vector<Array> run(const ir::Graph& graph, std::span<const Array> arguments, std::span<const Array> captures);

}  // namespace kiln::interp
