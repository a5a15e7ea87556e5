// Promotion, broadcasting and operand materialization for elementwise ops.
#include "ops/elementwise.h"

#include <algorithm>

#include "core/error_format.h"
#include "ops/apply.h"

namespace kiln::ops {

namespace {
// Positions in the promotion order; weak kinds sit below their strong dtypes.
enum Rank { rank_bool, rank_weak_int, rank_i32, rank_i64, rank_weak_float, rank_f32, rank_f64 };

int rank_of(TypeClass t) {
  switch (t.dtype) {
    case DType::bool_: return rank_bool;
    case DType::i32: return t.weak ? rank_weak_int : rank_i32;
    case DType::i64: return t.weak ? rank_weak_int : rank_i64;
    case DType::f32: return t.weak ? rank_weak_float : rank_f32;
    case DType::f64: return t.weak ? rank_weak_float : rank_f64;
  }
  return rank_f64;
}
}  // namespace

TypeClass promote(TypeClass a, TypeClass b) {
  int ra = rank_of(a), rb = rank_of(b);
  int r = std::max(ra, rb);
  switch (r) {
    case rank_bool: return {DType::bool_, false};
    case rank_i32: return {DType::i32, false};
    case rank_i64: return {DType::i64, false};
    case rank_f32: return {DType::f32, false};
    case rank_f64: return {DType::f64, false};
    default: break;
  }
  // A weak result: keep the wider weak dtype of its kind when both are weak
  // of that kind, otherwise the kind's default.
  DType fallback = r == rank_weak_int ? DType::i32 : DType::f32;
  DType wide = fallback;
  for (TypeClass t : {a, b})
    if (rank_of(t) == r && dtype_size(t.dtype) > dtype_size(wide)) wide = t.dtype;
  return {wide, true};
}

TypeClass type_class(const Operand& operand) {
  if (!operand.is_number()) {
    const auto& impl = detail::impl_of(operand.array(), "operand", operand.where());
    return {impl.type.dtype, impl.type.weak};
  }
  switch (operand.number().kind()) {
    case Scalar::Kind::boolean: return {DType::bool_, false};
    case Scalar::Kind::integer: return {DType::i32, true};
    case Scalar::Kind::floating: break;
  }
  return {DType::f32, true};
}

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view operation, Location where) {
  size_t rank = std::max(a.size(), b.size());
  Shape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      detail::raise(
          operation,
          "shapes " + shape_string(a) + " and " + shape_string(b) + " do not broadcast: dimension " +
              std::to_string(i) + " (from the right: " + std::to_string(rank - i) + ") is " + std::to_string(da) +
              " vs " + std::to_string(db),
          where,
          "NumPy broadcasting needs trailing dimensions that are equal or 1; reshape or expand_dims one operand");
    result[i] = da == 1 ? db : da;
  }
  return result;
}

Array convert_to(const Array& x, DType dtype, bool weak, Location where) {
  const auto& type = detail::impl_of(x, "astype", where).type;
  if (type.dtype == dtype && type.weak == weak) return x;
  ir::Attributes attrs;
  attrs.dtype = dtype;
  if (weak) attrs.ints = {1};
  return detail::apply(Primitive::convert, x, std::move(attrs), where);
}

Array broadcast_to_shape(const Array& x, const Shape& shape, Location where) {
  if (detail::impl_of(x, "broadcast", where).type.shape == shape) return x;
  ir::Attributes attrs;
  attrs.shape = shape;
  return detail::apply(Primitive::broadcast, x, std::move(attrs), where);
}

Array materialize(const Operand& operand, TypeClass target, const Shape& shape, Location where) {
  Array value = operand.is_number() ? detail::literal(operand.number(), target.dtype, target.weak, operand.where())
                                    : convert_to(operand.array(), target.dtype, target.weak, where);
  return broadcast_to_shape(value, shape, where);
}

}  // namespace kiln::ops
