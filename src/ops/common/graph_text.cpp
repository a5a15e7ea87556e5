// Printed IR, one node per line with its attributes (each primitive's
// describe rule) and the user's source line; and the public Graph handle.
#include "ops/common/graph_text.h"

#include <sstream>

#include "core/error_format.h"
#include "kiln/graph.h"
#include "ops/common/rules.h"

namespace kiln::ops {

namespace {

// A symbolic node's attributes print with their symbolic entries as
// polynomials (the hints they hold would make the text, a persistent cache
// key, depend on the size the graph was traced at).
std::string describe_node(const ir::Node& node) {
  auto describe = rules(node.op).describe;
  if (!describe) return "";
  if (!node.symbolic) return describe(node);
  const ir::SymbolicNode& symbolic = *node.symbolic;
  ir::Node masked = node;
  std::string where;
  for (const auto& [index, expr] : symbolic.ints) {
    masked.attrs.ints[static_cast<size_t>(index)] = 0;
    where += " ints[" + std::to_string(index) + "]=" + expr.to_string();
  }
  for (const auto& [index, expr] : symbolic.attr_shape) {
    masked.attrs.shape[static_cast<size_t>(index)] = 0;
    where += " shape[" + std::to_string(index) + "]=" + expr.to_string();
  }
  if (symbolic.literal) return symbolic.literal->to_string();
  std::string text = describe(masked);
  return where.empty() ? text : text + " where" + where;
}

// A control node's bodies print under it, indented one level further.
void append_graph(std::ostringstream& out, const ir::Graph& graph, const std::string& indent, bool sources) {
  const std::vector<ir::Node>& nodes = graph.nodes;
  auto signature = [&](const std::vector<ir::ValueId>& ids) {
    for (size_t i = 0; i < ids.size(); ++i)
      out << (i ? ", " : "") << "%" << ids[i] << ": " << ir::symbolic_type_string(nodes[static_cast<size_t>(ids[i])]);
  };
  out << indent << "graph " << (sources ? graph.name : "") << "(";
  signature(graph.arguments);
  out << ")";
  if (!graph.captures.empty()) {
    out << " captures(";
    signature(graph.captures);
    out << ")";
  }
  out << " {\n";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ir::Node& node = nodes[i];
    std::ostringstream line;
    line << indent << "  %" << i << " = " << ir::primitive_name(node.op);
    std::string text = describe_node(node);
    if (!text.empty())
      line << (node.op == Primitive::literal || node.op == Primitive::input ? " " : "[") << text
           << (node.op == Primitive::literal || node.op == Primitive::input ? "" : "]");
    for (ir::ValueId input : node.inputs) line << " %" << input;
    line << " : " << ir::symbolic_type_string(node);
    text = line.str();
    if (sources) {
      const size_t comment_column = 48 + indent.size();
      if (text.size() < comment_column) text.append(comment_column - text.size(), ' ');
      text += "  # " + detail::location_string(node.where);
    }
    out << text << "\n";
    for (const auto& body : node.bodies) append_graph(out, *body, indent + "    ", sources);
  }
  out << indent << "  return";
  for (size_t i = 0; i < graph.outputs.size(); ++i) out << (i ? ", %" : " %") << graph.outputs[i];
  out << "\n" << indent << "}\n";
}

}  // namespace

std::string graph_text(const ir::Graph& graph, bool sources) {
  std::ostringstream out;
  append_graph(out, graph, "", sources);
  return out.str();
}

}  // namespace kiln::ops

namespace kiln {

std::string Graph::to_string() const { return ops::graph_text(*graph_); }
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
