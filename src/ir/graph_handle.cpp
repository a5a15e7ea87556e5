// The public Graph handle over the IR.
#include "ir/graph.h"
#include "kiln/graph.h"

namespace kiln {

std::string Graph::to_string() const { return graph_->to_string(); }
size_t Graph::num_nodes() const { return graph_->nodes.size(); }
size_t Graph::num_arguments() const { return graph_->arguments.size(); }
size_t Graph::num_captures() const { return graph_->captures.size(); }
uint64_t Graph::structure_hash() const { return graph_->structure_hash(); }
uint64_t Graph::literal_hash() const { return graph_->literal_hash(); }
bool Graph::operator==(const Graph& other) const {
  return graph_->structurally_equal(*other.graph_) && graph_->literal_values() == other.graph_->literal_values();
}
std::ostream& operator<<(std::ostream& out, const Graph& graph) { return out << graph.to_string(); }

}  // namespace kiln
