// The cumulative family: cummax and cummin, the running maximum and minimum
// along an axis (np.maximum.accumulate), and cumprod, the running product.
// NaN, once met, stays, as in NumPy.
// Each running extreme's derivative comes from the element that holds it
// there: the last one equal to it so far (torch.cummax's choice at ties), so
// tangents are gathered from those positions and cotangents added back to
// them. cumprod's derivative divides by x only before its first zero along a
// line; at that zero it is the product of the others, and past it nothing.
#include <cmath>

#include "core/convert.h"
#include "core/dispatch.h"
#include "core/error_format.h"
#include "core/wrapping.h"
#include "kiln/ops.h"
#include "ops/common/apply.h"
#include "ops/common/axes.h"
#include "ops/common/batching.h"
#include "ops/common/promotion.h"

namespace kiln {
namespace ops {
namespace {

AbstractValue infer_cumulative(const Node& node, std::span<const AbstractValue* const> inputs) {
  const char* name = ir::primitive_name(node.op).data();
  if (inputs.size() != 1) detail::raise(name, "takes 1 operand, got " + std::to_string(inputs.size()), node.where);
  const AbstractValue& x = *inputs[0];
  if (node.op != Primitive::cumprod) check_ordered(name, x, node.where);
  size_t ints = node.op == Primitive::cumprod ? 2 : 1;
  if (node.attrs.ints.size() != ints || node.attrs.ints[0] < 0 || node.attrs.ints[0] >= x.ndim())
    detail::raise(name, "attributes " + ints_string(node.attrs.ints) + " do not fit " + x.to_string(), node.where);
  return x;
}

Array evaluate_cumulative(const Node& node, std::span<const Array> inputs) {
  const detail::ArrayImpl& x = *detail::impl(inputs[0]);
  Array result = detail::allocate(node.type);
  AxisSplit split = split_at(x.type.shape, node.attrs.ints[0]);
  bool maximum = node.op == Primitive::cummax;
  detail::dispatch(x.type.dtype, [&]<class T>() {
    if constexpr (detail::is_complex_element<T>) {
      KILN_CHECK(false, "complex operands reached a kernel whose shape rule refuses them");
    } else {
      const T* in = x.data<T>();
      T* out = detail::impl(result)->mutable_data<T>();
      split.each_line([&](int64_t o, int64_t i) {
        int64_t base = o * split.extent * split.inner + i;
        for (int64_t j = 0; j < split.extent; ++j) {
          T value = in[base + j * split.inner];
          if (j > 0) {
            T running = out[base + (j - 1) * split.inner];
            bool keep = detail::is_nan_element(running) ||
                        (!detail::is_nan_element(value) && (maximum ? !(running < value) : !(value < running)));
            if (keep) value = running;
          }
          out[base + j * split.inner] = value;
        }
      });
    }
  });
  return result;
}

Array evaluate_cumprod(const Node& node, std::span<const Array> inputs) {
  const detail::ArrayImpl& x = *detail::impl(inputs[0]);
  Array result = detail::allocate(node.type);
  AxisSplit split = split_at(x.type.shape, node.attrs.ints[0]);
  bool reverse = node.attrs.ints[1] != 0;
  detail::dispatch(x.type.dtype, [&]<class T>() {
    const T* in = x.data<T>();
    T* out = detail::impl(result)->mutable_data<T>();
    split.each_line([&](int64_t o, int64_t i) {
      int64_t base = o * split.extent * split.inner + i;
      T running = T(1);
      for (int64_t step = 0; step < split.extent; ++step) {
        int64_t position = base + (reverse ? split.extent - 1 - step : step) * split.inner;
        if constexpr (std::is_same_v<T, bool>) running = running && in[position];
        else if constexpr (std::is_integral_v<T>) {
          using U = detail::wrapping_type<T>;  // wraps like NumPy, without UB
          running = static_cast<T>(static_cast<U>(running) * static_cast<U>(in[position]));
        } else running = running * in[position];
        out[position] = running;
      }
    });
  });
  return result;
}

std::string describe_cumulative(const Node& node) {
  bool reverse = node.op == Primitive::cumprod && node.attrs.ints.at(1) != 0;
  return "axis=" + std::to_string(node.attrs.ints.at(0)) + (reverse ? " reverse" : "");
}

/// Where each running extreme comes from: the last position so far whose
/// element equals the running extreme there (or is NaN), as i64 positions.
Array sources(const Node& node, const Array& x, const Array& output) {
  int64_t axis = node.attrs.ints[0];
  const Shape& shape = node.type.shape;
  Array positions = iota(DType::i64, shape, axis, node.where);
  Array holds = logical_or(equal(x, output), isnan(x));
  Array marked = where(holds, positions, detail::literal(int64_t{0}, DType::i64, false, node.where));
  ir::Attributes attrs;
  attrs.ints = {axis};
  return detail::apply(Primitive::cummax, {marked}, std::move(attrs), node.where);
}

Array cumulative_jvp(const Node& node, std::span<const Array> inputs, const Array& output,
                     std::span<const Array> tangents) {
  return take_along_axis(tangents[0], sources(node, inputs[0], output), node.attrs.ints[0], node.where);
}

// The transpose of that gather: each cotangent added at its source, by flat position.
std::vector<Array> cumulative_vjp(const Node& node, std::span<const Array> inputs, const Array& output,
                                  const Array& cotangent) {
  const Shape& shape = node.type.shape;
  int64_t size = node.type.size();
  Array linear = flat_positions(shape, sources(node, inputs[0], output), node.attrs.ints[0], node.where);
  Array flat = zeros({size}, node.type.dtype, node.where);
  Array summed = scatter_add(flat, reshape(linear, {size}), reshape(cotangent, {size}), 0, node.where);
  return {reshape(summed, shape, node.where)};
}

// ---- cumprod's derivative --------------------------------------------------------
//
// d out[j] / d x[k] = prod_{i <= j, i != k} x[i] (i >= j when reversed). Before
// a line's first zero z that is out[j] / x[k]; at z it is the running
// product with x[z] taken as 1; past z every such product holds a zero.

Array running(Primitive op, const Array& x, const Node& node, bool flip_direction = false) {
  ir::Attributes attrs;
  attrs.ints = {node.attrs.ints[0], (node.attrs.ints[1] != 0) != flip_direction ? 1 : 0};
  return detail::apply(op, {x}, std::move(attrs), node.where);
}

struct ZeroSplit {
  Array before;      // no zero yet along the line, this element included
  Array first_zero;  // the line's first zero
  Array safe_x;      // x before the first zero, 1 elsewhere
  Array past;        // the running product with the first zero taken as 1
};

ZeroSplit split_at_first_zero(const Node& node, const Array& x) {
  Array is_zero = x == 0;
  Array zeros_so_far = running(Primitive::cumsum, astype(is_zero, DType::i32), node);
  Array before = zeros_so_far == 0;
  Array first_zero = is_zero & (zeros_so_far == 1);
  return {before, first_zero, where(before, x, 1), running(Primitive::cumprod, where(first_zero, 1, x), node)};
}

Array cumprod_jvp(const Node& node, std::span<const Array> inputs, const Array& output,
                  std::span<const Array> tangents) {
  ZeroSplit s = split_at_first_zero(node, inputs[0]);
  const Array& t = tangents[0];
  Array before = output * running(Primitive::cumsum, t / s.safe_x, node);
  Array after = s.past * running(Primitive::cumsum, where(s.first_zero, t, 0), node);
  return where(s.before, before, after);
}

// The transpose of that jvp: cumsum's transpose runs the other way.
std::vector<Array> cumprod_vjp(const Node& node, std::span<const Array> inputs, const Array& output,
                               const Array& cotangent) {
  ZeroSplit s = split_at_first_zero(node, inputs[0]);
  Array zero = zeros_like(cotangent);
  Array before = running(Primitive::cumsum, where(s.before, cotangent * output, zero), node, true) / s.safe_x;
  Array at_zero = running(Primitive::cumsum, where(s.before, zero, cotangent * s.past), node, true);
  return {where(s.before, before, where(s.first_zero, at_zero, zero))};
}

constexpr const char* cumulative_waiver = "runs its reference kernel: one pass along each line";

}  // namespace

void register_cumulative_rules(RuleTable& table) {
  for (Primitive op : {Primitive::cummax, Primitive::cummin})
    table[static_cast<size_t>(op)] = {.infer = &infer_cumulative,
                                      .evaluate = &evaluate_cumulative,
                                      .describe = &describe_cumulative,
                                      .vjp = &cumulative_vjp,
                                      .jvp = &cumulative_jvp,
                                      .batch = &batch_shifting_first_int,
                                      .fusion = Fusion::kernel,
                                      .no_native_lowering = cumulative_waiver};
  table[static_cast<size_t>(Primitive::cumprod)] = {.infer = &infer_cumulative,
                                                    .evaluate = &evaluate_cumprod,
                                                    .describe = &describe_cumulative,
                                                    .vjp = &cumprod_vjp,
                                                    .jvp = &cumprod_jvp,
                                                    .batch = &batch_shifting_first_int,
                                                    .fusion = Fusion::kernel,
                                                    .no_native_lowering = cumulative_waiver};
}

}  // namespace ops

namespace {

Array cumulative(ops::Primitive op, const char* name, const Array& x, std::optional<int64_t> axis, Location where) {
  const detail::AbstractValue& type = detail::impl_of(x, name, where).type;
  // As cumsum: no axis runs along the flattened array.
  Array operand = x;
  int64_t normalized = 0;
  if (axis && type.ndim() > 0) normalized = ops::normalize_axis(*axis, type.ndim(), name, type.shape, where);
  else operand = reshape(x, {type.size()}, where);
  ir::Attributes attrs;
  attrs.ints = {normalized};
  return detail::apply(op, {operand}, std::move(attrs), where);
}

}  // namespace

Array cummax(const Array& x, std::optional<int64_t> axis, Location where) {
  return cumulative(ops::Primitive::cummax, "cummax", x, axis, where);
}

Array cummin(const Array& x, std::optional<int64_t> axis, Location where) {
  return cumulative(ops::Primitive::cummin, "cummin", x, axis, where);
}

Array cumprod(const Array& x, std::optional<int64_t> axis, bool reverse, Location where) {
  const detail::AbstractValue& type = detail::impl_of(x, "cumprod", where).type;
  Array operand = type.dtype == DType::bool_ ? ops::convert_to(x, DType::i32, false, where) : x;
  int64_t normalized = 0;
  if (axis && type.ndim() > 0) normalized = ops::normalize_axis(*axis, type.ndim(), "cumprod", type.shape, where);
  else operand = reshape(operand, {type.size()}, where);
  ir::Attributes attrs;
  attrs.ints = {normalized, reverse ? 1 : 0};
  return detail::apply(ops::Primitive::cumprod, {operand}, std::move(attrs), where);
}

}  // namespace kiln
