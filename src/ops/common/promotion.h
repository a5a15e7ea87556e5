// What the elementwise families share: JAX-style type promotion with weak
// C++ numbers, NumPy broadcasting, and materializing operands at a common
// dtype and shape before a primitive (which wants equal shapes and dtypes).
#pragma once

#include <string_view>

#include "kiln/ops.h"
#include "ops/common/rules.h"

namespace kiln::ops {

struct TypeClass {
  DType dtype;
  bool weak;
};

/// JAX's lattice (README, "Dtypes"): the least upper bound of the two types,
/// where int* and float* are weak (C++ numbers); a weak result takes the
/// default dtype of its kind (i32, f32). i64 with u64 meets at float*.
TypeClass promote(TypeClass a, TypeClass b);
TypeClass type_class(const Operand& operand);

/// Throws for a complex `x`: complex numbers have no order, so sorting,
/// extremes and their arguments refuse them (the Array API standard leaves
/// them unspecified; JAX refuses them too).
void check_ordered(std::string_view operation, const AbstractValue& x, Location where);

/// NumPy broadcasting of two shapes; throws naming `operation`.
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view operation, Location where);

/// `x` converted to (dtype, weak) and broadcast to `shape`; a number becomes a literal.
Array materialize(const Operand& operand, TypeClass target, const Shape& shape, Location where);
/// Identity when `x` already has the dtype; otherwise a convert node.
Array convert_to(const Array& x, DType dtype, bool weak, Location where);
/// Integers and bool in the default float (f32), as mean, logsumexp and softmax compute them (reduce.cpp).
Array as_floating(const Array& x, const AbstractValue& type, Location where);
/// A binary elementwise primitive on two operands of any dtypes and
/// broadcastable shapes: promoted (integers to f32 where the primitive is
/// floating only), broadcast, then applied. `name` is the public function the
/// user called (errors say "[maximum]", not "[max]").
Array binary(Primitive op, const char* name, const Operand& a, const Operand& b);
/// Identity when shapes match; otherwise a broadcast node (NumPy rule).
Array broadcast_to_shape(const Array& x, const Shape& shape, Location where);

}  // namespace kiln::ops

namespace kiln::ops {
/// Integer coordinates along `axis` of an array of `shape` (the iota primitive).
Array iota(DType dtype, Shape shape, int64_t axis, Location where);
}  // namespace kiln::ops
