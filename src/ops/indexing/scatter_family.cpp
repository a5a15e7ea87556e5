// The public builders on the general gather and scatter: gather itself, the
// scatter family along one axis (scatter, scatter_mul, scatter_max,
// scatter_min: JAX's x.at[...] updates) and put_along_axis. The along-axis
// forms move the axis first, so its indices are the one coordinate the
// primitive reads.
#include <limits>

#include "core/error_format.h"
#include "kiln/ops.h"
#include "ops/common/apply.h"
#include "ops/common/axes.h"
#include "ops/common/promotion.h"
#include "ops/indexing/gather_scatter.h"

namespace kiln {

namespace {

using ops::ScatterMode;

const detail::AbstractValue& type_of(const Array& x, const char* operation, Location where) {
  return detail::impl_of(x, operation, where).type;
}

void require_integer_indices(const char* operation, const detail::AbstractValue& indices, Location where) {
  if (!is_integer(indices.dtype))
    detail::raise(operation, "indices must be integers, got " + indices.to_string(), where,
                  "convert them with astype(indices, kiln::i32)");
}

Array scatter_along(ScatterMode mode, const char* name, const Array& x, const Array& indices, const Array& updates,
                    int64_t axis, Location where) {
  const auto& x_type = type_of(x, name, where);
  const auto& index_type = type_of(indices, name, where);
  const auto& update_type = type_of(updates, name, where);
  require_integer_indices(name, index_type, where);
  int64_t a = ops::normalize_axis(axis, x_type.ndim(), name, x_type.shape, where);
  Shape expected(x_type.shape.begin(), x_type.shape.begin() + a);
  expected.insert(expected.end(), index_type.shape.begin(), index_type.shape.end());
  expected.insert(expected.end(), x_type.shape.begin() + a + 1, x_type.shape.end());
  if (update_type.dtype != x_type.dtype || update_type.shape != expected)
    detail::raise(name,
                  "updates must be " + std::string(dtype_name(x_type.dtype)) + shape_string(expected) +
                      " (the shape of take(x, indices, " + std::to_string(axis) + ")) for x " + x_type.to_string() +
                      " and indices " + index_type.to_string() + ", got " + update_type.to_string(),
                  where, "convert with astype(updates, x.dtype()) and broadcast_to the expected shape");
  detail::OperationScope at(name, where);
  // updates [before..., indices..., after...] -> [indices..., before..., after...]
  auto rank = static_cast<int64_t>(index_type.shape.size());
  std::vector<int64_t> permutation;
  for (int64_t d = 0; d < rank; ++d) permutation.push_back(a + d);
  for (int64_t d = 0; d < a; ++d) permutation.push_back(d);
  for (auto d = a + rank; d < update_type.ndim(); ++d) permutation.push_back(d);
  Array written =
      ops::scatter_windows(mode, moveaxis(x, a, 0), expand_dims(indices, -1), transpose(updates, permutation));
  return moveaxis(written, 0, a);
}

}  // namespace

Array gather(const Array& x, const Array& indices, Location where) {
  return detail::apply(ops::Primitive::gather, {x, indices}, {}, where);
}

Array scatter(const Array& x, const Array& indices, const Array& updates, int64_t axis, Location where) {
  return scatter_along(ScatterMode::assign, "scatter", x, indices, updates, axis, where);
}

Array scatter_mul(const Array& x, const Array& indices, const Array& updates, int64_t axis, Location where) {
  return scatter_along(ScatterMode::mul, "scatter_mul", x, indices, updates, axis, where);
}

Array scatter_max(const Array& x, const Array& indices, const Array& updates, int64_t axis, Location where) {
  return scatter_along(ScatterMode::max, "scatter_max", x, indices, updates, axis, where);
}

Array scatter_min(const Array& x, const Array& indices, const Array& updates, int64_t axis, Location where) {
  return scatter_along(ScatterMode::min, "scatter_min", x, indices, updates, axis, where);
}

Array put_along_axis(const Array& x, const Array& indices, Operand values, int64_t axis, Location where) {
  const auto& x_type = type_of(x, "put_along_axis", where);
  const auto& index_type = type_of(indices, "put_along_axis", where);
  require_integer_indices("put_along_axis", index_type, where);
  auto [a, shape] = ops::along_axis_shape("put_along_axis", x_type, index_type, axis, where);
  auto ax = static_cast<size_t>(a);
  detail::OperationScope at("put_along_axis", where);
  int64_t extent = x_type.shape[ax], size = x_type.size();
  DType linear_dtype = size >= std::numeric_limits<int32_t>::max() ? DType::i64 : DType::i32;
  Array index = extent > std::numeric_limits<int32_t>::max() ? astype(indices, DType::i64) : indices;
  Array wrapped = kiln::where(index < 0, index + extent, index);
  Array inside = ops::broadcast_to_shape((wrapped >= 0) & (wrapped < extent), shape, where);
  Array coordinate = ops::broadcast_to_shape(
      ops::convert_to(kiln::where(inside, wrapped, 0), linear_dtype, false, where), shape, where);
  // A dropped index writes at the position `size`, outside x.
  Array linear = kiln::where(inside, ops::flat_positions(x_type.shape, coordinate, a, where), size);
  Array updates = ops::materialize(values, {x_type.dtype, x_type.weak}, shape, where);
  int64_t count = shape_size(shape);
  Array written = ops::scatter_windows(ScatterMode::assign, reshape(x, {size}), reshape(linear, {count, 1}),
                                       reshape(updates, {count}));
  return reshape(written, x_type.shape);
}

}  // namespace kiln
