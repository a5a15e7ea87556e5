// Printed IR (what `std::cout << graph` shows).
#pragma once

#include <string>

#include "ir/graph.h"

namespace kiln::ops {

/// Human-readable text, one node per line with its source line.
std::string graph_text(const ir::Graph& graph);

}  // namespace kiln::ops
