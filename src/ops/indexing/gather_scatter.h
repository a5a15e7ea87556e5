// The general gather and scatter primitives (ops/indexing/gather_scatter.cpp) as the
// builders of the indexing composites, the scatter family and the derivative
// rules use them.
#pragma once

#include "ops/common/rules.h"

namespace kiln::ops {

/// How scatter combines an update with the element it lands on (ints[0]).
enum class ScatterMode : int64_t { assign, add, mul, max, min };
inline constexpr int64_t scatter_mode_count = 5;

/// x's windows x[i_0, ..., i_{k-1}] for each position of `indices` [..., k]:
/// indices.shape[:-1] + x.shape[k:]. Indices are wrapped once, then clamped.
Array gather_windows(const Array& x, const Array& indices);
/// x with `updates` (the shape gather_windows would return) combined in at
/// `indices`; positions outside x (after wrapping once) are dropped.
Array scatter_windows(ScatterMode mode, const Array& x, const Array& indices, const Array& updates);
/// `indices` wrapped once and clamped into x's axes, as gather reads them.
Array clamped_indices(const Array& indices, const Shape& x_shape);

/// take_along_axis and put_along_axis: the normalized axis and the shape the
/// indices address (NumPy broadcasts x and indices along the other axes).
struct AlongAxisShape {
  int64_t axis;
  Shape shape;
};
AlongAxisShape along_axis_shape(const char* operation, const AbstractValue& x_type, const AbstractValue& index_type,
                                int64_t axis, Location where);

}  // namespace kiln::ops
