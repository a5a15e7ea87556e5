// Builds a collective node (ops/collective/collective.cpp): the world's size is
// appended to `ints`, so every collective carries the size it was traced for.
#pragma once

#include <vector>

#include "ir/primitive.h"
#include "kiln/array.h"

namespace kiln::ops {

Array collective(ir::Primitive op, const Array& x, std::vector<int64_t> ints, Location where);

}  // namespace kiln::ops
