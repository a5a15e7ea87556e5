// Batching rules of the indexing family (declared in ops/common/batching.h). With
// indices (or starts) the same in every lane, the primitive runs once with
// its axis moved past the batch axis. With indices per lane, the lanes' rows
// along the indexed axis are laid end to end — lane b's row i becomes row
// b * extent + i — and one take or scatter_add reads them: indices are wrapped
// and clamped first, exactly as the primitive would, so no lane reaches
// another's rows.
#include <algorithm>

#include "kiln/ops.h"
#include "ops/common/apply.h"
#include "ops/common/axes.h"
#include "ops/common/batching.h"
#include "ops/common/promotion.h"

namespace kiln::ops {

namespace {

const Shape& shape_of(const Array& x) { return detail::impl(x)->type.shape; }
DType dtype_of(const Array& x) { return detail::impl(x)->type.dtype; }

Array number(int64_t value, DType dtype) { return detail::literal(value, dtype, false, Location::current()); }

/// `index` wrapped once if negative, then clamped into [0, extent).
Array normalized(const Array& index, int64_t extent) {
  DType dtype = dtype_of(index);
  Array wrapped = where(less(index, number(0, dtype)), add(index, number(extent, dtype)), index);
  return clip(wrapped, number(0, dtype), number(std::max<int64_t>(extent - 1, 0), dtype));
}

/// Each lane's indices (batch axis first) moved to that lane's rows: + lane * extent.
Array lane_rows(const Array& indices, int64_t extent, int64_t size) {
  DType dtype = dtype_of(indices);
  Shape lane_shape(shape_of(indices).size(), 1);
  lane_shape[0] = size;
  Array lane = iota(dtype, lane_shape, 0, Location::current());
  return add(normalized(indices, extent), mul(lane, number(extent, dtype)));
}

/// x [B, before..., extent, after...] as [B * extent, before..., after...].
Array rows_end_to_end(const Array& x, int64_t axis) {
  Array moved = moveaxis(x, axis + 1, 1);
  Shape shape = shape_of(moved);
  Shape merged{shape[0] * shape[1]};
  merged.insert(merged.end(), shape.begin() + 2, shape.end());
  return reshape(moved, merged);
}

/// The permutation taking axes [B, first (count_first)..., second (count_second)..., rest...]
/// to [B, second..., first..., rest...].
std::vector<int64_t> swap_groups(int64_t count_first, int64_t count_second, int64_t rank) {
  std::vector<int64_t> permutation{0};
  for (int64_t a = 0; a < count_second; ++a) permutation.push_back(1 + count_first + a);
  for (int64_t a = 0; a < count_first; ++a) permutation.push_back(1 + a);
  for (int64_t a = 1 + count_first + count_second; a < rank; ++a) permutation.push_back(a);
  return permutation;
}

/// take along `axis` (of one lane) with both x and the indices batched.
Array take_per_lane(const Array& x, const Array& indices, int64_t axis, int64_t size) {
  int64_t extent = shape_of(x)[static_cast<size_t>(axis + 1)];
  Array gathered = take(rows_end_to_end(x, axis), lane_rows(indices, extent, size), 0);
  // [B, indices..., before..., after...] -> [B, before..., indices..., after...]
  auto index_rank = static_cast<int64_t>(shape_of(indices).size()) - 1;
  return transpose(gathered, swap_groups(index_rank, axis, static_cast<int64_t>(shape_of(gathered).size())));
}

/// take of a batched or unbatched x with indices per lane.
Array take_lanes(const Array& x, bool x_batched, const Array& indices, int64_t axis, int64_t size) {
  if (x_batched) return take_per_lane(x, indices, axis, size);
  // The indices' batch axis lands where the axis was: move it to the front.
  return moveaxis(take(x, indices, axis), axis, 0);
}

/// A start (0-d, or [B] when batched) wrapped once and clamped so a window of
/// `window` fits in `extent`, as the primitive does.
Array clamped_start(const Array& start, int64_t extent, int64_t window) {
  DType dtype = dtype_of(start);
  Array wrapped = where(less(start, number(0, dtype)), add(start, number(extent, dtype)), start);
  return clip(wrapped, number(0, dtype), number(extent - window, dtype));
}

/// start + [0, count) per lane: [B, count] for a batched start, [count] otherwise.
Array window_indices(const Array& start, bool batched, int64_t count) {
  DType dtype = dtype_of(start);
  Array offsets = iota(dtype, {count}, 0, Location::current());
  return add(batched ? reshape(start, {shape_of(start)[0], 1}) : start, offsets);
}

bool any_set(std::span<const char> flags) {
  return std::any_of(flags.begin(), flags.end(), [](char flag) { return flag != 0; });
}

}  // namespace

Array batch_take(const Node& node, std::span<const Array> inputs, std::span<const char> batched, int64_t size) {
  int64_t axis = node.attrs.ints[0];
  if (!batched[1]) return apply_node_to(node, inputs, {axis + 1});
  return take_lanes(inputs[0], batched[0], inputs[1], axis, size);
}

Array batch_scatter_add(const Node& node, std::span<const Array> inputs, std::span<const char> batched, int64_t size) {
  int64_t axis = node.attrs.ints[0];
  Array x = with_batch_axis(inputs[0], batched[0], size);
  Array updates = with_batch_axis(inputs[2], batched[2], size);
  if (!batched[1]) return apply_node_to(node, std::vector<Array>{x, inputs[1], updates}, {axis + 1});
  const Shape& x_shape = shape_of(x);
  int64_t extent = x_shape[static_cast<size_t>(axis + 1)];
  auto index_rank = static_cast<int64_t>(shape_of(inputs[1]).size()) - 1;
  // updates [B, before..., indices..., after...] -> [B, indices..., before..., after...]
  Array moved = transpose(updates, swap_groups(axis, index_rank, static_cast<int64_t>(shape_of(updates).size())));
  Array merged =
      apply_node_to(node, std::vector<Array>{rows_end_to_end(x, axis), lane_rows(inputs[1], extent, size), moved}, {0});
  Shape split{size, extent};
  Shape moved_shape = shape_of(merged);
  split.insert(split.end(), moved_shape.begin() + 1, moved_shape.end());
  return moveaxis(reshape(merged, split), 1, axis + 1);
}

Array batch_dynamic_slice(const Node& node, std::span<const Array> inputs, std::span<const char> batched,
                          int64_t size) {
  std::span<const Array> starts = inputs.subspan(1);
  std::span<const char> starts_batched = batched.subspan(1);
  if (!any_set(starts_batched)) {
    ir::Attributes attrs = node.attrs;
    attrs.shape.insert(attrs.shape.begin(), size);
    std::vector<Array> operands{inputs[0], number(0, starts.empty() ? DType::i32 : dtype_of(starts[0]))};
    operands.insert(operands.end(), starts.begin(), starts.end());
    return detail::apply(node.op, operands, std::move(attrs), node.where);
  }
  // Windows at different places: one gather per axis, the window's positions
  // per lane as indices.
  Array x = inputs[0];
  bool x_batched = batched[0];
  const Shape& sizes = node.attrs.shape;
  for (size_t d = 0; d < sizes.size(); ++d) {
    int64_t extent = shape_of(x)[d + (x_batched ? 1 : 0)];
    Array start = clamped_start(starts[d], extent, sizes[d]);
    Array positions = window_indices(start, starts_batched[d], sizes[d]);
    if (starts_batched[d]) {
      x = take_lanes(x, x_batched, positions, static_cast<int64_t>(d), size);
      x_batched = true;
    } else {
      x = take(x, positions, static_cast<int64_t>(d) + (x_batched ? 1 : 0));
    }
  }
  return with_batch_axis(x, x_batched, size);
}

Array batch_dynamic_update_slice(const Node& node, std::span<const Array> inputs, std::span<const char> batched,
                                 int64_t size) {
  Array x = with_batch_axis(inputs[0], batched[0], size);
  Array update = with_batch_axis(inputs[1], batched[1], size);
  std::span<const Array> starts = inputs.subspan(2);
  std::span<const char> starts_batched = batched.subspan(2);
  if (!any_set(starts_batched)) {
    std::vector<Array> operands{x, update, number(0, starts.empty() ? DType::i32 : dtype_of(starts[0]))};
    operands.insert(operands.end(), starts.begin(), starts.end());
    return apply_node_to(node, operands);
  }
  // Updates at different places: every element of x reads the update where a
  // lane's window covers it (the update gathered at its offset from the
  // window's start) and keeps its value elsewhere.
  const Shape& x_shape = shape_of(x);
  const Shape& update_shape = shape_of(update);
  if (std::find(update_shape.begin() + 1, update_shape.end(), 0) != update_shape.end()) return x;
  Array inside;
  Array gathered = update;
  for (size_t d = 0; d + 1 < x_shape.size(); ++d) {
    int64_t extent = x_shape[d + 1], window = update_shape[d + 1];
    Array start = clamped_start(starts[d], extent, window);
    DType dtype = dtype_of(start);
    Shape lane_shape{starts_batched[d] ? size : 1, extent};
    Array offset =
        sub(iota(dtype, {extent}, 0, Location::current()), starts_batched[d] ? reshape(start, {size, 1}) : start);
    offset = broadcast_to(offset, {size, extent});
    Array covered = logical_and(greater_equal(offset, number(0, dtype)), less(offset, number(window, dtype)));
    Shape axis_shape(x_shape.size(), 1);
    axis_shape[0] = size;
    axis_shape[d + 1] = extent;
    covered = reshape(covered, axis_shape);
    inside = inside.defined() ? logical_and(inside, covered) : covered;
    gathered = take_per_lane(gathered, clip(offset, number(0, dtype), number(window - 1, dtype)),
                             static_cast<int64_t>(d), size);
  }
  return where(inside, gathered, x);
}

}  // namespace kiln::ops
