// The IR verifier (see the header).
#include "transform/verify.h"

#include <stdexcept>

#include "core/error_format.h"
#include "ir/control.h"
#include "ops/common/rules.h"

namespace kiln::transform {

using detail::AbstractValue;
using ir::Primitive;

void verify(const ir::Graph& graph) {
  const std::vector<ir::Node>& nodes = graph.nodes;
  auto fail = [&](size_t index, const std::string& what) {
    throw std::logic_error("graph '" + graph.name + "' node %" + std::to_string(index) + ": " + what);
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ir::Node& node = nodes[i];
    std::vector<const AbstractValue*> types;
    for (ir::ValueId input : node.inputs) {
      if (input < 0 || static_cast<size_t>(input) >= i)
        fail(i, "input %" + std::to_string(input) + " is not defined before use");
      types.push_back(&nodes[static_cast<size_t>(input)].type);
    }
    if (node.op == Primitive::input) continue;
    AbstractValue expected;
    try {
      expected = ops::rules(node.op).infer(node, types);
    } catch (const Error& error) {
      fail(i, std::string("rejected by its shape rule: ") + error.what());
    }
    if (!(expected == node.type))
      fail(i, "type " + node.type.to_string() + " but its rule gives " + expected.to_string());
    if (node.op == Primitive::element) {
      const ir::Node& control = nodes[static_cast<size_t>(node.inputs[0])];
      if (!ir::is_control(control.op)) fail(i, "an element of a node that is not control flow");
      std::vector<AbstractValue> results = ir::control_result_types(control);
      auto k = static_cast<size_t>(node.attrs.ints[0]);
      if (k >= results.size() || !(results[k] == node.type))
        fail(i, "element " + std::to_string(k) + " of a control node with " + std::to_string(results.size()) +
                    " results, or of another type");
    }
    if (!node.bodies.empty() && !ir::is_control(node.op)) fail(i, "bodies on a node that is not control flow");
    for (const auto& body : node.bodies) {
      try {
        verify(*body);
      } catch (const std::logic_error& error) {
        fail(i, std::string("in a body: ") + error.what());
      }
    }
  }
  for (ir::ValueId id : graph.arguments)
    if (nodes.at(static_cast<size_t>(id)).op != Primitive::input)
      fail(static_cast<size_t>(id), "argument is not an input node");
  for (ir::ValueId id : graph.captures)
    if (nodes.at(static_cast<size_t>(id)).op != Primitive::input)
      fail(static_cast<size_t>(id), "capture is not an input node");
  for (ir::ValueId id : graph.outputs)
    if (id < 0 || static_cast<size_t>(id) >= nodes.size()) fail(0, "output %" + std::to_string(id) + " is undefined");
}

void verify_after([[maybe_unused]] const char* transform, [[maybe_unused]] const ir::Graph& graph) {
#ifdef KILN_VERIFY
  try {
    verify(graph);
  } catch (const std::logic_error& error) {
    throw std::logic_error(std::string("kiln internal error: the IR verifier rejects the result of ") + transform +
                           ": " + error.what());
  }
#endif
}

}  // namespace kiln::transform
