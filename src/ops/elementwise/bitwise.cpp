// Elementwise primitives on the bits of integers (bool as one bit): and, or,
// xor, not and the shifts. The record of each (shape/dtype rule, reference
// kernel, batching, cost, native lowering; no derivatives: integer and bool
// results) and the public builders with NumPy's names and the operators
// & | ^ ~ << >>.
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "core/dispatch.h"
#include "core/error_format.h"
#include "core/wrapping.h"
#include "ops/common/apply.h"
#include "ops/common/batching.h"
#include "ops/common/elementwise_result.h"
#include "ops/common/promotion.h"

namespace kiln {
namespace ops {
namespace {

constexpr bool is_shift(Primitive op) { return op == Primitive::shift_left || op == Primitive::shift_right; }

// The public names, for errors: the primitives are named after JAX's.
constexpr const char* public_name(Primitive op) {
  switch (op) {
    case Primitive::shift_left: return "left_shift";
    case Primitive::shift_right: return "right_shift";
    default: return ir::primitive_name(op).data();
  }
}

std::string operand_text(const Operand& operand, const char* name, Location where) {
  if (operand.is_number()) return "the number " + operand.number().to_string();
  return detail::impl_of(operand.array(), name, where).type.to_string();
}

// Floats have no bits to operate on here, and shifts of bool are refused (NumPy
// would shift them as int8).
bool accepts(Primitive op, DType dtype) { return is_integer(dtype) || (dtype == DType::bool_ && !is_shift(op)); }

const char* wanted(Primitive op) { return is_shift(op) ? "integer operands" : "integer or bool operands"; }

AbstractValue infer_bitwise(const Node& node, std::span<const AbstractValue* const> inputs) {
  const char* name = public_name(node.op);
  size_t arity = node.op == Primitive::bitwise_not ? 1 : 2;
  if (inputs.size() != arity)
    detail::raise(name, "takes " + std::to_string(arity) + " operands, got " + std::to_string(inputs.size()),
                  node.where);
  const AbstractValue& a = *inputs[0];
  if (arity == 2) {
    const AbstractValue& b = *inputs[1];
    if (a.dtype != b.dtype || a.shape != b.shape)
      detail::raise(name, "operands must have one dtype and shape, got " + a.to_string() + " and " + b.to_string(),
                    node.where);
  }
  if (!accepts(node.op, a.dtype))
    detail::raise(name, std::string("needs ") + wanted(node.op) + ", got " + a.to_string(), node.where,
                  "convert with astype(x, kiln::i32) first");
  if (arity == 1) return a;
  return {a.dtype, a.weak && inputs[1]->weak, a.shape};
}

template <Primitive>
inline constexpr bool no_rule = false;

// ---- The record of each bitwise primitive ----------------------------------
// As in unary.cpp and binary.cpp, each rule is a chain over the primitive
// resolved at compile time, so a primitive without one fails to compile.

/// The reference kernel of one element, T an integer type or bool. A shift
/// count outside [0, bits) shifts every bit out: 0, or -1 for a right shift
/// of a negative signed value (JAX's shift_left and shift_right_arithmetic,
/// NumPy's left_shift and right_shift).
template <Primitive op, class T>
T reference(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    if constexpr (op == Primitive::bitwise_and) return a && b;
    else if constexpr (op == Primitive::bitwise_or) return a || b;
    else if constexpr (op == Primitive::bitwise_xor) return a != b;
    else if constexpr (op == Primitive::bitwise_not) return !a;
    else return a;  // shifts of bool: rejected by the shape rule
  } else if constexpr (op == Primitive::bitwise_and) return T(a & b);
  else if constexpr (op == Primitive::bitwise_or) return T(a | b);
  else if constexpr (op == Primitive::bitwise_xor) return T(a ^ b);
  else if constexpr (op == Primitive::bitwise_not) return T(~a);
  else {
    using U = detail::wrapping_type<T>;
    constexpr T bits = sizeof(T) * 8;
    bool in_range = b >= 0 && b < bits;
    if constexpr (op == Primitive::shift_left) return in_range ? static_cast<T>(static_cast<U>(a) << b) : T(0);
    else if constexpr (op == Primitive::shift_right) {
      if (in_range) return static_cast<T>(a >> b);  // arithmetic for signed types (C++20)
      return std::is_signed_v<T> && a < 0 ? T(-1) : T(0);
    } else static_assert(no_rule<op>, "bitwise primitive without a reference kernel");
  }
}

template <Primitive op>
Array evaluate(const Node& node, std::span<const Array> inputs) {
  Array result = elementwise_result(node, inputs);
  detail::ArrayImpl& out = *detail::impl(result);
  int64_t n = node.type.size();
  detail::dispatch(node.type.dtype, [&]<class T>() {
    if constexpr (detail::is_floating_element<T> || detail::is_complex_element<T>) {
      KILN_CHECK(false, "bitwise primitive reached its kernel with a floating operand");
    } else {
      const T* a = detail::impl(inputs[0])->data<T>();
      const T* b = inputs.size() > 1 ? detail::impl(inputs[1])->data<T>() : a;
      T* o = out.mutable_data<T>();
      for (int64_t i = 0; i < n; ++i) o[i] = reference<op, T>(a[i], b[i]);
    }
  });
  return result;
}

/// The native code of one element.
template <Primitive op>
ScalarValue lower(ScalarEmitter& e, const Node&, std::span<const ScalarValue> v, std::span<const DType> dtypes) {
  DType dtype = dtypes[0];
  if constexpr (op == Primitive::bitwise_and) return e.bitwise(Bitwise::and_, v[0], v[1]);
  else if constexpr (op == Primitive::bitwise_or) return e.bitwise(Bitwise::or_, v[0], v[1]);
  else if constexpr (op == Primitive::bitwise_xor) return e.bitwise(Bitwise::xor_, v[0], v[1]);
  else if constexpr (op == Primitive::bitwise_not) {
    // Every bit set: -1 for integers, true for bool.
    ScalarValue ones = e.constant(dtype == DType::bool_ ? 1 : -1, dtype);
    return e.bitwise(Bitwise::xor_, v[0], ones);
  } else if constexpr (op == Primitive::shift_left) return e.shift(Shift::left, v[0], v[1], dtype);
  else if constexpr (op == Primitive::shift_right) return e.shift(Shift::right, v[0], v[1], dtype);
  else static_assert(no_rule<op>, "bitwise primitive without a native lowering");
}

template <Primitive op>
PrimitiveRules row() {
  return {.infer = &infer_bitwise,
          .evaluate = &evaluate<op>,
          .no_derivative = "integer or bool result",
          .batch = &batch_elementwise,
          .fusion = Fusion::elementwise,
          .cost = 1,
          .lower = &lower<op>};
}

// The dtype is checked before promotion, so the error names the operands the
// user wrote.
Array bitwise_binary(Primitive op, const Operand& a, const Operand& b) {
  const char* name = public_name(op);
  Location where = a.where();
  TypeClass target = promote(type_class(a), type_class(b));
  if (!accepts(op, target.dtype))
    detail::raise(name,
                  std::string("needs ") + wanted(op) + ", got " + operand_text(a, name, where) + " and " +
                      operand_text(b, name, where),
                  where, "convert with astype(x, kiln::i32) first");
  return binary(op, name, a, b);
}

}  // namespace

void register_bitwise_rules(RuleTable& table) {
  register_family<ir::Family::bitwise>(table, []<Primitive op>() { return row<op>(); });
}

}  // namespace ops

using ops::Primitive;

Array bitwise_and(Operand a, Operand b) { return ops::bitwise_binary(Primitive::bitwise_and, a, b); }
Array bitwise_or(Operand a, Operand b) { return ops::bitwise_binary(Primitive::bitwise_or, a, b); }
Array bitwise_xor(Operand a, Operand b) { return ops::bitwise_binary(Primitive::bitwise_xor, a, b); }
Array left_shift(Operand a, Operand b) { return ops::bitwise_binary(Primitive::shift_left, a, b); }
Array right_shift(Operand a, Operand b) { return ops::bitwise_binary(Primitive::shift_right, a, b); }

Array bitwise_not(const Array& x, Location where) {
  const auto& type = detail::impl_of(x, "bitwise_not", where).type;
  if (!ops::accepts(Primitive::bitwise_not, type.dtype))
    detail::raise("bitwise_not", "needs an integer or bool operand, got " + type.to_string(), where,
                  "convert with astype(x, kiln::i32) first");
  return detail::apply(Primitive::bitwise_not, x, {}, where);
}

Array operator&(Operand a, Operand b) { return bitwise_and(std::move(a), std::move(b)); }
Array operator|(Operand a, Operand b) { return bitwise_or(std::move(a), std::move(b)); }
Array operator^(Operand a, Operand b) { return bitwise_xor(std::move(a), std::move(b)); }
Array operator<<(Operand a, Operand b) { return left_shift(std::move(a), std::move(b)); }
Array operator>>(Operand a, Operand b) { return right_shift(std::move(a), std::move(b)); }
Array operator~(Operand x) {
  if (x.is_number()) {
    DType dtype = x.number().kind() == Scalar::Kind::boolean ? DType::bool_ : DType::i32;
    return bitwise_not(detail::literal(x.number(), dtype, dtype != DType::bool_, x.where()), x.where());
  }
  return bitwise_not(x.array(), x.where());
}

}  // namespace kiln
