// Graphviz DOT for the IR (see the header).
#include "ops/common/graph_dot.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "core/error_format.h"
#include "ir/symbolic.h"

namespace kiln::ops {

namespace {

// DOT's quoted strings: backslash and quote escaped, line breaks as \n.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string node_label(const ir::Graph& graph, size_t id) {
  const ir::Node& node = graph.nodes[id];
  std::string label = "%" + std::to_string(id) + " " + std::string(ir::primitive_name(node.op));
  label += "\n" + ir::symbolic_type_string(node);
  if (node.where.line() > 0) label += "\n" + detail::location_string(node.where);
  return label;
}

}  // namespace

std::string graph_dot(const ir::Graph& graph, const DotOptions& options) {
  const size_t count = graph.nodes.size();
  auto group_of = [&](size_t id) { return id < options.groups.size() ? options.groups[id] : -1; };
  std::map<int32_t, std::vector<ir::ValueId>> members;
  for (size_t id = 0; id < count; ++id)
    if (group_of(id) >= 0) members[group_of(id)].push_back(static_cast<ir::ValueId>(id));
  const bool collapse = count > options.collapse_above && !members.empty();
  std::vector<char> is_output(count, 0), is_argument(count, 0);
  for (ir::ValueId id : graph.outputs) is_output[static_cast<size_t>(id)] = 1;
  for (ir::ValueId id : graph.arguments) is_argument[static_cast<size_t>(id)] = 1;
  for (ir::ValueId id : graph.captures) is_argument[static_cast<size_t>(id)] = 1;

  // A collapsed group is one box named after its kernel; every node inside maps to it.
  auto box = [&](size_t id) {
    return collapse && group_of(id) >= 0 ? "k" + std::to_string(group_of(id)) : "n" + std::to_string(id);
  };
  std::ostringstream out;
  out << "digraph " << quoted(graph.name.empty() ? "graph" : graph.name) << " {\n"
      << "  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=\"Helvetica\", "
         "fontsize=10];\n  edge [color=\"#555555\"];\n";
  auto node_line = [&](size_t id, const std::string& indent) {
    std::string fill = is_argument[id] ? "#dbeafe" : is_output[id] ? "#dcfce7" : "white";
    out << indent << box(id) << " [label=" << quoted(node_label(graph, id)) << ", fillcolor=\"" << fill << "\"];\n";
  };
  for (size_t id = 0; id < count; ++id)
    if (group_of(id) < 0) node_line(id, "  ");
  for (const auto& [group, ids] : members) {
    std::string title = "kernel " + std::to_string(group) + ": " + fused_name(graph, ids);
    if (collapse) {
      std::string label = title + "\n" + std::to_string(ids.size()) + " nodes, writes " +
                          ir::symbolic_type_string(graph.nodes[static_cast<size_t>(ids.back())]);
      out << "  k" << group << " [label=" << quoted(label) << ", fillcolor=\"#fef3c7\"];\n";
      continue;
    }
    out << "  subgraph cluster_" << group << " {\n    label=" << quoted(title)
        << ";\n    style=\"rounded,filled\";\n    fillcolor=\"#fef9e7\";\n    color=\"#d4a017\";\n";
    for (ir::ValueId id : ids) node_line(static_cast<size_t>(id), "    ");
    out << "  }\n";
  }
  std::set<std::pair<std::string, std::string>> drawn;
  for (size_t id = 0; id < count; ++id)
    for (ir::ValueId input : graph.nodes[id].inputs) {
      std::string from = box(static_cast<size_t>(input)), to = box(id);
      if (from == to || !drawn.insert({from, to}).second) continue;
      out << "  " << from << " -> " << to << ";\n";
    }
  out << "}\n";
  return out.str();
}

}  // namespace kiln::ops

namespace kiln::ops {

std::string fused_name(const ir::Graph& graph, std::span<const ir::ValueId> nodes) {
  constexpr size_t most_named = 8;  // enough to recognize a group; a long chain's name stays short
  auto named = [](ir::Primitive op) { return op != ir::Primitive::literal && op != ir::Primitive::broadcast; };
  std::vector<ir::Primitive> ops;
  for (ir::ValueId id : nodes) ops.push_back(graph.nodes[static_cast<size_t>(id)].op);
  if (std::any_of(ops.begin(), ops.end(), named)) std::erase_if(ops, [&](ir::Primitive op) { return !named(op); });
  std::string name;
  for (size_t k = 0; k < std::min(ops.size(), most_named); ++k)
    name += (k ? "\u00b7" : "") + std::string(ir::primitive_name(ops[k]));
  if (ops.size() > most_named) name += "\u00b7\u2026 (" + std::to_string(ops.size()) + " operations)";
  return name;
}

}  // namespace kiln::ops
