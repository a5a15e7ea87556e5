// Derivatives of loops and branches: new control nodes over transformed
// bodies, traced like user code, so they compile, cache and differentiate
// again like everything else.
//   forward mode: while_loop, cond and scan carry tangents beside their values;
//   reverse mode: cond runs the pullback of the branch taken; scan runs a
//   reverse scan over the carries it saved at every step (replay_scan);
//   a while_loop, whose trip count is unknown until it runs, has none.
#pragma once

#include <span>
#include <vector>

#include "ir/graph.h"

namespace kiln::transform {

struct ControlJvp {
  std::vector<Array> values;    // every result of the node
  std::vector<Array> tangents;  // one per result; empty for zero or no derivative
};

/// A control node's results and their tangents, given its operands and
/// theirs (empty for zero).
ControlJvp control_jvp(const ir::Node& node, std::span<const Array> operands, std::span<const Array> tangents);

/// A scan replayed so that it also returns its input carries at every step,
/// stacked (the residuals of its reverse pass). `results` gets every result
/// of the node, `residuals` one stacked array per carry.
void replay_scan(const ir::Node& node, std::span<const Array> operands, std::vector<Array>& results,
                 std::vector<Array>& residuals);

/// The cotangent of each operand (empty where none flows) given one per
/// result (empty for zero); `residuals` are replay_scan's for a scan.
std::vector<Array> control_vjp(const ir::Node& node, std::span<const Array> operands,
                               std::span<const Array> result_cotangents, std::span<const Array> residuals);

}  // namespace kiln::transform
