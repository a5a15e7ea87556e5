// Dead-node elimination (see the header).
#include "ir/dead_code.h"

namespace kiln::ir {

void eliminate_dead_nodes(Graph& graph) {
  size_t count = graph.nodes.size();
  std::vector<char> live(count, 0);
  for (ValueId id : graph.outputs) live[static_cast<size_t>(id)] = 1;
  for (size_t i = count; i-- > 0;) {
    if (graph.nodes[i].op == Primitive::input) live[i] = 1;
    if (!live[i]) continue;
    for (ValueId input : graph.nodes[i].inputs) live[static_cast<size_t>(input)] = 1;
  }
  bool all_live = true;
  for (char l : live) all_live = all_live && l;
  if (all_live) return;

  std::vector<ValueId> renumbered(count, -1);
  std::vector<Node> kept;
  kept.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    if (!live[i]) continue;
    renumbered[i] = static_cast<ValueId>(kept.size());
    kept.push_back(std::move(graph.nodes[i]));
    for (ValueId& input : kept.back().inputs) input = renumbered[static_cast<size_t>(input)];
  }
  graph.nodes = std::move(kept);
  for (auto* ids : {&graph.arguments, &graph.captures, &graph.outputs})
    for (ValueId& id : *ids) id = renumbered[static_cast<size_t>(id)];
}

}  // namespace kiln::ir
