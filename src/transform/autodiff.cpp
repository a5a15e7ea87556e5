// Replay, reverse and forward passes over a Graph (see the header).
#include "transform/autodiff.h"

#include "core/error_format.h"
#include "kiln/ops.h"
#include "ops/apply.h"
#include "ops/control.h"
#include "ops/rules.h"

namespace kiln::transform {

using detail::AbstractValue;

namespace {

bool carries_derivative(const AbstractValue& type) { return is_floating(type.dtype); }

// Sums cotangents arriving at one value from several uses.
void accumulate(Array& slot, const Array& contribution, Location where) {
  if (!contribution.defined()) return;
  slot = slot.defined() ? add(Operand(slot, where), Operand(contribution, where)) : contribution;
}

[[noreturn]] void missing_rule(const ir::Node& node, const char* mode) {
  detail::raise(std::string(ir::primitive_name(node.op)),
                std::string("has no ") + mode + " rule, so " + node.type.to_string() + " cannot be differentiated",
                node.where, "wrap the value in stop_gradient if no derivative is needed");
}

// Loops and branches are differentiated by transforming their bodies, which
// this version of kiln does not do yet: say so at the user's line rather than
// return a wrong derivative.
[[noreturn]] void control_flow_derivative(const ir::Graph& graph, const ir::Node& node, const char* mode) {
  const ir::Node& control = node.op == ir::Primitive::element ? graph.nodes[static_cast<size_t>(node.inputs[0])] : node;
  detail::raise(std::string(ir::primitive_name(control.op)),
                std::string(mode) + " derivatives through loops and branches are not available yet, so " +
                    node.type.to_string() + " cannot be differentiated",
                control.where,
                "wrap the values entering the loop or branch in stop_gradient if no derivative should flow "
                "through it, or write a static loop as C++ code");
}

bool is_control_flow(const ir::Node& node) { return ops::rules(node.op).fusion == ops::Fusion::control; }

}  // namespace

std::vector<Array> Replay::outputs() const {
  std::vector<Array> result;
  for (ir::ValueId id : graph->outputs) result.push_back(values[static_cast<size_t>(id)]);
  return result;
}

Replay replay(const ir::Graph& graph, std::span<const Array> arguments, std::span<const Array> captures) {
  Replay result{&graph, std::vector<Array>(graph.nodes.size())};
  for (size_t k = 0; k < graph.arguments.size(); ++k)
    result.values[static_cast<size_t>(graph.arguments[k])] = arguments[k];
  for (size_t k = 0; k < graph.captures.size(); ++k)
    result.values[static_cast<size_t>(graph.captures[k])] = captures[k];
  std::vector<Array> inputs;
  ops::ControlResults control_results(graph);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& node = graph.nodes[i];
    if (node.op == ir::Primitive::input) continue;
    inputs.clear();
    for (ir::ValueId input : node.inputs) inputs.push_back(result.values[static_cast<size_t>(input)]);
    result.values[i] = ops::apply_node(node, static_cast<ir::ValueId>(i), inputs, control_results);
  }
  return result;
}

std::vector<Array> backward(const Replay& replay, std::span<const Array> output_cotangents) {
  const ir::Graph& graph = *replay.graph;
  std::vector<Array> cotangents(graph.nodes.size());
  for (size_t k = 0; k < graph.outputs.size(); ++k) {
    const ir::Node& node = graph.nodes[static_cast<size_t>(graph.outputs[k])];
    if (carries_derivative(node.type))
      accumulate(cotangents[static_cast<size_t>(graph.outputs[k])], output_cotangents[k], node.where);
  }
  std::vector<Array> inputs;
  for (size_t i = graph.nodes.size(); i-- > 0;) {
    const ir::Node& node = graph.nodes[i];
    if (!cotangents[i].defined() || node.op == ir::Primitive::input || node.op == ir::Primitive::literal) continue;
    if (is_control_flow(node)) control_flow_derivative(graph, node, "reverse-mode");
    const ops::PrimitiveRules& rules = ops::rules(node.op);
    if (!rules.vjp) {
      if (rules.no_derivative) continue;
      missing_rule(node, "vjp");
    }
    inputs.clear();
    for (ir::ValueId input : node.inputs) inputs.push_back(replay.values[static_cast<size_t>(input)]);
    // Every operation the rule records names the differentiated node's line.
    detail::LocationScope scope(node.where);
    std::vector<Array> contributions = rules.vjp(node, inputs, replay.values[i], cotangents[i]);
    for (size_t k = 0; k < node.inputs.size() && k < contributions.size(); ++k) {
      size_t id = static_cast<size_t>(node.inputs[k]);
      if (carries_derivative(graph.nodes[id].type)) accumulate(cotangents[id], contributions[k], node.where);
    }
    cotangents[i] = Array();  // no longer needed; frees memory in eager mode
  }
  std::vector<Array> result;
  for (ir::ValueId id : graph.arguments) result.push_back(cotangents[static_cast<size_t>(id)]);
  return result;
}

std::vector<Array> forward(const ir::Graph& graph, std::span<const Array> arguments, std::span<const Array> captures,
                           std::span<const Array> tangents, std::vector<Array>& outputs) {
  std::vector<Array> values(graph.nodes.size()), derivative(graph.nodes.size());
  for (size_t k = 0; k < graph.arguments.size(); ++k) {
    size_t id = static_cast<size_t>(graph.arguments[k]);
    values[id] = arguments[k];
    if (carries_derivative(graph.nodes[id].type)) derivative[id] = tangents[k];
  }
  for (size_t k = 0; k < graph.captures.size(); ++k) values[static_cast<size_t>(graph.captures[k])] = captures[k];
  std::vector<Array> inputs, input_tangents;
  ops::ControlResults control_results(graph);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& node = graph.nodes[i];
    if (node.op == ir::Primitive::input) continue;
    inputs.clear();
    input_tangents.clear();
    bool any = false;
    for (ir::ValueId input : node.inputs) {
      inputs.push_back(values[static_cast<size_t>(input)]);
      input_tangents.push_back(derivative[static_cast<size_t>(input)]);
      any |= input_tangents.back().defined();
    }
    values[i] = ops::apply_node(node, static_cast<ir::ValueId>(i), inputs, control_results);
    if (!any || !carries_derivative(node.type)) continue;
    if (is_control_flow(node)) control_flow_derivative(graph, node, "forward-mode");
    const ops::PrimitiveRules& rules = ops::rules(node.op);
    if (!rules.jvp) {
      if (rules.no_derivative) continue;
      missing_rule(node, "jvp");
    }
    detail::LocationScope scope(node.where);
    derivative[i] = rules.jvp(node, inputs, values[i], input_tangents);
  }
  outputs.clear();
  std::vector<Array> result;
  for (ir::ValueId id : graph.outputs) {
    outputs.push_back(values[static_cast<size_t>(id)]);
    result.push_back(derivative[static_cast<size_t>(id)]);
  }
  return result;
}

}  // namespace kiln::transform
