// Elementwise binary primitives (and select): shape/dtype rule, reference
// kernel and the public builders with NumPy broadcasting and JAX promotion.
#include <cmath>
#include <type_traits>

#include "core/dispatch.h"
#include "core/error_format.h"
#include "ops/elementwise.h"
#include "ops/apply.h"

namespace kiln {
namespace ops {
namespace {

bool is_comparison(Primitive op) {
  return op == Primitive::eq || op == Primitive::ne || op == Primitive::lt || op == Primitive::le ||
         op == Primitive::gt || op == Primitive::ge;
}
bool is_logical(Primitive op) { return op == Primitive::logical_and || op == Primitive::logical_or; }

AbstractValue infer_binary(const Node& node, std::span<const AbstractValue* const> inputs) {
  std::string_view name = ir::primitive_name(node.op);
  size_t first = node.op == Primitive::select ? 1 : 0;
  if (inputs.size() != first + 2)
    detail::raise(name, "takes " + std::to_string(first + 2) + " operands, got " + std::to_string(inputs.size()), node.where);
  const AbstractValue& a = *inputs[first];
  const AbstractValue& b = *inputs[first + 1];
  if (a.dtype != b.dtype || a.shape != b.shape)
    detail::raise(name, "operands must have one dtype and shape, got " + a.to_string() + " and " + b.to_string(),
                  node.where);
  if (node.op == Primitive::select) {
    const AbstractValue& cond = *inputs[0];
    if (cond.dtype != DType::bool_ || cond.shape != a.shape)
      detail::raise(name, "condition must be bool" + shape_string(a.shape) + ", got " + cond.to_string(), node.where);
    return {a.dtype, a.weak && b.weak, a.shape};
  }
  if (is_comparison(node.op)) return {DType::bool_, false, a.shape};
  if (is_logical(node.op) && a.dtype != DType::bool_)
    detail::raise(name, "needs bool operands, got " + a.to_string(), node.where);
  if (a.dtype == DType::bool_ && (node.op == Primitive::sub || node.op == Primitive::div || node.op == Primitive::pow))
    detail::raise(name, "is not defined for bool operands " + a.to_string() + " and " + b.to_string(), node.where,
                  "convert with astype(x, kiln::i32) first, or use logical_and/logical_or/logical_not");
  if (node.op == Primitive::div && !is_floating(a.dtype))
    detail::raise(name, "needs floating operands, got " + a.to_string(), node.where);
  return {a.dtype, a.weak && b.weak, a.shape};
}

template <class T>
T integer_pow(T base, T exponent) {
  using U = std::make_unsigned_t<T>;
  if (exponent < 0) return base == 1 ? T(1) : base == -1 ? (exponent % 2 ? T(-1) : T(1)) : T(0);
  U result = 1, factor = static_cast<U>(base);
  for (T e = exponent; e > 0; e >>= 1) {
    if (e & 1) result *= factor;
    factor *= factor;
  }
  return static_cast<T>(result);
}

template <class T>
T arithmetic(Primitive op, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case Primitive::add: case Primitive::max: case Primitive::logical_or: return a || b;
      default: return a && b;  // mul, min, logical_and
    }
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;  // wrap on overflow, as NumPy does, without UB
    switch (op) {
      case Primitive::add: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      case Primitive::sub: return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
      case Primitive::mul: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
      case Primitive::pow: return integer_pow(a, b);
      case Primitive::max: return a > b ? a : b;
      default: return a < b ? a : b;  // min
    }
  } else {
    switch (op) {
      case Primitive::add: return a + b;
      case Primitive::sub: return a - b;
      case Primitive::mul: return a * b;
      case Primitive::div: return a / b;
      case Primitive::pow: return std::pow(a, b);
      case Primitive::max: return std::isnan(a) || std::isnan(b) ? a + b : (a > b ? a : b);
      default: return std::isnan(a) || std::isnan(b) ? a + b : (a < b ? a : b);  // min
    }
  }
}

template <class T>
bool compare(Primitive op, T a, T b) {
  switch (op) {
    case Primitive::eq: return a == b;
    case Primitive::ne: return a != b;
    case Primitive::lt: return a < b;
    case Primitive::le: return a <= b;
    case Primitive::gt: return a > b;
    default: return a >= b;  // ge
  }
}

Array evaluate_binary(const Node& node, std::span<const Array> inputs) {
  Array result = detail::allocate(node.type);
  detail::ArrayImpl& out = *result.impl();
  int64_t n = node.type.size();
  if (node.op == Primitive::select) {
    const bool* cond = inputs[0].impl()->data<bool>();
    detail::dispatch(node.type.dtype, [&]<class T>() {
      const T* a = inputs[1].impl()->data<T>();
      const T* b = inputs[2].impl()->data<T>();
      T* o = out.mutable_data<T>();
      for (int64_t i = 0; i < n; ++i) o[i] = cond[i] ? a[i] : b[i];
    });
    return result;
  }
  detail::dispatch(inputs[0].impl()->type.dtype, [&]<class T>() {
    const T* a = inputs[0].impl()->data<T>();
    const T* b = inputs[1].impl()->data<T>();
    if (is_comparison(node.op)) {
      bool* o = out.mutable_data<bool>();
      for (int64_t i = 0; i < n; ++i) o[i] = compare(node.op, a[i], b[i]);
    } else {
      T* o = out.mutable_data<T>();
      for (int64_t i = 0; i < n; ++i) o[i] = arithmetic(node.op, a[i], b[i]);
    }
  });
  return result;
}

// `name` is the public function the user called (errors say "[maximum]", not "[max]").
Array binary(Primitive op, const char* name, const Operand& a, const Operand& b) {
  Location where = a.where();
  // The common case — two arrays of one dtype, weak flag and shape — needs no
  // promotion, conversion or broadcast; skipping that work keeps tracing cheap.
  if (!a.is_number() && !b.is_number() && !is_logical(op)) {
    const auto& ta = detail::impl_of(a.array(), name, where).type;
    const auto& tb = detail::impl_of(b.array(), name, where).type;
    bool ready = ta == tb && ta.dtype != DType::bool_ && (op != Primitive::div || is_floating(ta.dtype));
    if (ready) return detail::apply(op, a.array(), b.array(), {}, where);
  }
  static const Shape scalar_shape;
  const Shape& sa = a.is_number() ? scalar_shape : detail::impl_of(a.array(), name, where).type.shape;
  const Shape& sb = b.is_number() ? scalar_shape : detail::impl_of(b.array(), name, where).type.shape;
  TypeClass target = promote(type_class(a), type_class(b));
  if (op == Primitive::div && !is_floating(target.dtype)) target = {DType::f32, target.weak};
  if (is_logical(op)) target = {DType::bool_, false};
  if (target.dtype == DType::bool_ && (op == Primitive::sub || op == Primitive::pow)) {
    auto describe = [&](const Operand& o, const Shape& shape) {
      return o.is_number() ? "the number " + o.number().to_string() : "bool" + shape_string(shape);
    };
    detail::raise(name, "is not defined for bool operands, got " + describe(a, sa) + " and " + describe(b, sb), where,
                  "convert with astype(x, kiln::i32) first, or use logical_and/logical_or/logical_not");
  }
  Shape shape = broadcast_shapes(sa, sb, name, where);
  // Eagerly, an array with a number on a large array: compile literal,
  // broadcast and operation together instead of materializing the broadcast.
  const detail::EagerCompiler* compiler =
      a.is_number() != b.is_number() && !detail::tracing_active() ? detail::eager_compiler_for(shape_size(shape)) : nullptr;
  if (compiler) {
    const Operand& array = a.is_number() ? b : a;
    auto build = [&](std::span<const Array> placeholders) {
      Operand traced(placeholders[0], array.where());
      return binary(op, name, a.is_number() ? a : traced, a.is_number() ? traced : b);
    };
    return compiler->run(std::span<const Array>(&array.array(), 1), build);
  }
  return detail::apply(op, {materialize(a, target, shape, where), materialize(b, target, shape, where)}, {}, where);
}

// ---- Derivatives -------------------------------------------------------------
// Elementwise, so each operand's Jacobian is diagonal: the vjp and the jvp
// both scale a seed (cotangent or tangent) by the partial derivative.
Array scaled_by_partial(const Node& node, std::span<const Array> inputs, const Array& output, size_t operand,
                        const Array& seed) {
  Location w = node.where;
  auto o = [w](const Array& x) { return Operand(x, w); };
  if (node.op == Primitive::select) {
    // The condition is bool and gets nothing; each branch gets the seed where it was chosen.
    const Array& cond = inputs[0];
    if (operand == 0) return Array();
    return operand == 1 ? kiln::where(o(cond), o(seed), Operand(0, w)) : kiln::where(o(cond), Operand(0, w), o(seed));
  }
  const Array& a = inputs[0];
  const Array& b = inputs[1];
  const Array& self = operand == 0 ? a : b;
  const Array& other = operand == 0 ? b : a;
  switch (node.op) {
    case Primitive::add: return seed;
    case Primitive::sub: return operand == 0 ? seed : kiln::neg(seed, w);
    case Primitive::mul: return mul(o(seed), o(other));
    case Primitive::div:
      // d(a/b)/db = -a/b^2, computed as -(a/b)/b so b^2 cannot overflow.
      if (operand == 0) return div(o(seed), o(b));
      return kiln::neg(mul(o(seed), o(div(o(output), o(b)))), w);
    case Primitive::pow: {
      if (operand == 0) {
        // b * a^(b-1), with the exponent replaced by 1 where b == 0 so that
        // a == 0, b == 0 gives 0 rather than 0 * inf (JAX's _pow_jvp_lhs).
        Array exponent = kiln::where(o(equal(o(b), Operand(0, w))), Operand(1, w), o(sub(o(b), Operand(1, w))));
        return mul(o(seed), o(mul(o(b), o(kiln::pow(o(a), o(exponent))))));
      }
      // log(a) * a^b, with log(1) = 0 standing in where a == 0 (JAX's _pow_jvp_rhs).
      Array safe_base = kiln::where(o(equal(o(a), Operand(0, w))), Operand(1, w), o(a));
      return mul(o(seed), o(mul(o(kiln::log(safe_base, w)), o(output))));
    }
    case Primitive::max: case Primitive::min: {
      // The operand equal to the result gets the seed; on a tie each operand
      // gets half, as JAX does, so the two halves still sum to the seed.
      // A NaN result matches neither operand and passes nothing back.
      Array chosen = equal(o(self), o(output));
      Array tie = equal(o(other), o(output));
      Array share = kiln::where(o(tie), o(mul(o(seed), Operand(0.5, w))), o(seed));
      return kiln::where(o(chosen), o(share), Operand(0, w));
    }
    default: break;
  }
  detail::raise(ir::primitive_name(node.op), "has no derivative rule for " + node.type.to_string(), w);
}

std::vector<Array> vjp_binary(const Node& node, std::span<const Array> inputs, const Array& output,
                              const Array& cotangent) {
  std::vector<Array> result;
  for (size_t k = 0; k < inputs.size(); ++k) result.push_back(scaled_by_partial(node, inputs, output, k, cotangent));
  return result;
}

Array jvp_binary(const Node& node, std::span<const Array> inputs, const Array& output,
                 std::span<const Array> tangents) {
  Array total;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!tangents[k].defined()) continue;  // a zero tangent adds nothing
    Array term = scaled_by_partial(node, inputs, output, k, tangents[k]);
    if (!term.defined()) continue;
    total = total.defined() ? add(Operand(total, node.where), Operand(term, node.where)) : term;
  }
  return total;
}

}  // namespace

void register_binary_rules(RuleTable& table) {
#define KILN_PRIMITIVE(name, family)                                                           \
  if (std::string_view(#family) == "binary") {                                                 \
    table[static_cast<size_t>(Primitive::name)] = {&infer_binary, &evaluate_binary, nullptr,   \
                                                   &vjp_binary, &jvp_binary};                  \
  }
#include "ir/primitives.def"
#undef KILN_PRIMITIVE
  for (Primitive op : {Primitive::eq, Primitive::ne, Primitive::lt, Primitive::le, Primitive::gt, Primitive::ge,
                       Primitive::logical_and, Primitive::logical_or}) {
    PrimitiveRules& entry = table[static_cast<size_t>(op)];
    entry.vjp = nullptr;
    entry.jvp = nullptr;
    entry.no_derivative = "bool result";
  }
}

}  // namespace ops

using ops::Primitive;

Array add(Operand a, Operand b) { return ops::binary(Primitive::add, "add", a, b); }
Array sub(Operand a, Operand b) { return ops::binary(Primitive::sub, "sub", a, b); }
Array mul(Operand a, Operand b) { return ops::binary(Primitive::mul, "mul", a, b); }
Array div(Operand a, Operand b) { return ops::binary(Primitive::div, "div", a, b); }
Array pow(Operand a, Operand b) { return ops::binary(Primitive::pow, "pow", a, b); }
Array maximum(Operand a, Operand b) { return ops::binary(Primitive::max, "maximum", a, b); }
Array minimum(Operand a, Operand b) { return ops::binary(Primitive::min, "minimum", a, b); }
Array equal(Operand a, Operand b) { return ops::binary(Primitive::eq, "equal", a, b); }
Array not_equal(Operand a, Operand b) { return ops::binary(Primitive::ne, "not_equal", a, b); }
Array less(Operand a, Operand b) { return ops::binary(Primitive::lt, "less", a, b); }
Array less_equal(Operand a, Operand b) { return ops::binary(Primitive::le, "less_equal", a, b); }
Array greater(Operand a, Operand b) { return ops::binary(Primitive::gt, "greater", a, b); }
Array greater_equal(Operand a, Operand b) { return ops::binary(Primitive::ge, "greater_equal", a, b); }
Array logical_and(Operand a, Operand b) { return ops::binary(Primitive::logical_and, "logical_and", a, b); }
Array logical_or(Operand a, Operand b) { return ops::binary(Primitive::logical_or, "logical_or", a, b); }

Array operator+(Operand a, Operand b) { return add(std::move(a), std::move(b)); }
Array operator-(Operand a, Operand b) { return sub(std::move(a), std::move(b)); }
Array operator*(Operand a, Operand b) { return mul(std::move(a), std::move(b)); }
Array operator/(Operand a, Operand b) { return div(std::move(a), std::move(b)); }
Array operator<(Operand a, Operand b) { return less(std::move(a), std::move(b)); }
Array operator<=(Operand a, Operand b) { return less_equal(std::move(a), std::move(b)); }
Array operator>(Operand a, Operand b) { return greater(std::move(a), std::move(b)); }
Array operator>=(Operand a, Operand b) { return greater_equal(std::move(a), std::move(b)); }
Array operator==(Operand a, Operand b) { return equal(std::move(a), std::move(b)); }
Array operator!=(Operand a, Operand b) { return not_equal(std::move(a), std::move(b)); }
Array operator&(Operand a, Operand b) { return logical_and(std::move(a), std::move(b)); }
Array operator|(Operand a, Operand b) { return logical_or(std::move(a), std::move(b)); }

Array where(Operand cond, Operand x, Operand y) {
  Location where = cond.where();
  ops::TypeClass target = ops::promote(ops::type_class(x), ops::type_class(y));
  static const Shape scalar_shape;
  auto shape_of = [&](const Operand& o) -> const Shape& {
    return o.is_number() ? scalar_shape : detail::impl_of(o.array(), "where", where).type.shape;
  };
  Shape shape = ops::broadcast_shapes(ops::broadcast_shapes(shape_of(cond), shape_of(x), "where", where),
                                      shape_of(y), "where", where);
  Array c = ops::materialize(cond, {DType::bool_, false}, shape, where);
  return detail::apply(Primitive::select,
                       {c, ops::materialize(x, target, shape, where), ops::materialize(y, target, shape, where)}, {},
                       where);
}

Array clip(Operand x, Operand lo, Operand hi) {
  return minimum(Operand(maximum(x, lo), x.where()), hi);
}

}  // namespace kiln
