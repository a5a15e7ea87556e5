// The single entry point every operation goes through: record a node when a
// trace is active, otherwise run the primitive's reference kernel now.
#pragma once

#include <initializer_list>
#include <span>

#include "ir/graph.h"

namespace kiln::detail {

Array apply(ir::Primitive op, std::span<const Array> inputs, ir::Attributes attrs, Location where);
inline Array apply(ir::Primitive op, std::initializer_list<Array> inputs, ir::Attributes attrs, Location where) {
  return apply(op, std::span<const Array>(inputs.begin(), inputs.size()), std::move(attrs), where);
}
/// The same for one or two inputs, without copying the handles.
Array apply(ir::Primitive op, const Array& a, ir::Attributes attrs, Location where);
Array apply(ir::Primitive op, const Array& a, const Array& b, ir::Attributes attrs, Location where);

/// A 0-d array holding a C++ number: a literal node while tracing (it keeps
/// `where`), a concrete array otherwise. The value is rounded to `dtype`.
Array literal(Scalar value, DType dtype, bool weak, Location where);

/// Rounds a number to what `dtype` can hold (f32 rounding, integer truncation).
Scalar scalar_as(Scalar value, DType dtype);

}  // namespace kiln::detail
