// Node-by-node execution with the reference kernels; values are released
// after their last use so long graphs do not hold every intermediate.
#include "backend/interp/interpreter.h"

#include "core/error_format.h"
#include "kiln/graph.h"
#include "ops/rules.h"

namespace kiln::interp {

namespace {
void bind(std::vector<Array>& values, const ir::Graph& graph, const std::vector<ir::ValueId>& ids,
          std::span<const Array> arrays, const char* what) {
  if (ids.size() != arrays.size())
    detail::raise("interpret", "graph '" + graph.name + "' takes " + std::to_string(ids.size()) + " " + what +
                                   ", got " + std::to_string(arrays.size()),
                  Location::current());
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto& expected = graph.nodes[static_cast<size_t>(ids[i])].type;
    const auto& impl = detail::impl_of(arrays[i], "interpret", Location::current());
    if (impl.trace || impl.type.dtype != expected.dtype || impl.type.shape != expected.shape)
      detail::raise("interpret", std::string(what) + " " + std::to_string(i) + " of graph '" + graph.name +
                                     "' must be a concrete " + expected.to_string() + ", got " + impl.type.to_string(),
                    Location::current());
    values[static_cast<size_t>(ids[i])] = arrays[i];
  }
}
}  // namespace

std::vector<Array> run(const ir::Graph& graph, std::span<const Array> arguments, std::span<const Array> captures) {
  size_t count = graph.nodes.size();
  std::vector<Array> values(count);
  bind(values, graph, graph.arguments, arguments, "arguments");
  bind(values, graph, graph.captures, captures, "captures");

  // The last node that reads each value; outputs live to the end.
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

}  // namespace kiln::interp

std::vector<kiln::Array> kiln::detail::interpret(const Graph& graph, const std::vector<Array>& arguments,
                                           const std::vector<Array>& captures) {
  return interp::run(graph.ir(), arguments, captures);
}
