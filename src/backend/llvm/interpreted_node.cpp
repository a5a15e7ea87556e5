// What the interpreted executables share (see the header).
#include "backend/llvm/interpreted_node.h"

#include <algorithm>

#include "ops/common/elementwise_result.h"
#include "ops/common/rules.h"
#include "telemetry/timeline.h"

namespace kiln::llvm_backend {

const ir::Node* single_node(const ir::Graph& graph) {
  if (graph.outputs.size() != 1 || graph.symbols > 0) return nullptr;
  const ir::Node& node = graph.nodes[static_cast<size_t>(graph.outputs[0])];
  for (const ir::Node& other : graph.nodes)
    if (&other != &node && other.op != ir::Primitive::input) return nullptr;
  return &node;
}

const ir::Node* interpretable_reduction_input(const ir::Graph& graph, const ir::Node& node) {
  const ops::PrimitiveRules& rules = ops::rules(node.op);
  if (rules.fusion != ops::Fusion::reduction ||
      (rules.reduction != ops::Reduction::sum && rules.reduction != ops::Reduction::product))
    return nullptr;
  if (node.inputs.size() != 1 || node.symbolic || node.attrs.ints.empty() ||
      (node.type.dtype != DType::f32 && node.type.dtype != DType::f64))
    return nullptr;
  const ir::Node& input = graph.nodes[static_cast<size_t>(node.inputs[0])];
  if (input.type.dtype != node.type.dtype || input.type.size() > interpreted_elements_limit) return nullptr;
  return &input;
}

namespace {
std::vector<const ir::Node*> arguments_read(const ir::Graph& graph, const ir::Node& node) {
  std::vector<const ir::Node*> arguments;
  for (ir::ValueId input : node.inputs) arguments.push_back(&graph.nodes[static_cast<size_t>(input)]);
  return arguments;
}
}  // namespace

InterpretedNode::InterpretedNode(std::shared_ptr<const ir::Graph> graph, const ir::Node& node)
    : InterpretedNode(graph, node, arguments_read(*graph, node), std::string(ir::primitive_name(node.op))) {}

std::vector<Array> InterpretedNode::run(std::span<const Array> arguments, std::span<const Array> implicit_inputs,
                                        std::span<const char> donated) const {
  std::vector<const detail::ArrayImpl*> operands;
  int64_t elements = node_.type.size();
  Array result;
  for (const ir::Node* read : operands_) {
    const ir::Node& parameter = *read;
    auto index = static_cast<size_t>(parameter.attrs.ints[0]);
    bool implicit = parameter.attrs.ints[1] != 0;
    const Array& operand = implicit ? implicit_inputs[index] : arguments[index];
    operands.push_back(detail::impl(operand).get());
    elements = std::max(elements, operands.back()->type.size());
    // A donated argument takes the result, as in compiled code: fresh
    // memory is slow to write the first time.
    if (!result.defined() && writes_over_operands() && !implicit && index < donated.size() && donated[index])
      result = ops::writable_over(operand, node_.type);
  }
  if (!result.defined()) result = detail::allocate(node_.type);
  // Named as the compiled kernel's step would be, with what ran it.
  telemetry::timeline::Span span;
  if (telemetry::timeline::recording())
    span.begin("kernel", name_, {{"elements", elements}}, "graph", graph_->name + " (interpreted)");
  compute(operands, *detail::impl(result));
  return {result};
}

}  // namespace kiln::llvm_backend
