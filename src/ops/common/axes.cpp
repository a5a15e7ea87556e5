// Axis normalization and axis splits shared by reductions, movement, indexing and sorting.
#include "ops/common/axes.h"

#include <algorithm>

#include "core/error_format.h"

namespace kiln::ops {

int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view operation, const Shape& shape, Location where) {
  if (axis < -rank || axis >= rank)
    detail::raise(operation,
                  "axis " + std::to_string(axis) + " is out of range for shape " + shape_string(shape) + " (rank " +
                      std::to_string(rank) + ")",
                  where,
                  rank == 0 ? "a 0-d array has no axes"
                            : "valid axes are -" + std::to_string(rank) + " to " + std::to_string(rank - 1));
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes(const Axes& axes, int64_t rank, std::string_view operation, const Shape& shape,
                                    Location where) {
  std::vector<int64_t> result;
  if (axes.is_all()) {
    for (int64_t a = 0; a < rank; ++a) result.push_back(a);
    return result;
  }
  for (int64_t axis : axes.list()) result.push_back(normalize_axis(axis, rank, operation, shape, where));
  std::sort(result.begin(), result.end());
  if (std::adjacent_find(result.begin(), result.end()) != result.end())
    detail::raise(
        operation,
        "repeated axis in " + std::string("[") +
            [&] {
              std::string text;
              for (size_t i = 0; i < axes.list().size(); ++i) text += (i ? "," : "") + std::to_string(axes.list()[i]);
              return text;
            }() +
            "] for shape " + shape_string(shape),
        where, "list each axis once");
  return result;
}

AxisSplit split_at(const Shape& shape, int64_t axis) {
  AxisSplit split;
  for (int64_t a = 0; a < static_cast<int64_t>(shape.size()); ++a) {
    int64_t e = shape[static_cast<size_t>(a)];
    if (a < axis) split.outer *= e;
    else if (a == axis) split.extent = e;
    else split.inner *= e;
  }
  return split;
}

}  // namespace kiln::ops
