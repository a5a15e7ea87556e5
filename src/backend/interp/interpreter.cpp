// Node-by-node execution with the reference kernels; values are released
// after their last use so long graphs do not hold every intermediate.
#include "backend/interp/interpreter.h"

#include "core/error_format.h"
#include "kiln/graph.h"
#include "ops/rules.h"
#include "runtime/executable.h"

namespace kiln::interp {

using runtime::bind_inputs;

std::vector<Array> run(const ir::Graph& graph, std::span<const Array> arguments, std::span<const Array> captures) {
  // Unprepared runs fold nothing: the oracle evaluates every node as written.
  size_t count = graph.nodes.size();
  std::vector<Array> values(count);
  bind_inputs(values, graph, graph.arguments, arguments, "arguments");
  bind_inputs(values, graph, graph.captures, captures, "captures");
  std::vector<size_t> last_use(count, 0);
  for (size_t i = 0; i < count; ++i)
    for (ir::ValueId input : graph.nodes[i].inputs) last_use[static_cast<size_t>(input)] = i;
  for (ir::ValueId output : graph.outputs) last_use[static_cast<size_t>(output)] = count;

  std::vector<Array> inputs;
  for (size_t i = 0; i < count; ++i) {
    const ir::Node& node = graph.nodes[i];
    if (node.op == ir::Primitive::input) continue;
    inputs.clear();
    for (ir::ValueId input : node.inputs) inputs.push_back(values[static_cast<size_t>(input)]);
    values[i] = ops::rules(node.op).evaluate(node, inputs);
    for (ir::ValueId input : node.inputs)
      if (last_use[static_cast<size_t>(input)] == i) values[static_cast<size_t>(input)] = Array();
  }
  std::vector<Array> outputs;
  outputs.reserve(graph.outputs.size());
  for (ir::ValueId output : graph.outputs) outputs.push_back(values[static_cast<size_t>(output)]);
  return outputs;
}

Program::Program(std::shared_ptr<const ir::Graph> graph, Kernel (*choose)(const ir::Node&))
    : graph_(std::move(graph)) {
  // Folding is limited to small values so an executable never holds large
  // arrays derived from literals (e.g. a broadcast to a big shape).
  constexpr int64_t max_folded_elements = 4096;
  size_t count = graph_->nodes.size();
  constants_.resize(count);
  std::vector<Array> inputs;
  for (size_t i = 0; i < count; ++i) {
    const ir::Node& node = graph_->nodes[i];
    if (node.op == ir::Primitive::input) continue;
    bool constant = node.type.size() <= max_folded_elements;
    for (ir::ValueId input : node.inputs) constant = constant && constants_[static_cast<size_t>(input)].defined();
    if (constant) {
      inputs.clear();
      for (ir::ValueId input : node.inputs) inputs.push_back(constants_[static_cast<size_t>(input)]);
      constants_[i] = ops::rules(node.op).evaluate(node, inputs);
    } else {
      schedule_.push_back(static_cast<ir::ValueId>(i));
      Kernel kernel = choose ? choose(node) : nullptr;
      kernels_.push_back(kernel ? kernel : ops::rules(node.op).evaluate);
    }
  }
  last_use_.assign(count, 0);
  for (size_t position = 0; position < schedule_.size(); ++position)
    for (ir::ValueId input : graph_->nodes[static_cast<size_t>(schedule_[position])].inputs)
      last_use_[static_cast<size_t>(input)] = position;
  for (ir::ValueId output : graph_->outputs) last_use_[static_cast<size_t>(output)] = schedule_.size();
}

std::vector<Array> Program::run(std::span<const Array> arguments, std::span<const Array> captures) const {
  const ir::Graph& graph = *graph_;
  std::vector<Array> values(graph.nodes.size());
  bind_inputs(values, graph, graph.arguments, arguments, "arguments");
  bind_inputs(values, graph, graph.captures, captures, "captures");
  constexpr size_t inline_inputs = 8;
  Array small[inline_inputs];
  std::vector<Array> large;
  for (size_t position = 0; position < schedule_.size(); ++position) {
    size_t i = static_cast<size_t>(schedule_[position]);
    const ir::Node& node = graph.nodes[i];
    size_t arity = node.inputs.size();
    Array* inputs = small;
    if (arity > inline_inputs) {
      large.resize(arity);
      inputs = large.data();
    }
    for (size_t k = 0; k < arity; ++k) {
      size_t id = static_cast<size_t>(node.inputs[k]);
      inputs[k] = values[id].defined() ? values[id] : constants_[id];
    }
    values[i] = kernels_[position](node, std::span<const Array>(inputs, arity));
    for (size_t k = 0; k < arity; ++k) {
      inputs[k] = Array();
      size_t id = static_cast<size_t>(node.inputs[k]);
      if (last_use_[id] == position) values[id] = Array();
    }
  }
  std::vector<Array> outputs;
  outputs.reserve(graph.outputs.size());
  for (ir::ValueId output : graph.outputs) {
    size_t id = static_cast<size_t>(output);
    // Folded constants are shared by every run: each caller gets a copy (it may donate it).
    outputs.push_back(values[id].defined() ? values[id] : detail::copy_of(constants_[id]));
  }
  return outputs;
}

}  // namespace kiln::interp

std::vector<kiln::Array> kiln::detail::interpret(const Graph& graph, const std::vector<Array>& arguments,
                                           const std::vector<Array>& captures) {
  return interp::run(graph.ir(), arguments, captures);
}
