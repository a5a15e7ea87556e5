// Graph simplification before planning: common subexpressions merged,
// literal-only scalar subgraphs folded, exact algebraic identities applied
// and dead nodes dropped, so the fusion planner sees fewer, simpler nodes.
#pragma once

#include "ir/graph.h"

namespace kiln::transform {

/// Simplifies `graph` in place, repeating until nothing changes (or a small
/// bound on rounds is reached):
///  - merges nodes with equal primitive, type, attributes (literal values
///    included, compared bit for bit) and inputs, keeping the first one;
///  - folds nodes whose inputs are all literals and whose result is 0-d into
///    a literal (the folded node's source line and weak flag kept), using the
///    primitive's reference kernel; larger results are never baked in;
///  - applies identities that are exact for every input, including -0.0 and
///    NaN: x*1, 1*x, x/1, neg(neg(x)), same-type convert, reshape, broadcast
///    or identity transpose, reshape of reshape, transpose of transpose, a
///    transpose moving only axes of extent 1 or a broadcast adding only
///    such axes (a reshape, except of a literal),
///    broadcast of broadcast; x - (+0.0), x + (-0.0) and (-0.0) + x (a float
///    x + 0.0 is kept: it turns -0.0 into +0.0), and for integers and bool
///    x + 0 and 0 + x as well. A literal operand is a literal node or a
///    broadcast of one;
///  - moves a take, slice or dynamic_slice that keeps fewer elements before
///    the elementwise node it alone reads, when that node computes each
///    element exactly (no vector math, no f16): op(a, b)[i] = op(a[i], b[i]),
///    with its same-shaped operands gathered alike and a broadcast scalar
///    broadcast to the gathered shape, so only the gathered elements are
///    computed;
///  - removes dead nodes (ir::eliminate_dead_nodes).
/// stop_gradient is kept: autodiff reads it, and kernels pay nothing for it.
///
/// Precondition: `graph` passes transform::verify.
/// Postcondition: it still does; every output keeps its exact type (dtype,
/// shape, weak flag) and values; arguments and captures bind the same input
/// nodes (renumbered); nodes stay in topological order. Two outputs may now
/// name one value, and an output may be an input or a literal node.
/// Deterministic: the result depends only on the graph, never on addresses.
void simplify(ir::Graph& graph);

}  // namespace kiln::transform
