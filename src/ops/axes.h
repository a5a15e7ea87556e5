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

}  // namespace kiln::ops
