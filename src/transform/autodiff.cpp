// Replay, reverse and forward passes over a Graph (see the header).
#include "transform/autodiff.h"

#include <algorithm>

#include "core/error_format.h"
#include "kiln/ops.h"
#include "ops/common/apply.h"
#include "ops/common/rules.h"
#include "ops/control/control.h"
#include "transform/control_derivatives.h"
#include "transform/node_inputs.h"

namespace kiln::transform {

using detail::AbstractValue;

namespace {

bool carries_derivative(const AbstractValue& type) { return is_floating(type.dtype) || is_complex(type.dtype); }

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
    if (node.op == ir::Primitive::scan) {
      // A scan saves its carries at every step for the reverse pass.
      std::vector<Array> results;
      replay_scan(node, inputs, results, result.residuals[static_cast<ir::ValueId>(i)]);
      result.values[i] = control_results.keep(static_cast<ir::ValueId>(i), std::move(results));
      continue;
    }
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
  // The element nodes of each control node, by result: their cotangents
  // are gathered when the reverse pass reaches the control node.
  std::unordered_map<ir::ValueId, std::vector<ir::ValueId>> elements;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (graph.nodes[i].op == ir::Primitive::element) {
      std::vector<ir::ValueId>& of = elements[graph.nodes[i].inputs[0]];
      auto k = static_cast<size_t>(graph.nodes[i].attrs.ints[0]);
      if (of.size() <= k) of.resize(k + 1, -1);
      of[k] = static_cast<ir::ValueId>(i);
    }
  for (size_t i = graph.nodes.size(); i-- > 0;) {
    const ir::Node& node = graph.nodes[i];
    if (node.op == ir::Primitive::element) continue;
    if (ir::is_control(node.op)) {
      std::vector<Array> result_cotangents(ir::control_result_types(node).size());
      result_cotangents[0] = cotangents[i];
      const std::vector<ir::ValueId>& of = elements[static_cast<ir::ValueId>(i)];
      for (size_t k = 1; k < of.size(); ++k)
        if (of[k] >= 0) result_cotangents[k] = cotangents[static_cast<size_t>(of[k])];
      bool any = false;
      for (const Array& cotangent : result_cotangents) any |= cotangent.defined();
      if (!any) continue;
      inputs.clear();
      for (ir::ValueId input : node.inputs) inputs.push_back(replay.values[static_cast<size_t>(input)]);
      auto saved = replay.residuals.find(static_cast<ir::ValueId>(i));
      std::span<const Array> residuals;
      if (saved != replay.residuals.end()) residuals = saved->second;
      std::vector<Array> contributions = control_vjp(node, inputs, result_cotangents, residuals);
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        size_t id = static_cast<size_t>(node.inputs[k]);
        if (carries_derivative(graph.nodes[id].type)) accumulate(cotangents[id], contributions[k], node.where);
      }
      continue;
    }
    if (!cotangents[i].defined() || node.op == ir::Primitive::input || node.op == ir::Primitive::literal) continue;
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
  ops::ControlResults control_results(graph), control_tangents(graph);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& node = graph.nodes[i];
    if (node.op == ir::Primitive::input) continue;
    gather_inputs(node, values, derivative, inputs, input_tangents);
    bool any = std::any_of(input_tangents.begin(), input_tangents.end(), [](const Array& t) { return t.defined(); });
    if (node.op == ir::Primitive::element) {
      values[i] = control_results.take(node);
      derivative[i] = control_tangents.take(node);
      continue;
    }
    if (ir::is_control(node.op)) {
      // Every control node keeps tangents for its elements, zero ones included.
      ControlJvp results{};
      if (any) results = control_jvp(node, inputs, input_tangents);
      else results.values = ops::apply_control(node, inputs);
      results.tangents.resize(results.values.size());
      values[i] = control_results.keep(static_cast<ir::ValueId>(i), std::move(results.values));
      derivative[i] = control_tangents.keep(static_cast<ir::ValueId>(i), std::move(results.tangents));
      continue;
    }
    values[i] = ops::apply_node(node, static_cast<ir::ValueId>(i), inputs, control_results);
    if (!any || !carries_derivative(node.type)) continue;
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
