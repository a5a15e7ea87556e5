// Dead-node elimination (see the header).
#include "transform/dead_code.h"

namespace kiln::transform {

void eliminate_dead_nodes(ir::Graph& graph) {
  size_t count = graph.nodes.size();
  std::vector<char> live(count, 0);
  for (ir::ValueId id : graph.outputs) live[static_cast<size_t>(id)] = 1;
  for (size_t i = count; i-- > 0;) {
    if (graph.nodes[i].op == ir::Primitive::input) live[i] = 1;
    if (!live[i]) continue;
    for (ir::ValueId input : graph.nodes[i].inputs) live[static_cast<size_t>(input)] = 1;
  }
  bool all_live = true;
  for (char l : live) all_live = all_live && l;
  if (all_live) return;

  std::vector<ir::ValueId> renumbered(count, -1);
  std::vector<ir::Node> kept;
  kept.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    if (!live[i]) continue;
    renumbered[i] = static_cast<ir::ValueId>(kept.size());
    kept.push_back(std::move(graph.nodes[i]));
    for (ir::ValueId& input : kept.back().inputs) input = renumbered[static_cast<size_t>(input)];
  }
  graph.nodes = std::move(kept);
  for (auto* ids : {&graph.arguments, &graph.captures, &graph.outputs})
    for (ir::ValueId& id : *ids) id = renumbered[static_cast<size_t>(id)];
}

}  // namespace kiln::transform
