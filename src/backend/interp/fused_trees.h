// Trees of elementwise nodes that a first tier runs as one operation: an
// elementwise node read once, by another elementwise node, is computed with
// its reader, and a broadcast along leading axes (a scalar, a bias row) is
// read in place by the nodes reading it, as the optimized code's fused
// kernels do. The tree runs by its interpreted program (the backend composes
// its nodes' programs: Backend::interpret), which needs neither a compile nor
// memory for the values inside the tree; where there is none (a dtype or
// operation the interpreter lacks), its nodes run one at a time.
#pragma once

#include <span>
#include <vector>

#include "backend/interp/interpreter.h"

namespace kiln::interp {

/// Makes trees of `choices` (by node id, as Program takes them): each node
/// with `fusable` set (an elementwise node over operands of its shape, or a
/// broadcast along leading axes, that eager code would run by a compiled or
/// interpreted kernel) is inlined into its tree's root, whose choice then
/// reads the tree's leaves and runs it. A tree node's own choice (its
/// kernel) is what runs it where the tree has no interpreted program.
void fuse_trees(const ir::Graph& graph, std::span<const char> fusable, std::vector<Program::Choice>& choices);

}  // namespace kiln::interp
