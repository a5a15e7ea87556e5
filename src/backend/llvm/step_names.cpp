// Names of plan steps for the timeline (see the header).
#include "backend/llvm/step_names.h"

#include <algorithm>

namespace kiln::llvm_backend {

namespace {

// Enough primitives to recognize a kernel; a long chain's name stays short.
constexpr size_t most_named = 8;

// Literals and their broadcasts are in most kernels and say nothing of what one computes.
bool named(ir::Primitive op) { return op != ir::Primitive::literal && op != ir::Primitive::broadcast; }

std::string kernel_name(const ir::Graph& graph, const Kernel& kernel) {
  std::vector<ir::Primitive> ops;
  for (ir::ValueId id : kernel.region) ops.push_back(graph.nodes[static_cast<size_t>(id)].op);
  if (std::any_of(ops.begin(), ops.end(), named)) std::erase_if(ops, [](ir::Primitive op) { return !named(op); });
  std::string name;
  for (size_t k = 0; k < std::min(ops.size(), most_named); ++k)
    name += (k ? "·" : "") + std::string(ir::primitive_name(ops[k]));
  if (ops.size() > most_named) name += "·… (" + std::to_string(ops.size()) + " operations)";
  return name;
}

}  // namespace

std::vector<std::string> step_names(const ir::Graph& graph, const Plan& plan) {
  std::vector<std::string> names;
  names.reserve(plan.steps.size());
  for (const Step& step : plan.steps) {
    const ir::Node& node = graph.nodes[static_cast<size_t>(step.value)];
    switch (step.kind) {
      case Step::Kind::kernel:
        names.push_back(kernel_name(graph, plan.kernels[static_cast<size_t>(step.kernel)]));
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
