// What a pass that walks a graph node by node (forward-mode autodiff,
// batching) hands a node's rule: the values at its inputs and, beside each,
// what the pass tracks per value (a tangent, a batched flag).
#pragma once

#include <vector>

#include "ir/graph.h"
#include "kiln/array.h"

namespace kiln::transform {

template <class Tracked>
void gather_inputs(const ir::Node& node, const std::vector<Array>& values, const std::vector<Tracked>& tracked,
                   std::vector<Array>& inputs, std::vector<Tracked>& tracked_inputs) {
  inputs.clear();
  tracked_inputs.clear();
  for (ir::ValueId input : node.inputs) {
    inputs.push_back(values[static_cast<size_t>(input)]);
    tracked_inputs.push_back(tracked[static_cast<size_t>(input)]);
  }
}

}  // namespace kiln::transform
