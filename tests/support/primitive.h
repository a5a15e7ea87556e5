// One primitive applied with explicit attributes, bypassing the public
// builders: for tests that reach every primitive of the table directly.
#pragma once

#include <kiln/kiln.h>

#include <vector>

#include "ops/common/apply.h"

namespace kiln::testing {

inline Array primitive(ir::Primitive op, const std::vector<Array>& inputs, std::vector<int64_t> ints = {},
                       Shape shape = {}, DType dtype = DType::f32) {
  ir::Attributes attrs;
  attrs.ints = std::move(ints);
  attrs.shape = std::move(shape);
  attrs.dtype = dtype;
  return detail::apply(op, inputs, std::move(attrs), Location::current());
}

}  // namespace kiln::testing
