// The batched replay of a graph (see the header).
#include "transform/batching.h"

#include <algorithm>

#include "core/error_format.h"
#include "ops/common/apply.h"
#include "ops/common/rules.h"
#include "ops/control/control.h"
#include "transform/node_inputs.h"

namespace kiln::transform {

namespace {

[[noreturn]] void missing_rule(const ir::Node& node) {
  detail::raise(std::string(ir::primitive_name(node.op)),
                "has no batching rule, so " + node.type.to_string() + " cannot be computed inside vmap", node.where,
                "compute it outside vmap and pass it as an unbatched argument (in_axes std::nullopt)");
}

// A rule that returns the wrong type would corrupt everything downstream;
// the generated tests run every rule through this check.
void check_rule_result(const ir::Node& node, const Array& result, int64_t size) {
  const detail::AbstractValue& got = detail::impl(result)->type;
  Shape expected = node.type.shape;
  expected.insert(expected.begin(), size);
  if (got.shape != expected || got.dtype != node.type.dtype)
    detail::raise(std::string(ir::primitive_name(node.op)),
                  "batching rule returned " + got.to_string() + " for " + node.type.to_string() + " over a batch of " +
                      std::to_string(size) + " (expected " + std::string(dtype_name(node.type.dtype)) +
                      shape_string(expected) + ")",
                  node.where, "this is a bug in kiln's batching rule for the primitive; please report it");
}

}  // namespace

std::vector<Batched> batch_graph(const ir::Graph& graph, std::span<const Batched> arguments,
                                 std::span<const Batched> captures, int64_t size) {
  std::vector<Array> values(graph.nodes.size());
  std::vector<char> batched(graph.nodes.size(), 0);
  auto bind = [&](ir::ValueId id, const Batched& value) {
    values[static_cast<size_t>(id)] = value.value;
    batched[static_cast<size_t>(id)] = value.batched;
  };
  for (size_t k = 0; k < graph.arguments.size(); ++k) bind(graph.arguments[k], arguments[k]);
  for (size_t k = 0; k < graph.captures.size(); ++k) bind(graph.captures[k], captures[k]);
  ops::ControlResults control_results(graph);
  std::vector<Array> inputs;
  std::vector<char> input_batched;
  std::vector<Batched> operands;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& node = graph.nodes[i];
    if (node.op == ir::Primitive::input) continue;
    gather_inputs(node, values, batched, inputs, input_batched);
    bool any = std::any_of(input_batched.begin(), input_batched.end(), [](char b) { return b != 0; });
    batched[i] = any;
    auto id = static_cast<ir::ValueId>(i);
    if (!any || node.op == ir::Primitive::element) {
      values[i] = ops::apply_node(node, id, inputs, control_results);
      continue;
    }
    if (ir::is_control(node.op)) {
      operands.clear();
      for (size_t k = 0; k < inputs.size(); ++k) operands.push_back({inputs[k], input_batched[k] != 0});
      values[i] = control_results.keep(id, batch_control(node, operands, size));
      continue;
    }
    const ops::PrimitiveRules& rules = ops::rules(node.op);
    if (!rules.batch) missing_rule(node);
    detail::LocationScope scope(node.where);
    values[i] = rules.batch(node, inputs, input_batched, size);
    check_rule_result(node, values[i], size);
  }
  std::vector<Batched> outputs;
  for (ir::ValueId id : graph.outputs)
    outputs.push_back({values[static_cast<size_t>(id)], batched[static_cast<size_t>(id)] != 0});
  return outputs;
}

std::vector<char> batched_outputs(const ir::Graph& graph, std::span<const char> arguments,
                                  std::span<const char> captures) {
  std::vector<char> batched(graph.nodes.size(), 0);
  for (size_t k = 0; k < graph.arguments.size(); ++k) batched[static_cast<size_t>(graph.arguments[k])] = arguments[k];
  for (size_t k = 0; k < graph.captures.size(); ++k) batched[static_cast<size_t>(graph.captures[k])] = captures[k];
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (ir::ValueId input : graph.nodes[i].inputs) batched[i] |= batched[static_cast<size_t>(input)];
  std::vector<char> result;
  for (ir::ValueId id : graph.outputs) result.push_back(batched[static_cast<size_t>(id)]);
  return result;
}

}  // namespace kiln::transform
