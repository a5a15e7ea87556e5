// The IR verifier: SSA order, arity, and every node's type against its
// primitive's shape/dtype rule.
#pragma once

#include "ir/graph.h"

namespace kiln::transform {

/// Throws std::logic_error describing the first violation (a kiln bug, never
/// a user error).
void verify(const ir::Graph& graph);

}  // namespace kiln::transform
