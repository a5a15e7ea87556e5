// Axis arguments as users write them (negative, lists, "all") turned into
// sorted non-negative axes, with errors that name the operation and shape.
#pragma once

#include <string_view>
#include <vector>

#include "kiln/ops.h"

namespace kiln::ops {

/// `axis` in [-rank, rank) made non-negative.
int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view operation, const Shape& shape, Location where);
/// Sorted, unique, non-negative axes; Axes::all() gives every axis. Duplicates are an error.
std::vector<int64_t> normalize_axes(const Axes& axes, int64_t rank, std::string_view operation, const Shape& shape,
                                    Location where);

/// Extents before, along and after `axis`: the array seen as [outer, extent,
/// inner], whose lines along the axis are what kernels along one axis walk.
struct AxisSplit {
  int64_t outer = 1, extent = 1, inner = 1;
  /// line(o, i) for every line: its first element is at o * extent * inner + i,
  /// its elements `inner` apart.
  template <class F>
  void each_line(F&& line) const {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) line(o, i);
  }
};
AxisSplit split_at(const Shape& shape, int64_t axis);

/// Flat positions in an array of shape `source` of the elements whose
/// coordinate along `axis` is `coordinate` (shaped like the result, in its
/// dtype) and whose other coordinates are their own, read at 0 where
/// `source` has extent 1 (broadcast): what take_along_axis gathers from and
/// its transpose adds back into.
Array flat_positions(const Shape& source, const Array& coordinate, int64_t axis, Location where);

}  // namespace kiln::ops
