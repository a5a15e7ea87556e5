// Movement primitives: reshape, transpose, broadcast, slice, concatenate,
// pad, reverse — shape rules, reference kernels and public builders
// (reshape, transpose, broadcast_to, expand_dims, squeeze, slice,
// concatenate, stack, pad, flip).
#include "core/dispatch.h"
#include "core/error_format.h"
#include "ops/elementwise.h"
#include "trace/apply.h"

namespace kiln {
namespace ops {
namespace {

AbstractValue infer_broadcast(const Node& node, std::span<const AbstractValue* const> inputs) {
  const AbstractValue& x = *inputs[0];
  const Shape& target = node.attrs.shape;
  bool ok = x.shape.size() <= target.size();
  for (size_t i = 0; ok && i < x.shape.size(); ++i) {
    int64_t extent = x.shape[x.shape.size() - 1 - i];
    ok = extent == 1 || extent == target[target.size() - 1 - i];
  }
  for (int64_t extent : target) ok = ok && extent >= 0;
  if (!ok)
    detail::raise("broadcast_to", "cannot broadcast " + x.to_string() + " to shape " + shape_string(target),
                  node.where, "each trailing dimension must equal the target's or be 1");
  return {x.dtype, x.weak, target};
}

Array evaluate_broadcast(const Node& node, std::span<const Array> inputs) {
  const detail::ArrayImpl& x = *inputs[0].impl();
  Array result = detail::allocate(node.type);
  const Shape& out_shape = node.type.shape;
  size_t rank = out_shape.size();
  size_t offset = rank - x.type.shape.size();
  // Strides of the input per output axis; 0 where the input is stretched.
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = x.type.shape.size(); i-- > 0;) {
    strides[i + offset] = x.type.shape[i] == 1 ? 0 : stride;
    stride *= x.type.shape[i];
  }
  detail::dispatch(x.type.dtype, [&]<class T>() {
    const T* in = x.data<T>();
    T* out = result.impl()->mutable_data<T>();
    std::vector<int64_t> index(rank, 0);
    for (int64_t i = 0, n = node.type.size(); i < n; ++i) {
      int64_t source = 0;
      for (size_t a = 0; a < rank; ++a) source += index[a] * strides[a];
      out[i] = in[source];
      for (size_t a = rank; a-- > 0;) {
        if (++index[a] < out_shape[a]) break;
        index[a] = 0;
      }
    }
  });
  return result;
}

std::string describe_broadcast(const Node& node) { return "shape=" + shape_string(node.attrs.shape); }

}  // namespace

void register_movement_rules(RuleTable& table) {
  table[static_cast<size_t>(Primitive::broadcast)] = {&infer_broadcast, &evaluate_broadcast, &describe_broadcast};
}

}  // namespace ops

Array broadcast_to(const Array& x, Shape shape, Location where) {
  return ops::broadcast_to_shape(x, shape, where);
}

}  // namespace kiln
