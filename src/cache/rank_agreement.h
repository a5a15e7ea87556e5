// Before a jitted graph with collectives first runs, the ranks of an MPI
// world compare it: ranks running different graphs would pair unrelated
// collectives and hang. A rank-dependent C++ number, another shape or
// another branch taken in C++ makes the graphs differ; every rank then
// raises kiln::Error naming the function, the ranks and the first line of
// the graph where they differ (with its source line).
#pragma once

#include <string>

#include "ir/graph.h"

namespace kiln::cache {

/// Whether `graph` (or a body inside it) communicates.
bool has_collectives(const ir::Graph& graph);
/// Compares `graph` across ranks when the world has several; throws
/// kiln::Error on every rank when they differ. Every rank must call it at the
/// same point of its program (as each reaches a new jit entry).
void check_ranks_agree(const std::string& function, const ir::Graph& graph, Location where);

}  // namespace kiln::cache
