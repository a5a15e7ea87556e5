// Literal lifting (see the header).
#include "transform/literal_lifting.h"

#include "core/dispatch.h"
#include "ir/control.h"
#include "transform/verify.h"

namespace kiln::transform {

namespace {

struct Lifting {
  const std::vector<bool>& lift;
  size_t ordinal = 0;
  LiftedGraph& result;
};

ir::Node lifted_input(const ir::Node& literal, size_t capture_index) {
  ir::Node input;
  input.op = ir::Primitive::input;
  input.type = literal.type;
  input.where = literal.where;
  input.attrs.ints = {static_cast<int64_t>(capture_index), ir::lifted_input};
  return input;
}

// Lifts the chosen literals of `graph`, in place where they stand. A literal
// lifted inside a body becomes a capture of that body, which its control node
// passes in from the graph around it — a capture there too, up to the top
// graph, where it is a lifted input bound at every call. Returns, for a body,
// the literals its parent must pass in, in the order of its new captures.
std::vector<ir::Node> lift_within(ir::Graph& graph, Lifting& lifting, bool top) {
  std::vector<ir::Node> passed_in;
  // Inputs added for literals of bodies go first, so they precede their readers;
  // until the renumbering below, value -(k+1) names the k-th of them.
  std::vector<ir::Node> front;
  auto take = [&](const ir::Node& literal) {
    if (top) {
      lifting.result.values.push_back(literal.attrs.scalar);
      lifting.result.dtypes.push_back(literal.type.dtype);
    } else {
      passed_in.push_back(literal);
    }
  };
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    ir::Node& node = graph.nodes[i];
    if (node.op == ir::Primitive::literal) {
      size_t ordinal = lifting.ordinal++;
      if (ordinal >= lifting.lift.size() || !lifting.lift[ordinal]) continue;
      take(node);
      node = lifted_input(node, graph.captures.size());
      graph.captures.push_back(static_cast<ir::ValueId>(i));
      continue;
    }
    if (node.bodies.empty()) continue;
    std::vector<std::vector<ir::ValueId>> segments(node.bodies.size());
    for (size_t b = 0; b < node.bodies.size(); ++b) {
      size_t begin = ir::body_capture_begin(node, b), count = ir::body_capture_count(node, b);
      segments[b].assign(node.inputs.begin() + static_cast<std::ptrdiff_t>(begin),
                         node.inputs.begin() + static_cast<std::ptrdiff_t>(begin + count));
      auto body = std::make_shared<ir::Graph>(*node.bodies[b]);
      for (const ir::Node& literal : lift_within(*body, lifting, false)) {
        take(literal);
        auto placeholder = -static_cast<ir::ValueId>(front.size()) - 1;
        front.push_back(lifted_input(literal, graph.captures.size()));
        graph.captures.push_back(placeholder);
        segments[b].push_back(placeholder);
      }
      node.bodies[b] = std::move(body);
    }
    node.inputs.resize(ir::leading_operand_count(node));
    for (size_t b = 0; b < node.bodies.size(); ++b) {
      node.inputs.insert(node.inputs.end(), segments[b].begin(), segments[b].end());
      node.attrs.ints[node.attrs.ints.size() - node.bodies.size() + b] = static_cast<int64_t>(segments[b].size());
    }
  }
  if (front.empty()) return passed_in;
  auto shift = static_cast<ir::ValueId>(front.size());
  auto renumber = [&](ir::ValueId& id) { id = id >= 0 ? id + shift : -id - 1; };
  for (ir::Node& node : graph.nodes)
    for (ir::ValueId& input : node.inputs) renumber(input);
  for (auto* ids : {&graph.arguments, &graph.captures, &graph.outputs})
    for (ir::ValueId& id : *ids) renumber(id);
  graph.nodes.insert(graph.nodes.begin(), front.begin(), front.end());
  return passed_in;
}

}  // namespace

LiftedGraph lift_literals(const ir::Graph& graph, const std::vector<bool>& lift) {
  auto lifted = std::make_shared<ir::Graph>(graph);
  LiftedGraph result;
  Lifting lifting{lift, 0, result};
  lift_within(*lifted, lifting, true);
  verify_after("literal lifting", *lifted);
  result.graph = std::move(lifted);
  return result;
}

std::vector<Array> lifted_inputs(const LiftedGraph& lifted) {
  std::vector<Array> inputs;
  inputs.reserve(lifted.values.size());
  for (size_t i = 0; i < lifted.values.size(); ++i) {
    Array value = detail::allocate(detail::AbstractValue{lifted.dtypes[i], false, {}});
    detail::dispatch(lifted.dtypes[i], [&]<class T>() {
      T* out = detail::impl(value)->mutable_data<T>();
      if constexpr (detail::is_floating_element<T>) out[0] = static_cast<T>(lifted.values[i].as_double());
      else if constexpr (detail::is_complex_element<T>)
        out[0] = detail::convert_element<T>(lifted.values[i].as_complex());
      else out[0] = static_cast<T>(lifted.values[i].as_int());
    });
    inputs.push_back(std::move(value));
  }
  return inputs;
}

}  // namespace kiln::transform
