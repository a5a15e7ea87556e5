// Names of plan steps for the timeline (see the header).
#include "backend/llvm/step_names.h"

#include "ops/common/graph_dot.h"

namespace kiln::llvm_backend {

std::vector<std::string> step_names(const ir::Graph& graph, const Plan& plan) {
  std::vector<std::string> names;
  names.reserve(plan.steps.size());
  for (const Step& step : plan.steps) {
    const ir::Node& node = graph.nodes[static_cast<size_t>(step.value)];
    switch (step.kind) {
      case Step::Kind::kernel:
        names.push_back(ops::fused_name(graph, plan.kernels[static_cast<size_t>(step.kernel)].region));
        break;
      case Step::Kind::reference: names.push_back("reference " + std::string(ir::primitive_name(node.op))); break;
      default: names.emplace_back(ir::primitive_name(node.op)); break;
    }
  }
  return names;
}

std::vector<std::string> row_group_names(const Plan& plan, const std::vector<std::string>& step_names) {
  std::vector<std::string> names;
  for (const RowGroup& group : plan.row_groups) {
    std::string name = "row group";
    const char* separator = ": ";
    for (size_t s = group.first_step; s < group.end_step; ++s) {
      if (plan.steps[s].kind != Step::Kind::kernel) continue;
      name += separator + step_names[s];
      separator = " | ";
    }
    names.push_back(std::move(name));
  }
  return names;
}

}  // namespace kiln::llvm_backend
