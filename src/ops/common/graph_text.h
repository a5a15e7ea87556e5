// Printed IR (what `std::cout << graph` shows).
#pragma once

#include <string>

#include "ir/graph.h"

namespace kiln::ops {

/// Human-readable text, one node per line with its source line. Without
/// `sources`, no source line and no graph name: the text of what the graph
/// computes alone (the persistent cache's key hashes it).
std::string graph_text(const ir::Graph& graph, bool sources = true);

}  // namespace kiln::ops
