// Literal lifting: turns chosen literal nodes into implicit inputs so that
// graphs differing only in those numbers (a step counter, a learning rate)
// share one executable.
#pragma once

#include <memory>
#include <vector>

#include "ir/graph.h"

namespace kiln::transform {

struct LiftedGraph {
  std::shared_ptr<const ir::Graph> graph;
  std::vector<Scalar> values;  // the lifted literals' values, in implicit-input order
  std::vector<DType> dtypes;
};

/// `lift[k]` says whether the k-th literal (in the order of
/// Graph::literal_values, bodies included) becomes an input. Lifted literals
/// are appended to the graph's implicit inputs, after its captures; each
/// keeps its source line. Node ids do not change unless a literal inside a
/// body is lifted (its input is then inserted before the nodes).
LiftedGraph lift_literals(const ir::Graph& graph, const std::vector<bool>& lift);

/// 0-d arrays holding `values`, to bind to the lifted inputs.
std::vector<Array> lifted_inputs(const LiftedGraph& lifted);

}  // namespace kiln::transform
