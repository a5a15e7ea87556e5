// Graph::to_dot: here rather than beside Graph::to_string, because the
// clusters are the kernels the chosen backend fuses.
#include "cache/backend_choice.h"
#include "kiln/graph.h"
#include "ops/common/graph_dot.h"

namespace kiln {

std::string Graph::to_dot() const {
  runtime::FusedView view = cache::default_backend().fused_view(graph_);
  return ops::graph_dot(*view.graph, {.groups = view.groups});
}

}  // namespace kiln
