// What every backend's executables share.
#include "runtime/executable.h"

#include <string>

#include "core/error_format.h"
#include "ops/common/rules.h"

namespace kiln::runtime {

namespace {
void check_shape_rules(const ir::Graph& graph) {
  std::vector<const ir::AbstractValue*> types;
  for (const ir::Node& node : graph.nodes) {
    for (const auto& body : node.bodies) check_shape_rules(*body);
    if (node.op == ir::Primitive::input) continue;
    types.clear();
    for (ir::ValueId input : node.inputs) types.push_back(&graph.nodes[static_cast<size_t>(input)].type);
    ops::rules(node.op).infer(node, types);
  }
}
}  // namespace

OutputPlan output_plan(const ir::Graph& graph) {
  OutputPlan plan;
  for (ir::ValueId output : graph.outputs) {
    plan.types.push_back(graph.nodes[static_cast<size_t>(output)].type);
    int passed = -1;
    for (size_t k = 0; k < graph.arguments.size(); ++k)
      if (graph.arguments[k] == output) passed = static_cast<int>(k);
    for (size_t k = 0; k < graph.captures.size(); ++k)
      if (graph.captures[k] == output) passed = static_cast<int>(graph.arguments.size() + k);
    plan.passed_inputs.push_back(passed);
  }
  return plan;
}

ir::Graph instantiate_checked(const ir::Graph& graph, std::span<const int64_t> values) {
  ir::Graph concrete = ir::instantiate(graph, values);
  try {
    check_shape_rules(concrete);
  } catch (const Error& error) {
    throw SizesDoNotFit(error.what());
  }
  return concrete;
}

void check_input_count(const ir::Graph& graph, const std::vector<ir::ValueId>& ids, size_t count, const char* what) {
  if (ids.size() != count)
    detail::raise("run",
                  "graph '" + graph.name + "' takes " + std::to_string(ids.size()) + " " + what + ", got " +
                      std::to_string(count),
                  Location::current());
}

void bind_inputs(std::vector<Array>& values, const ir::Graph& graph, const std::vector<ir::ValueId>& ids,
                 std::span<const Array> arrays, const char* what) {
  check_input_count(graph, ids, arrays.size(), what);
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto& expected = graph.nodes[static_cast<size_t>(ids[i])].type;
    const auto& impl = detail::impl_of(arrays[i], "run", Location::current());
    if (impl.trace || impl.type.dtype != expected.dtype || impl.type.shape != expected.shape)
      detail::raise("run",
                    std::string(what) + " " + std::to_string(i) + " of graph '" + graph.name + "' must be a concrete " +
                        expected.to_string() + ", got " + impl.type.to_string(),
                    Location::current());
    values[static_cast<size_t>(ids[i])] = arrays[i];
  }
}

}  // namespace kiln::runtime
