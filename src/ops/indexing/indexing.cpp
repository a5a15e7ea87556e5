// Indexing primitives: take (gather along one axis), scatter_add (its
// transpose), dynamic_slice and dynamic_update_slice — shape rules, reference
// kernels and the public builders, with the composites take_along_axis and
// one_hot.
//
// Out-of-range indices are defined behaviour, identical eagerly and compiled:
// a negative index counts from the end once, then every index is clamped into
// the axis (take, scatter_add); dynamic starts are wrapped the same way and
// then clamped so the whole window fits (as JAX does).
#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <limits>

#include "core/dispatch.h"
#include "core/error_format.h"
#include "core/wrapping.h"
#include "ops/common/apply.h"
#include "ops/common/axes.h"
#include "ops/common/batching.h"
#include "ops/common/promotion.h"
#include "ops/indexing/gather_scatter.h"

namespace kiln {
namespace ops {
namespace {

bool is_index_dtype(DType dtype) { return dtype == DType::i32 || dtype == DType::i64; }

int64_t product(const Shape& shape, size_t begin, size_t end) {
  int64_t result = 1;
  for (size_t i = begin; i < end; ++i) result *= shape[i];
  return result;
}

/// x.shape[:axis] + indices.shape + x.shape[axis+1:]
Shape take_shape(const Shape& x, const Shape& indices, int64_t axis) {
  Shape result(x.begin(), x.begin() + axis);
  result.insert(result.end(), indices.begin(), indices.end());
  result.insert(result.end(), x.begin() + axis + 1, x.end());
  return result;
}

// The checks take and scatter_add share; returns the gathered shape.
Shape check_gather(std::string_view name, const AbstractValue& x, const AbstractValue& indices, int64_t axis,
                   Location where) {
  if (!is_index_dtype(indices.dtype))
    detail::raise(name, "indices must be i32 or i64, got " + indices.to_string(), where,
                  "convert them with astype(indices, kiln::i32)");
  if (axis < 0 || axis >= x.ndim())
    detail::raise(name, "axis " + std::to_string(axis) + " is out of range for " + x.to_string(), where);
  if (x.shape[static_cast<size_t>(axis)] == 0 && indices.size() > 0)
    detail::raise(name,
                  "cannot index axis " + std::to_string(axis) + " of " + x.to_string() + " (extent 0) with indices " +
                      indices.to_string(),
                  where, "an empty axis has no element to read; use empty indices or a non-empty axis");
  return take_shape(x.shape, indices.shape, axis);
}

AbstractValue infer_take(const Node& node, std::span<const AbstractValue* const> inputs) {
  if (inputs.size() != 2)
    detail::raise("take", "takes 2 operands (x, indices), got " + std::to_string(inputs.size()), node.where);
  const AbstractValue& x = *inputs[0];
  Shape shape = check_gather("take", x, *inputs[1], node.attrs.ints.at(0), node.where);
  return {x.dtype, x.weak, std::move(shape)};
}

AbstractValue infer_scatter_add(const Node& node, std::span<const AbstractValue* const> inputs) {
  if (inputs.size() != 3)
    detail::raise("scatter_add", "takes 3 operands (x, indices, updates), got " + std::to_string(inputs.size()),
                  node.where);
  const AbstractValue& x = *inputs[0];
  const AbstractValue& updates = *inputs[2];
  Shape expected = check_gather("scatter_add", x, *inputs[1], node.attrs.ints.at(0), node.where);
  if (updates.dtype != x.dtype || updates.shape != expected)
    detail::raise("scatter_add",
                  "updates must be " + std::string(dtype_name(x.dtype)) + shape_string(expected) +
                      " (the shape of take(x, indices, axis)) for x " + x.to_string() + " and indices " +
                      inputs[1]->to_string() + ", got " + updates.to_string(),
                  node.where);
  return x;
}

/// The indices as int64, each wrapped once if negative and clamped into [0, extent).
std::vector<int64_t> normalized_indices(const Array& indices, int64_t extent) {
  const detail::ArrayImpl& impl = *detail::impl(indices);
  std::vector<int64_t> result(static_cast<size_t>(impl.type.size()));
  auto normalize = [&](int64_t index) {
    if (index < 0) index += extent;
    return std::clamp<int64_t>(index, 0, extent - 1);
  };
  if (impl.type.dtype == DType::i32) {
    const int32_t* data = impl.data<int32_t>();
    for (size_t i = 0; i < result.size(); ++i) result[i] = normalize(data[i]);
  } else {
    const int64_t* data = impl.data<int64_t>();
    for (size_t i = 0; i < result.size(); ++i) result[i] = normalize(data[i]);
  }
  return result;
}

// x viewed as [outer, extent, inner] around the indexed axis.
struct AxisView {
  int64_t outer, extent, inner;
};

AxisView view_around(const Shape& shape, int64_t axis) {
  auto a = static_cast<size_t>(axis);
  return {product(shape, 0, a), shape[a], product(shape, a + 1, shape.size())};
}

Array evaluate_take(const Node& node, std::span<const Array> inputs) {
  const detail::ArrayImpl& x = *detail::impl(inputs[0]);
  AxisView view = view_around(x.type.shape, node.attrs.ints[0]);
  Array result = detail::allocate(node.type);
  if (node.type.size() == 0) return result;
  std::vector<int64_t> indices = normalized_indices(inputs[1], view.extent);
  auto count = static_cast<int64_t>(indices.size());
  detail::dispatch(x.type.dtype, [&]<class T>() {
    const T* in = x.data<T>();
    T* out = detail::impl(result)->mutable_data<T>();
    for (int64_t o = 0; o < view.outer; ++o)
      for (int64_t j = 0; j < count; ++j) {
        const T* row = in + (o * view.extent + indices[static_cast<size_t>(j)]) * view.inner;
        std::copy(row, row + view.inner, out + (o * count + j) * view.inner);
      }
  });
  return result;
}

template <class T>
T accumulate(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) return a || b;
  else if constexpr (std::is_integral_v<T>) {
    using U = detail::wrapping_type<T>;  // wraps like NumPy, without UB
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else return a + b;
}

Array evaluate_scatter_add(const Node& node, std::span<const Array> inputs) {
  const detail::ArrayImpl& x = *detail::impl(inputs[0]);
  const detail::ArrayImpl& updates = *detail::impl(inputs[2]);
  AxisView view = view_around(x.type.shape, node.attrs.ints[0]);
  Array result = detail::allocate(node.type);
  if (node.type.size() == 0) return result;
  std::memcpy(detail::impl(result)->buffer->data(), x.buffer->data(),
              static_cast<size_t>(x.type.size()) * dtype_size(x.type.dtype));
  if (updates.type.size() == 0) return result;
  std::vector<int64_t> indices = normalized_indices(inputs[1], view.extent);
  auto count = static_cast<int64_t>(indices.size());
  detail::dispatch(x.type.dtype, [&]<class T>() {
    const T* from = updates.data<T>();
    T* out = detail::impl(result)->mutable_data<T>();
    for (int64_t o = 0; o < view.outer; ++o)
      for (int64_t j = 0; j < count; ++j) {
        T* row = out + (o * view.extent + indices[static_cast<size_t>(j)]) * view.inner;
        const T* source = from + (o * count + j) * view.inner;
        for (int64_t i = 0; i < view.inner; ++i) row[i] = accumulate(row[i], source[i]);
      }
  });
  return result;
}

std::string describe_axis(const Node& node) { return "axis=" + std::to_string(node.attrs.ints[0]); }

// ---- dynamic_slice / dynamic_update_slice ---------------------------------------

void check_starts(std::string_view name, const AbstractValue& x, std::span<const AbstractValue* const> starts,
                  Location where) {
  if (static_cast<int64_t>(starts.size()) != x.ndim())
    detail::raise(name,
                  "needs one start per axis of " + x.to_string() + " (" + std::to_string(x.ndim()) + "), got " +
                      std::to_string(starts.size()),
                  where);
  for (size_t i = 0; i < starts.size(); ++i)
    if (!is_index_dtype(starts[i]->dtype) || starts[i]->ndim() != 0)
      detail::raise(name, "start " + std::to_string(i) + " must be a 0-d i32 or i64, got " + starts[i]->to_string(),
                    where);
}

AbstractValue infer_dynamic_slice(const Node& node, std::span<const AbstractValue* const> inputs) {
  if (inputs.empty()) detail::raise("dynamic_slice", "needs an operand", node.where);
  const AbstractValue& x = *inputs[0];
  check_starts("dynamic_slice", x, inputs.subspan(1), node.where);
  const Shape& sizes = node.attrs.shape;
  bool fits = sizes.size() == x.shape.size();
  for (size_t i = 0; fits && i < sizes.size(); ++i) fits = sizes[i] >= 0 && sizes[i] <= x.shape[i];
  if (!fits)
    detail::raise("dynamic_slice", "slice sizes " + shape_string(sizes) + " do not fit in " + x.to_string(), node.where,
                  "each size must be between 0 and the extent of its axis");
  return {x.dtype, x.weak, sizes};
}

AbstractValue infer_dynamic_update_slice(const Node& node, std::span<const AbstractValue* const> inputs) {
  if (inputs.size() < 2) detail::raise("dynamic_update_slice", "needs an operand and an update", node.where);
  const AbstractValue& x = *inputs[0];
  const AbstractValue& update = *inputs[1];
  check_starts("dynamic_update_slice", x, inputs.subspan(2), node.where);
  bool fits = update.dtype == x.dtype && update.ndim() == x.ndim();
  for (size_t i = 0; fits && i < x.shape.size(); ++i) fits = update.shape[i] <= x.shape[i];
  if (!fits)
    detail::raise(
        "dynamic_update_slice",
        "update " + update.to_string() + " must have the dtype and rank of " + x.to_string() + " and fit inside it",
        node.where);
  return x;
}

int64_t read_start(const Array& start) {
  const detail::ArrayImpl& impl = *detail::impl(start);
  return impl.type.dtype == DType::i32 ? impl.data<int32_t>()[0] : impl.data<int64_t>()[0];
}

/// Each start wrapped once if negative, then clamped so a window of `window`
/// fits inside `shape`.
std::vector<int64_t> clamped_starts(std::span<const Array> starts, const Shape& shape, const Shape& window) {
  std::vector<int64_t> result(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t start = read_start(starts[i]);
    if (start < 0) start += shape[i];
    result[i] = std::clamp<int64_t>(start, 0, shape[i] - window[i]);
  }
  return result;
}

/// Calls copy(window_offset, x_offset) for every element of a window of
/// shape `window` placed at `starts` in an array of shape `shape`, row-major.
template <class F>
void for_each_in_window(const Shape& shape, const Shape& window, const std::vector<int64_t>& starts, F&& copy) {
  int64_t count = shape_size(window);
  if (count == 0) return;
  size_t rank = shape.size();
  std::vector<int64_t> strides(rank, 1);
  for (size_t a = rank; a-- > 1;) strides[a - 1] = strides[a] * shape[a];
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t offset = 0;
    for (size_t a = 0; a < rank; ++a) offset += (starts[a] + index[a]) * strides[a];
    copy(i, offset);
    for (size_t a = rank; a-- > 0;) {
      if (++index[a] < window[a]) break;
      index[a] = 0;
    }
  }
}

Array evaluate_dynamic_slice(const Node& node, std::span<const Array> inputs) {
  const detail::ArrayImpl& x = *detail::impl(inputs[0]);
  Array result = detail::allocate(node.type);
  std::vector<int64_t> starts = clamped_starts(inputs.subspan(1), x.type.shape, node.type.shape);
  detail::dispatch(x.type.dtype, [&]<class T>() {
    const T* in = x.data<T>();
    T* out = detail::impl(result)->mutable_data<T>();
    for_each_in_window(x.type.shape, node.type.shape, starts, [&](int64_t i, int64_t source) { out[i] = in[source]; });
  });
  return result;
}

Array evaluate_dynamic_update_slice(const Node& node, std::span<const Array> inputs) {
  const detail::ArrayImpl& x = *detail::impl(inputs[0]);
  const detail::ArrayImpl& update = *detail::impl(inputs[1]);
  Array result = detail::allocate(node.type);
  if (node.type.size() == 0) return result;
  std::memcpy(detail::impl(result)->buffer->data(), x.buffer->data(),
              static_cast<size_t>(x.type.size()) * dtype_size(x.type.dtype));
  std::vector<int64_t> starts = clamped_starts(inputs.subspan(2), x.type.shape, update.type.shape);
  detail::dispatch(x.type.dtype, [&]<class T>() {
    const T* in = update.data<T>();
    T* out = detail::impl(result)->mutable_data<T>();
    for_each_in_window(x.type.shape, update.type.shape, starts,
                       [&](int64_t i, int64_t target) { out[target] = in[i]; });
  });
  return result;
}

std::string describe_dynamic_slice(const Node& node) { return "sizes=" + shape_string(node.attrs.shape); }

// ---- derivative rules ---------------------------------------------------------------
//
// Each rule reuses the node's own attributes and start/index inputs, so the
// transposes normalize indices and clamp starts exactly as the primal did:
// a repeated or clamped index accumulates in scatter_add, a clamped window is
// written back at the same clamped place.

/// Zeros of `like`'s type (weak flag included), as a graph-friendly broadcast.
Array zeros_of(const Array& like, Location where) {
  const AbstractValue& type = detail::impl(like)->type;
  return broadcast_to_shape(detail::literal(0, type.dtype, type.weak, where), type.shape, where);
}

const Array& tangent_or_zeros(const Array& tangent, const Array& primal, Array& storage, Location where) {
  if (tangent.defined()) return tangent;
  storage = zeros_of(primal, where);
  return storage;
}

/// The operands `leading` followed by `rest` (the node's index or start operands).
std::vector<Array> with_operands(std::initializer_list<Array> leading, std::span<const Array> rest) {
  std::vector<Array> result(leading);
  result.insert(result.end(), rest.begin(), rest.end());
  return result;
}

std::vector<Array> vjp_take(const Node& node, std::span<const Array> inputs, const Array&, const Array& cotangent) {
  Array x_cotangent = detail::apply(Primitive::scatter_add, {zeros_of(inputs[0], node.where), inputs[1], cotangent},
                                    node.attrs, node.where);
  return {x_cotangent, Array()};
}

Array jvp_take(const Node& node, std::span<const Array> inputs, const Array& output, std::span<const Array> tangents) {
  if (!tangents[0].defined()) return zeros_of(output, node.where);
  return detail::apply(Primitive::take, {tangents[0], inputs[1]}, node.attrs, node.where);
}

std::vector<Array> vjp_scatter_add(const Node& node, std::span<const Array> inputs, const Array&,
                                   const Array& cotangent) {
  Array updates_cotangent = detail::apply(Primitive::take, {cotangent, inputs[1]}, node.attrs, node.where);
  return {cotangent, Array(), updates_cotangent};
}

Array jvp_scatter_add(const Node& node, std::span<const Array> inputs, const Array&, std::span<const Array> tangents) {
  // scatter_add is linear in (x, updates) jointly; a zero updates tangent adds nothing.
  if (!tangents[2].defined()) return tangents[0];
  Array storage;
  const Array& x_tangent = tangent_or_zeros(tangents[0], inputs[0], storage, node.where);
  return detail::apply(Primitive::scatter_add, {x_tangent, inputs[1], tangents[2]}, node.attrs, node.where);
}

std::vector<Array> vjp_dynamic_slice(const Node& node, std::span<const Array> inputs, const Array&,
                                     const Array& cotangent) {
  std::vector<Array> operands = with_operands({zeros_of(inputs[0], node.where), cotangent}, inputs.subspan(1));
  std::vector<Array> result(inputs.size());
  result[0] = detail::apply(Primitive::dynamic_update_slice, operands, {}, node.where);
  return result;
}

Array jvp_dynamic_slice(const Node& node, std::span<const Array> inputs, const Array& output,
                        std::span<const Array> tangents) {
  if (!tangents[0].defined()) return zeros_of(output, node.where);
  return detail::apply(Primitive::dynamic_slice, with_operands({tangents[0]}, inputs.subspan(1)), node.attrs,
                       node.where);
}

std::vector<Array> vjp_dynamic_update_slice(const Node& node, std::span<const Array> inputs, const Array&,
                                            const Array& cotangent) {
  std::span<const Array> starts = inputs.subspan(2);
  std::vector<Array> result(inputs.size());
  // x shows through everywhere except the window the update overwrote.
  result[0] = detail::apply(Primitive::dynamic_update_slice,
                            with_operands({cotangent, zeros_of(inputs[1], node.where)}, starts), {}, node.where);
  ir::Attributes window;
  window.shape = detail::impl(inputs[1])->type.shape;
  result[1] =
      detail::apply(Primitive::dynamic_slice, with_operands({cotangent}, starts), std::move(window), node.where);
  return result;
}

Array jvp_dynamic_update_slice(const Node& node, std::span<const Array> inputs, const Array&,
                               std::span<const Array> tangents) {
  Array x_storage, update_storage;
  const Array& x_tangent = tangent_or_zeros(tangents[0], inputs[0], x_storage, node.where);
  const Array& update_tangent = tangent_or_zeros(tangents[1], inputs[1], update_storage, node.where);
  return detail::apply(Primitive::dynamic_update_slice, with_operands({x_tangent, update_tangent}, inputs.subspan(2)),
                       {}, node.where);
}

// ---- builder helpers ---------------------------------------------------------------

const AbstractValue& type_of(const Array& x, const char* operation, Location where) {
  return detail::impl_of(x, operation, where).type;
}

void require_indices(const char* operation, const AbstractValue& indices, Location where) {
  if (!is_index_dtype(indices.dtype))
    detail::raise(operation, "indices must be i32 or i64, got " + indices.to_string(), where,
                  "convert them with astype(indices, kiln::i32)");
}

Array flatten(const Array& x, Location where) {
  const AbstractValue& type = detail::impl_of(x, "reshape", where).type;
  if (type.ndim() == 1) return x;
  ir::Attributes attrs;
  attrs.shape = {type.size()};
  return detail::apply(Primitive::reshape, {x}, std::move(attrs), where);
}

Array apply_take(const Array& x, const Array& indices, int64_t axis, Location where) {
  ir::Attributes attrs;
  attrs.ints = {axis};
  return detail::apply(Primitive::take, {x, indices}, std::move(attrs), where);
}

/// A dynamic start as a 0-d integer array: numbers become literals.
Array start_array(const Operand& start, const char* operation, size_t position, Location where) {
  if (start.is_number()) {
    const Scalar& value = start.number();
    if (value.kind() != Scalar::Kind::integer)
      detail::raise(operation, "start " + std::to_string(position) + " must be an integer, got " + value.to_string(),
                    where);
    int64_t v = value.as_int();
    bool fits_i32 = v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
    return detail::literal(value, fits_i32 ? DType::i32 : DType::i64, false, where);
  }
  const AbstractValue& type = type_of(start.array(), operation, where);
  if (!is_index_dtype(type.dtype) || type.ndim() != 0)
    detail::raise(operation, "start " + std::to_string(position) + " must be a 0-d i32 or i64, got " + type.to_string(),
                  where, "pass a number or a 0-d integer array per axis");
  return start.array();
}

/// Starts as 0-d arrays of one integer dtype (i64 if any is i64), one per axis.
std::vector<Array> start_arrays(const std::vector<Operand>& starts, const AbstractValue& x, const char* operation,
                                Location where) {
  if (static_cast<int64_t>(starts.size()) != x.ndim())
    detail::raise(operation,
                  "needs one start per axis of " + x.to_string() + " (" + std::to_string(x.ndim()) + "), got " +
                      std::to_string(starts.size()),
                  where);
  std::vector<Array> arrays;
  bool any_i64 = false;
  for (size_t i = 0; i < starts.size(); ++i) {
    arrays.push_back(start_array(starts[i], operation, i, where));
    any_i64 = any_i64 || arrays.back().dtype() == DType::i64;
  }
  for (Array& start : arrays) start = convert_to(start, any_i64 ? DType::i64 : DType::i32, false, where);
  return arrays;
}

}  // namespace

void register_indexing_rules(RuleTable& table) {
  table[static_cast<size_t>(Primitive::take)] = {.infer = &infer_take,
                                                 .evaluate = &evaluate_take,
                                                 .describe = &describe_axis,
                                                 .vjp = &vjp_take,
                                                 .jvp = &jvp_take,
                                                 .batch = &batch_take,
                                                 .fusion = Fusion::kernel,
                                                 .kernel = NativeKernel::take};
  table[static_cast<size_t>(Primitive::scatter_add)] = {.infer = &infer_scatter_add,
                                                        .evaluate = &evaluate_scatter_add,
                                                        .describe = &describe_axis,
                                                        .vjp = &vjp_scatter_add,
                                                        .jvp = &jvp_scatter_add,
                                                        .batch = &batch_scatter_add,
                                                        .fusion = Fusion::kernel,
                                                        .kernel = NativeKernel::scatter_add};
  table[static_cast<size_t>(Primitive::dynamic_slice)] = {.infer = &infer_dynamic_slice,
                                                          .evaluate = &evaluate_dynamic_slice,
                                                          .describe = &describe_dynamic_slice,
                                                          .vjp = &vjp_dynamic_slice,
                                                          .jvp = &jvp_dynamic_slice,
                                                          .batch = &batch_dynamic_slice,
                                                          .fusion = Fusion::kernel,
                                                          .kernel = NativeKernel::dynamic_slice};
  table[static_cast<size_t>(Primitive::dynamic_update_slice)] = {.infer = &infer_dynamic_update_slice,
                                                                 .evaluate = &evaluate_dynamic_update_slice,
                                                                 .describe = nullptr,
                                                                 .vjp = &vjp_dynamic_update_slice,
                                                                 .jvp = &jvp_dynamic_update_slice,
                                                                 .batch = &batch_dynamic_update_slice,
                                                                 .fusion = Fusion::kernel,
                                                                 .kernel = NativeKernel::dynamic_update_slice};
}

Array flat_positions(const Shape& source, const Array& coordinate, int64_t axis, Location where) {
  const AbstractValue& type = detail::impl_of(coordinate, "take_along_axis", where).type;
  int64_t stride = 1;
  Array linear;
  for (size_t d = type.shape.size(); d-- > 0;) {
    Array term;
    if (static_cast<int64_t>(d) == axis) term = coordinate;
    else if (source[d] != 1) term = iota(type.dtype, type.shape, static_cast<int64_t>(d), where);
    if (term.defined()) {
      if (stride != 1) term = term * stride;
      linear = linear.defined() ? linear + term : term;
    }
    stride *= source[d];
  }
  return linear;
}

}  // namespace ops

using ops::Primitive;

Array take(const Array& x, const Array& indices, std::optional<int64_t> axis, Location where) {
  const auto& x_type = ops::type_of(x, "take", where);
  ops::require_indices("take", ops::type_of(indices, "take", where), where);
  if (!axis) {
    if (x_type.size() == 0 && indices.size() > 0)
      detail::raise("take",
                    "cannot index the empty array " + x_type.to_string() + " with indices " +
                        ops::type_of(indices, "take", where).to_string(),
                    where, "an empty array has no element to read");
    return ops::apply_take(ops::flatten(x, where), indices, 0, where);
  }
  int64_t a = ops::normalize_axis(*axis, x_type.ndim(), "take", x_type.shape, where);
  return ops::apply_take(x, indices, a, where);
}

namespace ops {
AlongAxisShape along_axis_shape(const char* operation, const AbstractValue& x_type, const AbstractValue& index_type,
                                int64_t axis, Location where) {
  if (index_type.ndim() != x_type.ndim())
    detail::raise(operation, "indices " + index_type.to_string() + " must have the rank of x " + x_type.to_string(),
                  where, "add axes of extent 1 with expand_dims");
  int64_t a = normalize_axis(axis, x_type.ndim(), operation, x_type.shape, where);
  // NumPy: the other axes broadcast between x and indices.
  Shape shape(x_type.shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t xe = x_type.shape[d], ie = index_type.shape[d];
    if (d == static_cast<size_t>(a)) shape[d] = ie;
    else if (xe == ie || ie == 1) shape[d] = xe;
    else if (xe == 1) shape[d] = ie;
    else
      detail::raise(operation,
                    "x " + x_type.to_string() + " and indices " + index_type.to_string() +
                        " do not broadcast along axis " + std::to_string(d),
                    where, "axes other than `axis` must be equal or 1");
  }
  return {a, std::move(shape)};
}
}  // namespace ops

Array take_along_axis(const Array& x, const Array& indices, int64_t axis, Location where) {
  detail::OperationScope at("take_along_axis", where);
  const auto& x_type = ops::type_of(x, "take_along_axis", where);
  const auto& index_type = ops::type_of(indices, "take_along_axis", where);
  ops::require_indices("take_along_axis", index_type, where);
  auto [a, shape] = ops::along_axis_shape("take_along_axis", x_type, index_type, axis, where);
  auto ax = static_cast<size_t>(a);
  int64_t extent = x_type.shape[ax];
  if (extent == 0 && shape_size(shape) > 0)
    detail::raise("take_along_axis",
                  "cannot index axis " + std::to_string(a) + " of " + x_type.to_string() + " (extent 0) with indices " +
                      index_type.to_string(),
                  where, "an empty axis has no element to read");
  // Gather from the flattened x at linear indices, so the derivative is the
  // scatter_add transpose of one take. Indices are normalized first (in their
  // own dtype, so huge values clamp rather than wrap), because clamping a
  // linear index would read the wrong row.
  constexpr int64_t i32_max = std::numeric_limits<int32_t>::max();
  DType linear_dtype = x_type.size() > i32_max ? DType::i64 : DType::i32;
  DType index_dtype = extent > i32_max ? DType::i64 : index_type.dtype;
  Array index = ops::convert_to(indices, index_dtype, false, where);
  Array clamped = clip(kiln::where(index < 0, index + extent, index), 0, std::max<int64_t>(extent - 1, 0));
  Array coordinate = ops::broadcast_to_shape(ops::convert_to(clamped, linear_dtype, false, where), shape, where);
  return ops::apply_take(ops::flatten(x, where), ops::flat_positions(x_type.shape, coordinate, a, where), 0, where);
}

Array dynamic_slice(const Array& x, std::vector<Operand> starts, Shape sizes, Location where) {
  const auto& x_type = ops::type_of(x, "dynamic_slice", where);
  if (sizes.size() != x_type.shape.size())
    detail::raise("dynamic_slice",
                  "needs one slice size per axis of " + x_type.to_string() + ", got sizes " + shape_string(sizes),
                  where);
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] < 0 || sizes[i] > x_type.shape[i])
      detail::raise("dynamic_slice",
                    "slice size " + std::to_string(sizes[i]) + " along axis " + std::to_string(i) +
                        " does not fit in " + x_type.to_string() + " (sizes " + shape_string(sizes) + ")",
                    where, "each size must be between 0 and the extent of its axis");
  std::vector<Array> inputs{x};
  for (Array& start : ops::start_arrays(starts, x_type, "dynamic_slice", where)) inputs.push_back(std::move(start));
  ir::Attributes attrs;
  attrs.shape = std::move(sizes);
  return detail::apply(Primitive::dynamic_slice, inputs, std::move(attrs), where);
}

Array dynamic_update_slice(const Array& x, const Array& update, std::vector<Operand> starts, Location where) {
  const auto& x_type = ops::type_of(x, "dynamic_update_slice", where);
  const auto& update_type = ops::type_of(update, "dynamic_update_slice", where);
  if (update_type.dtype != x_type.dtype)
    detail::raise("dynamic_update_slice",
                  "update " + update_type.to_string() + " must have the dtype of x " + x_type.to_string(), where,
                  "convert it with astype(update, x.dtype())");
  if (update_type.ndim() != x_type.ndim())
    detail::raise("dynamic_update_slice",
                  "update " + update_type.to_string() + " must have the rank of x " + x_type.to_string(), where);
  for (size_t i = 0; i < x_type.shape.size(); ++i)
    if (update_type.shape[i] > x_type.shape[i])
      detail::raise("dynamic_update_slice",
                    "update " + update_type.to_string() + " is larger than x " + x_type.to_string() + " along axis " +
                        std::to_string(i),
                    where);
  std::vector<Array> inputs{x, update};
  for (Array& start : ops::start_arrays(starts, x_type, "dynamic_update_slice", where))
    inputs.push_back(std::move(start));
  return detail::apply(Primitive::dynamic_update_slice, inputs, {}, where);
}

Array scatter_add(const Array& x, const Array& indices, const Array& updates, int64_t axis, Location where) {
  const auto& x_type = ops::type_of(x, "scatter_add", where);
  const auto& index_type = ops::type_of(indices, "scatter_add", where);
  const auto& update_type = ops::type_of(updates, "scatter_add", where);
  ops::require_indices("scatter_add", index_type, where);
  int64_t a = ops::normalize_axis(axis, x_type.ndim(), "scatter_add", x_type.shape, where);
  if (update_type.dtype != x_type.dtype)
    detail::raise("scatter_add",
                  "updates " + update_type.to_string() + " must have the dtype of x " + x_type.to_string(), where,
                  "convert them with astype(updates, x.dtype())");
  ir::Attributes attrs;
  attrs.ints = {a};
  return detail::apply(Primitive::scatter_add, {x, indices, updates}, std::move(attrs), where);
}

Array one_hot(const Array& indices, int64_t num_classes, DType dtype, Location where) {
  detail::OperationScope at("one_hot", where);
  const auto& index_type = ops::type_of(indices, "one_hot", where);
  ops::require_indices("one_hot", index_type, where);
  if (num_classes < 0) detail::raise("one_hot", "num_classes must be >= 0, got " + std::to_string(num_classes), where);
  Shape column = index_type.shape;
  column.push_back(1);
  Shape shape = index_type.shape;
  shape.push_back(num_classes);
  ir::Attributes attrs;
  attrs.shape = column;
  Array expanded =
      ops::broadcast_to_shape(detail::apply(Primitive::reshape, {indices}, std::move(attrs), where), shape, where);
  // Comparing against the class number, not wrapping, gives an out-of-range
  // (or negative) index a row of zeros, as JAX does.
  Array classes = ops::iota(index_type.dtype, shape, static_cast<int64_t>(shape.size()) - 1, where);
  return astype(expanded == classes, dtype);
}

}  // namespace kiln
