// Promotion, broadcasting and operand materialization for elementwise ops.
#include "ops/common/promotion.h"

#include <algorithm>
#include <array>
#include <vector>

#include "core/error_format.h"
#include "ops/common/apply.h"

namespace kiln::ops {

namespace {
// JAX's type lattice (README, "Dtypes"): an edge goes from a type to each
// type just above it; i*, f* and c* are the weak integer, float and complex
// (C++ numbers). A promotion is the least upper bound of the two operands'
// nodes. The complex part is JAX's, which agrees with the Array API
// standard's table (f32 + c64 = c64, f64 + c64 = c128, f32 + c128 = c128).
enum Node {
  b,
  weak_int,
  u8,
  u16,
  u32,
  u64,
  s8,
  s16,
  s32,
  s64,
  weak_float,
  bf16,
  f16,
  f32,
  f64,
  weak_complex,
  c64,
  c128,
  node_count
};

constexpr uint32_t bit(Node node) { return 1u << node; }

// Each node's upper set (itself and every node above it), from the edges
// b->i*, i*->u8,i8, u8->i16,u16, u16->i32,u32, u32->i64,u64, u64->f*,
// i8->i16, i16->i32, i32->i64, i64->f*, f*->bf16,f16,c*, bf16->f32, f16->f32,
// f32->f64,c64, f64->c128, c*->c64, c64->c128.
std::array<uint32_t, node_count> upper_sets() {
  std::array<std::vector<Node>, node_count> above;
  above[b] = {weak_int};
  above[weak_int] = {u8, s8};
  above[u8] = {s16, u16};
  above[u16] = {s32, u32};
  above[u32] = {s64, u64};
  above[u64] = {weak_float};
  above[s8] = {s16};
  above[s16] = {s32};
  above[s32] = {s64};
  above[s64] = {weak_float};
  above[weak_float] = {bf16, f16, weak_complex};
  above[bf16] = {f32};
  above[f16] = {f32};
  above[f32] = {f64, c64};
  above[f64] = {c128};
  above[weak_complex] = {c64};
  above[c64] = {c128};
  std::array<uint32_t, node_count> sets{};
  for (int node = node_count; node-- > 0;) {  // every edge goes to a later node
    sets[static_cast<size_t>(node)] = bit(static_cast<Node>(node));
    for (Node up : above[static_cast<size_t>(node)]) sets[static_cast<size_t>(node)] |= sets[up];
  }
  return sets;
}

Node node_of(TypeClass t) {
  if (t.weak && t.dtype != DType::bool_)
    return is_complex(t.dtype) ? weak_complex : is_floating(t.dtype) ? weak_float : weak_int;
  switch (t.dtype) {
    case DType::bool_: return b;
    case DType::i8: return s8;
    case DType::i16: return s16;
    case DType::i32: return s32;
    case DType::i64: return s64;
    case DType::u8: return u8;
    case DType::u16: return u16;
    case DType::u32: return u32;
    case DType::u64: return u64;
    case DType::bf16: return bf16;
    case DType::f16: return f16;
    case DType::f32: return f32;
    case DType::f64: return f64;
    case DType::c64: return c64;
    case DType::c128: return c128;
  }
  return f64;
}

constexpr std::array<DType, node_count> node_dtype{
    DType::bool_, DType::i32, DType::u8,   DType::u16, DType::u32, DType::u64, DType::i8,  DType::i16, DType::i32,
    DType::i64,   DType::f32, DType::bf16, DType::f16, DType::f32, DType::f64, DType::c64, DType::c64, DType::c128};
}  // namespace

TypeClass promote(TypeClass a, TypeClass c) {
  static const std::array<uint32_t, node_count> upper = upper_sets();
  uint32_t common = upper[node_of(a)] & upper[node_of(c)];
  // The least upper bound: the common node whose own upper set is all of them.
  int join = 0;
  while (upper[static_cast<size_t>(join)] != common) ++join;
  if (join != weak_int && join != weak_float && join != weak_complex)
    return {node_dtype[static_cast<size_t>(join)], false};
  // A weak result keeps the wider weak dtype of its kind when an operand has
  // one (a weak i64 or f64 from an earlier promotion), else the kind's default.
  DType wide = node_dtype[static_cast<size_t>(join)];
  for (TypeClass t : {a, c})
    if (node_of(t) == join && dtype_size(t.dtype) > dtype_size(wide)) wide = t.dtype;
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
    case Scalar::Kind::complex: return {DType::c64, true};
  }
  return {DType::f32, true};
}

void check_ordered(std::string_view operation, const AbstractValue& x, Location where) {
  if (!is_complex(x.dtype)) return;
  detail::raise(operation, "needs ordered values, got " + x.to_string() + ": complex numbers have no order", where,
                "apply it to kiln::real(x), kiln::imag(x) or kiln::abs(x)");
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
