// The IR verifier: SSA order, arity, and every node's type against its
// primitive's shape/dtype rule.
#pragma once

#include "ir/graph.h"

namespace kiln::transform {

/// Throws std::logic_error describing the first violation (a kiln bug, never
/// a user error).
void verify(const ir::Graph& graph);

/// Verifies the result of `transform` in builds configured with KILN_VERIFY
/// (the test build, scripts/test.sh), naming the transform in the failure;
/// elsewhere it costs nothing. A malformed graph then fails where it was
/// made instead of miscompiling later.
void verify_after(const char* transform, const ir::Graph& graph);

}  // namespace kiln::transform
