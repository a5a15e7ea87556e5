// Shared batching helpers (see the header).
#include "ops/common/batching.h"

#include "kiln/ops.h"
#include "ops/common/apply.h"

namespace kiln::ops {

Array with_batch_axis(const Array& x, bool batched, int64_t size) {
  if (batched) return x;
  Shape shape = detail::impl(x)->type.shape;
  shape.insert(shape.begin(), size);
  return broadcast_to(x, std::move(shape));
}

Array apply_node_to(const Node& node, std::span<const Array> inputs) {
  return detail::apply(node.op, inputs, node.attrs, node.where);
}

Array apply_node_to(const Node& node, std::span<const Array> inputs, std::vector<int64_t> ints) {
  ir::Attributes attrs = node.attrs;
  attrs.ints = std::move(ints);
  return detail::apply(node.op, inputs, std::move(attrs), node.where);
}

std::vector<int64_t> shifted_axes(std::span<const int64_t> axes) {
  std::vector<int64_t> result;
  result.reserve(axes.size());
  for (int64_t axis : axes) result.push_back(axis + 1);
  return result;
}

namespace {
std::vector<Array> all_batched(std::span<const Array> inputs, std::span<const char> batched, int64_t size) {
  std::vector<Array> result;
  result.reserve(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) result.push_back(with_batch_axis(inputs[k], batched[k], size));
  return result;
}
}  // namespace

Array batch_elementwise(const Node& node, std::span<const Array> inputs, std::span<const char> batched, int64_t size) {
  return apply_node_to(node, all_batched(inputs, batched, size));
}

Array batch_shifting_first_int(const Node& node, std::span<const Array> inputs, std::span<const char> batched,
                               int64_t size) {
  std::vector<int64_t> ints = node.attrs.ints;
  ints[0] += 1;
  return apply_node_to(node, all_batched(inputs, batched, size), std::move(ints));
}

Array batch_lane_by_lane(const Node& node, std::span<const Array> inputs, std::span<const char> batched, int64_t size) {
  std::vector<Array> lanes;
  lanes.reserve(static_cast<size_t>(size));
  std::vector<Array> operands(inputs.begin(), inputs.end());
  for (int64_t lane = 0; lane < size; ++lane) {
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (!batched[k]) continue;
      const Shape& shape = detail::impl(inputs[k])->type.shape;
      std::vector<int64_t> start(shape.size(), 0), stop(shape.begin(), shape.end());
      start[0] = lane;
      stop[0] = lane + 1;
      operands[k] = squeeze(slice(inputs[k], start, stop), Axes{0});
    }
    lanes.push_back(apply_node_to(node, operands));
  }
  if (lanes.empty()) {
    Shape shape = node.type.shape;
    shape.insert(shape.begin(), 0);
    return broadcast_to(detail::literal(0, node.type.dtype, node.type.weak, node.where), shape);
  }
  return stack(lanes, 0);
}

}  // namespace kiln::ops
