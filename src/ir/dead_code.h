// Dead-node elimination: drops nodes no output depends on (for example the
// cotangents of arguments nobody asked a gradient for). Inputs always stay,
// so argument and capture binding is unchanged.
#pragma once

#include "ir/graph.h"

namespace kiln::ir {

/// Removes dead nodes in place and renumbers the rest, keeping their order.
void eliminate_dead_nodes(Graph& graph);

}  // namespace kiln::ir
