// Literal lifting (see the header).
#include "transform/literal_lifting.h"

#include "core/dispatch.h"
#include "transform/verify.h"

namespace kiln::transform {

LiftedGraph lift_literals(const ir::Graph& graph, const std::vector<bool>& lift) {
  auto lifted = std::make_shared<ir::Graph>(graph);
  LiftedGraph result;
  size_t ordinal = 0;
  for (size_t i = 0; i < lifted->nodes.size(); ++i) {
    ir::Node& node = lifted->nodes[i];
    if (node.op != ir::Primitive::literal) continue;
    if (ordinal < lift.size() && lift[ordinal]) {
      result.values.push_back(node.attrs.scalar);
      result.dtypes.push_back(node.type.dtype);
      node.op = ir::Primitive::input;
      node.attrs = ir::Attributes{};
      node.attrs.ints = {static_cast<int64_t>(lifted->captures.size()), 2};
      lifted->captures.push_back(static_cast<ir::ValueId>(i));
    }
    ++ordinal;
  }
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
      T* out = value.impl()->mutable_data<T>();
      if constexpr (std::is_floating_point_v<T>) out[0] = static_cast<T>(lifted.values[i].as_double());
      else out[0] = static_cast<T>(lifted.values[i].as_int());
    });
    inputs.push_back(std::move(value));
  }
  return inputs;
}

}  // namespace kiln::transform
