// Movement primitives: reshape, transpose, broadcast, slice, concatenate,
// pad, reverse — shape rules, reference kernels, derivative rules and public
// builders (reshape, transpose, broadcast_to, expand_dims, squeeze, slice,
// concatenate, stack, pad, flip).
//
// The primitives take canonical attributes (non-negative, in range, sorted);
// the builders turn NumPy-style arguments into them, report mistakes with
// the user's line, and skip recording a node when the result would equal x.
#include <algorithm>
#include <cstring>
#include <optional>

#include "core/dispatch.h"
#include "core/error_format.h"
#include "ops/common/apply.h"
#include "ops/common/axes.h"
#include "ops/common/batching.h"
#include "ops/common/promotion.h"

namespace kiln {
namespace ops {
namespace {

void expect_arity(const Node& node, size_t count, size_t expected) {
  if (count != expected)
    detail::raise(ir::primitive_name(node.op),
                  "takes " + std::to_string(expected) + " operand(s), got " + std::to_string(count), node.where);
}

/// The number of elements of `shape` (extents >= 0), or nullopt when it does
/// not fit in int64 — such a shape cannot match any array that exists.
std::optional<int64_t> checked_size(const Shape& shape) {
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  int64_t size = 1;
  for (int64_t extent : shape)
    if (__builtin_mul_overflow(size, extent, &size)) return std::nullopt;
  return size;
}

bool all_non_negative(const std::vector<int64_t>& values) {
  return std::all_of(values.begin(), values.end(), [](int64_t v) { return v >= 0; });
}

std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t a = shape.size(); a-- > 0;) {
    strides[a] = stride;
    stride *= shape[a];
  }
  return strides;
}

/// Result element at multi-index `index` (row-major over `type.shape`) is x's
/// element at offset base + sum(index[a] * steps[a]). Broadcast (step 0),
/// transpose (permuted strides), slice (scaled strides) and reverse (negated
/// strides) are all such gathers; their shape rules keep every offset in range.
Array strided_gather(const Array& x, const AbstractValue& type, int64_t base, const std::vector<int64_t>& steps) {
  const detail::ArrayImpl& source = *detail::impl(x);
  Array result = detail::allocate(type);
  const Shape& shape = type.shape;
  size_t rank = shape.size();
  // The extreme offsets bound every offset the loop reads: checking them once
  // keeps a wrong view from reading outside the source without a branch per element.
  int64_t lowest = base, highest = base;
  for (size_t a = 0; a < rank; ++a) {
    int64_t span = (shape[a] - 1) * steps[a];
    (span < 0 ? lowest : highest) += span;
  }
  KILN_CHECK(type.size() == 0 || (lowest >= 0 && highest < source.type.size()),
             "strided_gather: the view reaches outside its source");
  if (type.size() == 0) return result;
  // Row by row along the last axis: a broadcast row is one value repeated,
  // a contiguous one a copy (first calls of jitted graphs run these op by op).
  int64_t inner = rank ? shape[rank - 1] : 1, inner_step = rank ? steps[rank - 1] : 0;
  size_t outer_rank = rank ? rank - 1 : 0;
  detail::dispatch(type.dtype, [&]<class T>() {
    const T* in = source.data<T>();
    T* out = detail::impl(result)->mutable_data<T>();
    std::vector<int64_t> index(outer_rank, 0);
    for (int64_t row = 0, rows = type.size() / inner; row < rows; ++row) {
      int64_t offset = base;
      for (size_t a = 0; a < outer_rank; ++a) offset += index[a] * steps[a];
      T* line = out + row * inner;
      if (inner_step == 0) std::fill(line, line + inner, in[offset]);
      else if (inner_step == 1) std::copy(in + offset, in + offset + inner, line);
      else
        for (int64_t j = 0; j < inner; ++j) line[j] = in[offset + j * inner_step];
      for (size_t a = outer_rank; a-- > 0;) {
        if (++index[a] < shape[a]) break;
        index[a] = 0;
      }
    }
  });
  return result;
}

// Every movement primitive is linear: its jvp is the primitive applied to the
// tangents, and its vjp moves the cotangent back (the transposed movement).

/// The node's own primitive and attributes applied to other operands.
Array apply_like(const Node& node, std::span<const Array> operands) {
  return detail::apply(node.op, operands, node.attrs, node.where);
}

/// The jvp of the one-operand movements; the transform passes a tangent.
Array jvp_movement(const Node& node, std::span<const Array>, const Array&, std::span<const Array> tangents) {
  return apply_like(node, tangents.first(1));
}

/// x[..., begin:end, ...] along one axis.
Array slice_axis(const Array& x, size_t axis, int64_t begin, int64_t end, Location where) {
  std::vector<int64_t> start(x.shape().size(), 0);
  std::vector<int64_t> stop = x.shape();
  start[axis] = begin;
  stop[axis] = end;
  return kiln::slice(x, std::move(start), std::move(stop), {}, where);
}

// ---- reshape -------------------------------------------------------------------

AbstractValue infer_reshape(const Node& node, std::span<const AbstractValue* const> inputs) {
  expect_arity(node, inputs.size(), 1);
  const AbstractValue& x = *inputs[0];
  const Shape& target = node.attrs.shape;
  if (!all_non_negative(target) || checked_size(target) != x.size())
    detail::raise("reshape",
                  "cannot reshape " + x.to_string() + " (" + std::to_string(x.size()) + " elements) into shape " +
                      shape_string(target),
                  node.where, "the number of elements must stay the same");
  return {x.dtype, x.weak, target};
}

Array evaluate_reshape(const Node& node, std::span<const Array> inputs) {
  Array result = detail::allocate(node.type);
  // Row-major order is unchanged by a reshape: the bytes are the same.
  size_t bytes = static_cast<size_t>(node.type.size()) * dtype_size(node.type.dtype);
  if (bytes) std::memcpy(detail::impl(result)->buffer->data(), detail::impl(inputs[0])->buffer->data(), bytes);
  return result;
}

std::string describe_reshape(const Node& node) { return "shape=" + shape_string(node.attrs.shape); }

std::vector<Array> vjp_reshape(const Node& node, std::span<const Array> inputs, const Array&, const Array& cotangent) {
  return {kiln::reshape(cotangent, inputs[0].shape(), node.where)};
}

// ---- transpose -----------------------------------------------------------------

bool is_permutation(const std::vector<int64_t>& perm, size_t rank) {
  if (perm.size() != rank) return false;
  std::vector<bool> seen(rank, false);
  for (int64_t axis : perm) {
    if (axis < 0 || axis >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(axis)]) return false;
    seen[static_cast<size_t>(axis)] = true;
  }
  return true;
}

AbstractValue infer_transpose(const Node& node, std::span<const AbstractValue* const> inputs) {
  expect_arity(node, inputs.size(), 1);
  const AbstractValue& x = *inputs[0];
  const std::vector<int64_t>& perm = node.attrs.ints;
  if (!is_permutation(perm, x.shape.size()))
    detail::raise("transpose", ints_string(perm) + " is not a permutation of the axes of " + x.to_string(), node.where,
                  "list every axis 0.." + std::to_string(x.ndim() - 1) + " exactly once");
  Shape shape(perm.size());
  for (size_t a = 0; a < perm.size(); ++a) shape[a] = x.shape[static_cast<size_t>(perm[a])];
  return {x.dtype, x.weak, shape};
}

Array evaluate_transpose(const Node& node, std::span<const Array> inputs) {
  std::vector<int64_t> strides = row_major_strides(detail::impl(inputs[0])->type.shape);
  std::vector<int64_t> steps(strides.size());
  for (size_t a = 0; a < steps.size(); ++a) steps[a] = strides[static_cast<size_t>(node.attrs.ints[a])];
  return strided_gather(inputs[0], node.type, 0, steps);
}

std::string describe_transpose(const Node& node) { return "perm=" + ints_string(node.attrs.ints); }

std::vector<Array> vjp_transpose(const Node& node, std::span<const Array>, const Array&, const Array& cotangent) {
  const std::vector<int64_t>& perm = node.attrs.ints;
  std::vector<int64_t> inverse(perm.size());
  for (size_t a = 0; a < perm.size(); ++a) inverse[static_cast<size_t>(perm[a])] = static_cast<int64_t>(a);
  return {kiln::transpose(cotangent, std::move(inverse), node.where)};
}

// ---- broadcast -----------------------------------------------------------------

AbstractValue infer_broadcast(const Node& node, std::span<const AbstractValue* const> inputs) {
  expect_arity(node, inputs.size(), 1);
  const AbstractValue& x = *inputs[0];
  const Shape& target = node.attrs.shape;
  bool ok = x.shape.size() <= target.size();
  for (size_t i = 0; ok && i < x.shape.size(); ++i) {
    int64_t extent = x.shape[x.shape.size() - 1 - i];
    ok = extent == 1 || extent == target[target.size() - 1 - i];
  }
  for (int64_t extent : target) ok = ok && extent >= 0;
  if (!ok)
    detail::raise("broadcast_to", "cannot broadcast " + x.to_string() + " to shape " + shape_string(target), node.where,
                  "each trailing dimension must equal the target's or be 1");
  AbstractValue result{x.dtype, x.weak, target};
  detail::check_fits(result, "broadcast_to", node.where, &x);
  return result;
}

Array evaluate_broadcast(const Node& node, std::span<const Array> inputs) {
  const Shape& in_shape = detail::impl(inputs[0])->type.shape;
  std::vector<int64_t> strides = row_major_strides(in_shape);
  size_t offset = node.type.shape.size() - in_shape.size();
  // Leading new axes and stretched axes of extent 1 do not move in the input.
  std::vector<int64_t> steps(node.type.shape.size(), 0);
  for (size_t a = 0; a < in_shape.size(); ++a) steps[a + offset] = in_shape[a] == 1 ? 0 : strides[a];
  return strided_gather(inputs[0], node.type, 0, steps);
}

std::string describe_broadcast(const Node& node) { return "shape=" + shape_string(node.attrs.shape); }

/// Each input element fed every output element it was copied to: sum over
/// the added leading axes and over the stretched axes of extent 1.
std::vector<Array> vjp_broadcast(const Node& node, std::span<const Array> inputs, const Array&,
                                 const Array& cotangent) {
  const Shape& in_shape = inputs[0].shape();
  const Shape& out_shape = node.type.shape;
  size_t offset = out_shape.size() - in_shape.size();
  std::vector<int64_t> axes;
  for (size_t a = 0; a < out_shape.size(); ++a)
    if (a < offset || (in_shape[a - offset] == 1 && out_shape[a] != 1)) axes.push_back(static_cast<int64_t>(a));
  Array summed = axes.empty() ? cotangent : kiln::sum(cotangent, Axes(std::move(axes)), false, node.where);
  return {kiln::reshape(summed, in_shape, node.where)};
}

// ---- slice ---------------------------------------------------------------------

/// Elements in [start, stop) taken every `step` (start <= stop, step >= 1).
int64_t slice_extent(int64_t start, int64_t stop, int64_t step) {
  return stop > start ? (stop - start - 1) / step + 1 : 0;
}

AbstractValue infer_slice(const Node& node, std::span<const AbstractValue* const> inputs) {
  expect_arity(node, inputs.size(), 1);
  const AbstractValue& x = *inputs[0];
  const std::vector<int64_t>& ints = node.attrs.ints;
  size_t rank = x.shape.size();
  bool ok = ints.size() == 3 * rank;
  Shape shape(rank);
  for (size_t a = 0; ok && a < rank; ++a) {
    int64_t start = ints[a], stop = ints[rank + a], step = ints[2 * rank + a];
    ok = 0 <= start && start <= stop && stop <= x.shape[a] && step >= 1;
    if (ok) shape[a] = slice_extent(start, stop, step);
  }
  if (!ok)
    detail::raise("slice", "bad start/stop/step " + ints_string(ints) + " for " + x.to_string(), node.where,
                  "the primitive needs 0 <= start <= stop <= extent and step >= 1 per axis");
  return {x.dtype, x.weak, shape};
}

Array evaluate_slice(const Node& node, std::span<const Array> inputs) {
  std::vector<int64_t> strides = row_major_strides(detail::impl(inputs[0])->type.shape);
  size_t rank = strides.size();
  int64_t base = 0;
  std::vector<int64_t> steps(rank);
  for (size_t a = 0; a < rank; ++a) {
    base += node.attrs.ints[a] * strides[a];
    steps[a] = node.attrs.ints[2 * rank + a] * strides[a];
  }
  // An empty result reads nothing, and base may then sit one past the end.
  if (node.type.size() == 0) return detail::allocate(node.type);
  return strided_gather(inputs[0], node.type, base, steps);
}

std::string describe_slice(const Node& node) {
  const std::vector<int64_t>& ints = node.attrs.ints;
  size_t rank = ints.size() / 3;
  auto part = [&](size_t which) {
    return ints_string(std::vector<int64_t>(ints.begin() + static_cast<std::ptrdiff_t>(which * rank),
                                            ints.begin() + static_cast<std::ptrdiff_t>((which + 1) * rank)));
  };
  return "start=" + part(0) + " stop=" + part(1) + " step=" + part(2);
}

/// The cotangent put back where the slice read, zeros elsewhere. A strided
/// axis first gets step - 1 zeros after each element: [n] -> [n, 1] -> pad
/// -> [n, step] -> [n * step], cut where it would pass the input's end (the
/// last element always fits); then a pad shifts everything to `start` and
/// fills up to the input's extent. (count - 1) * step < extent, so nothing
/// here overflows.
std::vector<Array> vjp_slice(const Node& node, std::span<const Array> inputs, const Array&, const Array& cotangent) {
  const Shape& in_shape = inputs[0].shape();
  const Shape& out_shape = node.type.shape;
  const std::vector<int64_t>& ints = node.attrs.ints;
  size_t rank = in_shape.size();
  Shape split, no_padding, gaps, spread, kept(out_shape);
  bool strided = false;
  for (size_t a = 0; a < rank; ++a) {
    int64_t count = out_shape[a], step = ints[2 * rank + a];
    split.push_back(count);
    no_padding.push_back(0);
    gaps.push_back(0);
    spread.push_back(count);
    if (step > 1 && count > 1) {
      strided = true;
      split.push_back(1);
      no_padding.push_back(0);
      gaps.push_back(step - 1);
      spread.back() = count * step;
      kept[a] = std::min(count * step, in_shape[a] - ints[a]);
    }
  }
  Array placed = cotangent;
  if (strided) {
    placed = kiln::reshape(placed, split, node.where);
    placed = kiln::pad(placed, no_padding, gaps, 0, node.where);
    placed = kiln::reshape(placed, spread, node.where);
    placed = kiln::slice(placed, std::vector<int64_t>(rank, 0), kept, {}, node.where);
  }
  std::vector<int64_t> lo(ints.begin(), ints.begin() + static_cast<std::ptrdiff_t>(rank)), hi(rank);
  for (size_t a = 0; a < rank; ++a) hi[a] = in_shape[a] - lo[a] - kept[a];
  return {kiln::pad(placed, std::move(lo), std::move(hi), 0, node.where)};
}

// ---- concatenate ---------------------------------------------------------------

std::string types_string(std::span<const AbstractValue* const> inputs) {
  std::string text;
  for (size_t i = 0; i < inputs.size(); ++i) text += (i ? ", " : "") + inputs[i]->to_string();
  return text;
}

AbstractValue infer_concatenate(const Node& node, std::span<const AbstractValue* const> inputs) {
  if (inputs.empty()) detail::raise("concatenate", "needs at least one operand", node.where);
  const AbstractValue& first = *inputs[0];
  int64_t axis = node.attrs.ints.size() == 1 ? node.attrs.ints[0] : -1;
  if (axis < 0 || axis >= first.ndim())
    detail::raise("concatenate",
                  "axis attribute " + ints_string(node.attrs.ints) + " is invalid for " + types_string(inputs),
                  node.where);
  Shape shape = first.shape;
  bool weak = true;
  shape[static_cast<size_t>(axis)] = 0;
  for (const AbstractValue* input : inputs) {
    bool same = input->dtype == first.dtype && input->ndim() == first.ndim();
    for (size_t a = 0; same && a < shape.size(); ++a)
      same = static_cast<int64_t>(a) == axis || input->shape[a] == first.shape[a];
    if (!same)
      detail::raise("concatenate",
                    "operands must share dtype and all dimensions but axis " + std::to_string(axis) + ", got " +
                        types_string(inputs),
                    node.where);
    if (__builtin_add_overflow(shape[static_cast<size_t>(axis)], input->shape[static_cast<size_t>(axis)],
                               &shape[static_cast<size_t>(axis)]))
      detail::raise("concatenate", "result is too large for " + types_string(inputs), node.where);
    weak = weak && input->weak;
  }
  return {first.dtype, weak, shape};
}

Array evaluate_concatenate(const Node& node, std::span<const Array> inputs) {
  Array result = detail::allocate(node.type);
  const Shape& shape = node.type.shape;
  size_t axis = static_cast<size_t>(node.attrs.ints[0]);
  int64_t outer = 1, inner = 1;
  for (size_t a = 0; a < axis; ++a) outer *= shape[a];
  for (size_t a = axis + 1; a < shape.size(); ++a) inner *= shape[a];
  size_t element = dtype_size(node.type.dtype);
  auto* out = static_cast<unsigned char*>(detail::impl(result)->buffer->data());
  // Row-major: for each position before the axis, the inputs' blocks follow one another.
  for (int64_t o = 0; o < outer; ++o) {
    for (const Array& input : inputs) {
      const detail::ArrayImpl& impl = *detail::impl(input);
      size_t block = static_cast<size_t>(impl.type.shape[axis] * inner) * element;
      if (block == 0) continue;
      std::memcpy(out, static_cast<const unsigned char*>(impl.buffer->data()) + static_cast<size_t>(o) * block, block);
      out += block;
    }
  }
  return result;
}

std::string describe_concatenate(const Node& node) { return "axis=" + std::to_string(node.attrs.ints.at(0)); }

// The builder converted every operand to the result's dtype, so all are floating here.
std::vector<Array> vjp_concatenate(const Node& node, std::span<const Array> inputs, const Array&,
                                   const Array& cotangent) {
  size_t axis = static_cast<size_t>(node.attrs.ints[0]);
  std::vector<Array> result;
  int64_t offset = 0;
  for (const Array& input : inputs) {
    int64_t extent = input.shape()[axis];
    result.push_back(slice_axis(cotangent, axis, offset, offset + extent, node.where));
    offset += extent;
  }
  return result;
}

Array jvp_concatenate(const Node& node, std::span<const Array> inputs, const Array&, std::span<const Array> tangents) {
  std::vector<Array> operands;
  for (size_t k = 0; k < inputs.size(); ++k)
    operands.push_back(tangents[k].defined() ? tangents[k]
                                             : kiln::zeros(inputs[k].shape(), node.type.dtype, node.where));
  return apply_like(node, operands);
}

// ---- pad -----------------------------------------------------------------------

AbstractValue infer_pad(const Node& node, std::span<const AbstractValue* const> inputs) {
  expect_arity(node, inputs.size(), 2);
  const AbstractValue& x = *inputs[0];
  const AbstractValue& value = *inputs[1];
  if (value.dtype != x.dtype || value.ndim() != 0)
    detail::raise("pad",
                  "padding value must be a 0-d " + std::string(dtype_name(x.dtype)) + " for " + x.to_string() +
                      ", got " + value.to_string(),
                  node.where);
  const std::vector<int64_t>& ints = node.attrs.ints;
  size_t rank = x.shape.size();
  bool ok = ints.size() == 2 * rank && all_non_negative(ints);
  Shape shape(rank);
  for (size_t a = 0; ok && a < rank; ++a)
    ok = !__builtin_add_overflow(x.shape[a], ints[a], &shape[a]) &&
         !__builtin_add_overflow(shape[a], ints[rank + a], &shape[a]);
  if (!ok || !checked_size(shape))
    detail::raise("pad", "bad padding lo..., hi... " + ints_string(ints) + " for " + x.to_string(), node.where,
                  "the primitive needs one non-negative lo and hi per axis");
  return {x.dtype, x.weak, shape};
}

Array evaluate_pad(const Node& node, std::span<const Array> inputs) {
  const detail::ArrayImpl& x = *detail::impl(inputs[0]);
  Array result = detail::allocate(node.type);
  const Shape& out_shape = node.type.shape;
  size_t rank = out_shape.size();
  std::vector<int64_t> out_strides = row_major_strides(out_shape);
  int64_t base = 0;
  for (size_t a = 0; a < rank; ++a) base += node.attrs.ints[a] * out_strides[a];
  detail::dispatch(node.type.dtype, [&]<class T>() {
    T* out = detail::impl(result)->mutable_data<T>();
    std::fill_n(out, node.type.size(), detail::impl(inputs[1])->data<T>()[0]);
    const T* in = x.data<T>();
    // Scatter x's elements to their shifted positions in the result.
    std::vector<int64_t> index(rank, 0);
    for (int64_t i = 0, n = x.type.size(); i < n; ++i) {
      int64_t offset = base;
      for (size_t a = 0; a < rank; ++a) offset += index[a] * out_strides[a];
      out[offset] = in[i];
      for (size_t a = rank; a-- > 0;) {
        if (++index[a] < x.type.shape[a]) break;
        index[a] = 0;
      }
    }
  });
  return result;
}

std::string describe_pad(const Node& node) {
  const std::vector<int64_t>& ints = node.attrs.ints;
  auto middle = ints.begin() + static_cast<std::ptrdiff_t>(ints.size() / 2);
  return "lo=" + ints_string(std::vector<int64_t>(ints.begin(), middle)) +
         " hi=" + ints_string(std::vector<int64_t>(middle, ints.end()));
}

/// x gets the interior; the padding value gets the sum over the padding,
/// taken shell by shell (each axis' lo and hi slabs of what remains) rather
/// than as sum(all) - sum(interior), which cancels badly in f32.
std::vector<Array> vjp_pad(const Node& node, std::span<const Array> inputs, const Array&, const Array& cotangent) {
  const Shape& in_shape = inputs[0].shape();
  const std::vector<int64_t>& ints = node.attrs.ints;
  size_t rank = in_shape.size();
  Array interior = cotangent, padding;
  auto add_sum = [&](int64_t begin, int64_t end, size_t axis) {
    if (begin == end) return;
    Array part = kiln::sum(slice_axis(interior, axis, begin, end, node.where), Axes::all(), false, node.where);
    padding = padding.defined() ? padding + part : part;
  };
  for (size_t a = 0; a < rank; ++a) {
    int64_t lo = ints[a], end = lo + in_shape[a];
    add_sum(0, lo, a);
    add_sum(end, node.type.shape[a], a);
    interior = slice_axis(interior, a, lo, end, node.where);
  }
  if (!padding.defined()) padding = kiln::zeros({}, node.type.dtype, node.where);
  return {interior, padding};
}

Array jvp_pad(const Node& node, std::span<const Array> inputs, const Array&, std::span<const Array> tangents) {
  Array x = tangents[0].defined() ? tangents[0] : kiln::zeros(inputs[0].shape(), node.type.dtype, node.where);
  Array value = tangents[1].defined() ? tangents[1] : kiln::zeros({}, node.type.dtype, node.where);
  return apply_like(node, std::vector<Array>{x, value});
}

// ---- reverse -------------------------------------------------------------------

AbstractValue infer_reverse(const Node& node, std::span<const AbstractValue* const> inputs) {
  expect_arity(node, inputs.size(), 1);
  const AbstractValue& x = *inputs[0];
  const std::vector<int64_t>& axes = node.attrs.ints;
  bool ok = std::is_sorted(axes.begin(), axes.end()) && std::adjacent_find(axes.begin(), axes.end()) == axes.end();
  for (int64_t axis : axes) ok = ok && axis >= 0 && axis < x.ndim();
  if (!ok)
    detail::raise("reverse", "axes " + ints_string(axes) + " are invalid for " + x.to_string(), node.where,
                  "the primitive needs sorted, distinct axes in range");
  return x;
}

Array evaluate_reverse(const Node& node, std::span<const Array> inputs) {
  const Shape& shape = node.type.shape;
  std::vector<int64_t> steps = row_major_strides(shape);
  int64_t base = 0;
  for (int64_t axis : node.attrs.ints) {
    size_t a = static_cast<size_t>(axis);
    if (shape[a] == 0) return detail::allocate(node.type);
    base += (shape[a] - 1) * steps[a];
    steps[a] = -steps[a];
  }
  return strided_gather(inputs[0], node.type, base, steps);
}

std::string describe_reverse(const Node& node) { return "axes=" + ints_string(node.attrs.ints); }

std::vector<Array> vjp_reverse(const Node& node, std::span<const Array>, const Array&, const Array& cotangent) {
  return {apply_like(node, std::span<const Array>(&cotangent, 1))};
}

// ---- batching: the batch axis is first (ops/common/batching.h) ------------------------

Array batch_reshape(const Node& node, std::span<const Array> inputs, std::span<const char>, int64_t size) {
  ir::Attributes attrs = node.attrs;
  attrs.shape.insert(attrs.shape.begin(), size);
  return detail::apply(node.op, inputs, std::move(attrs), node.where);
}

Array batch_transpose(const Node& node, std::span<const Array> inputs, std::span<const char>, int64_t) {
  std::vector<int64_t> permutation{0};
  for (int64_t axis : node.attrs.ints) permutation.push_back(axis + 1);
  return apply_node_to(node, inputs, std::move(permutation));
}

// Trailing-aligned broadcasting would align the batch axis with a target
// axis: the operand first gets the target's rank after its batch axis.
Array batch_broadcast(const Node& node, std::span<const Array> inputs, std::span<const char>, int64_t size) {
  const Shape& x = detail::impl(inputs[0])->type.shape;
  Shape aligned{size};
  aligned.insert(aligned.end(), node.attrs.shape.size() + 1 - x.size(), 1);
  aligned.insert(aligned.end(), x.begin() + 1, x.end());
  Shape target = node.attrs.shape;
  target.insert(target.begin(), size);
  return broadcast_to(reshape(inputs[0], aligned), target);
}

Array batch_slice(const Node& node, std::span<const Array> inputs, std::span<const char>, int64_t size) {
  const std::vector<int64_t>& ints = node.attrs.ints;
  size_t rank = ints.size() / 3;
  std::vector<int64_t> batched_ints{0};
  batched_ints.insert(batched_ints.end(), ints.begin(), ints.begin() + static_cast<std::ptrdiff_t>(rank));
  batched_ints.push_back(size);
  batched_ints.insert(batched_ints.end(), ints.begin() + static_cast<std::ptrdiff_t>(rank),
                      ints.begin() + static_cast<std::ptrdiff_t>(2 * rank));
  batched_ints.push_back(1);
  batched_ints.insert(batched_ints.end(), ints.begin() + static_cast<std::ptrdiff_t>(2 * rank), ints.end());
  return apply_node_to(node, inputs, std::move(batched_ints));
}

Array batch_pad(const Node& node, std::span<const Array> inputs, std::span<const char> batched, int64_t size) {
  const std::vector<int64_t>& ints = node.attrs.ints;
  size_t rank = ints.size() / 2;
  std::vector<int64_t> batched_ints{0};
  batched_ints.insert(batched_ints.end(), ints.begin(), ints.begin() + static_cast<std::ptrdiff_t>(rank));
  batched_ints.push_back(0);
  batched_ints.insert(batched_ints.end(), ints.begin() + static_cast<std::ptrdiff_t>(rank), ints.end());
  Array x = with_batch_axis(inputs[0], batched[0], size);
  if (!batched[1]) return apply_node_to(node, std::vector<Array>{x, inputs[1]}, std::move(batched_ints));
  // A padding value per lane: pad with anything, then choose the lane's value
  // wherever a mask of the original elements, padded with false, says so.
  const AbstractValue& type = detail::impl(x)->type;
  Array filler = detail::literal(0, type.dtype, type.weak, node.where);
  Array padded = apply_node_to(node, std::vector<Array>{x, filler}, batched_ints);
  Array inside = broadcast_to(detail::literal(true, DType::bool_, false, node.where), type.shape);
  Array outside = detail::literal(false, DType::bool_, false, node.where);
  Array mask = apply_node_to(node, std::vector<Array>{inside, outside}, std::move(batched_ints));
  Shape lane_shape(static_cast<size_t>(type.ndim()), 1);
  lane_shape[0] = size;
  return where(mask, padded, reshape(inputs[1], lane_shape));
}

Array batch_reverse(const Node& node, std::span<const Array> inputs, std::span<const char>, int64_t) {
  return apply_node_to(node, inputs, shifted_axes(node.attrs.ints));
}

// ---- helpers for the builders ----------------------------------------------------

const detail::AbstractValue& type_of(const Array& x, const char* operation, Location where) {
  return detail::impl_of(x, operation, where).type;
}

std::string array_types_string(const std::vector<Array>& xs, const char* operation, Location where) {
  std::string text;
  for (size_t i = 0; i < xs.size(); ++i) text += (i ? ", " : "") + type_of(xs[i], operation, where).to_string();
  return text;
}

Array apply_with_ints(Primitive op, std::span<const Array> inputs, std::vector<int64_t> ints, Location where) {
  ir::Attributes attrs;
  attrs.ints = std::move(ints);
  return detail::apply(op, inputs, std::move(attrs), where);
}

}  // namespace

void register_movement_rules(RuleTable& table) {
  auto set = [&](Primitive op, PrimitiveRules rules, NativeKernel kernel, auto batch) {
    rules.batch = batch;
    rules.fusion = Fusion::kernel;
    rules.kernel = kernel;
    table[static_cast<size_t>(op)] = rules;
  };
  set(Primitive::transpose, {&infer_transpose, &evaluate_transpose, &describe_transpose, &vjp_transpose, &jvp_movement},
      NativeKernel::transpose, &batch_transpose);
  set(Primitive::slice, {&infer_slice, &evaluate_slice, &describe_slice, &vjp_slice, &jvp_movement},
      NativeKernel::slice, &batch_slice);
  set(Primitive::concatenate,
      {&infer_concatenate, &evaluate_concatenate, &describe_concatenate, &vjp_concatenate, &jvp_concatenate},
      NativeKernel::concatenate, &batch_shifting_first_int);
  set(Primitive::pad, {&infer_pad, &evaluate_pad, &describe_pad, &vjp_pad, &jvp_pad}, NativeKernel::pad, &batch_pad);
  set(Primitive::reverse, {&infer_reverse, &evaluate_reverse, &describe_reverse, &vjp_reverse, &jvp_movement},
      NativeKernel::reverse, &batch_reverse);
  // Row-major data reshaped keeps its order: the same buffer, another shape.
  table[static_cast<size_t>(Primitive::reshape)] = {.infer = &infer_reshape,
                                                    .evaluate = &evaluate_reshape,
                                                    .describe = &describe_reshape,
                                                    .vjp = &vjp_reshape,
                                                    .jvp = &jvp_movement,
                                                    .batch = &batch_reshape,
                                                    .fusion = Fusion::view};
  // A fused broadcast is a load at a stride of 0 where its extent is 1 (the
  // kernel's indexing does it), so its code is its operand's.
  table[static_cast<size_t>(Primitive::broadcast)] = {
      .infer = &infer_broadcast,
      .evaluate = &evaluate_broadcast,
      .describe = &describe_broadcast,
      .vjp = &vjp_broadcast,
      .jvp = &jvp_movement,
      .batch = &batch_broadcast,
      .fusion = Fusion::elementwise,
      .lower = [](ScalarEmitter&, const Node&, std::span<const ScalarValue> operands, std::span<const DType>) {
        return operands[0];
      }};
}

}  // namespace ops

namespace {
// A slice taking everything or a pad adding nothing is its operand, but
// while tracing it stays a node: at other sizes of a dynamic dimension it is
// not trivial (a positional table sliced to the sequence length, and the pad
// of that slice's derivative), and the traces at every size must record the
// same operations. Simplification removes it from the graph that compiles.
bool may_skip_trivial() { return !detail::tracing_active(); }
}  // namespace

using ops::Primitive;

Array reshape(const Array& x, Shape shape, Location where) {
  const auto& type = ops::type_of(x, "reshape", where);
  auto mismatch = [&](std::string_view hint) {
    detail::raise("reshape",
                  "cannot reshape " + type.to_string() + " (" + std::to_string(type.size()) + " elements) into shape " +
                      shape_string(shape),
                  where, hint);
  };
  std::optional<size_t> inferred;
  Shape known;
  for (size_t a = 0; a < shape.size(); ++a) {
    if (shape[a] == -1) {
      if (inferred) mismatch("only one dimension may be -1");
      inferred = a;
    } else if (shape[a] < 0) {
      mismatch("dimensions must be >= 0, or -1 for one inferred dimension");
    } else {
      known.push_back(shape[a]);
    }
  }
  std::optional<int64_t> known_size = ops::checked_size(known);
  if (inferred) {
    // Like NumPy: with a zero among the other dimensions the -1 could be anything.
    if (!known_size || *known_size == 0 || type.size() % *known_size != 0)
      mismatch(known_size == 0 ? "-1 is ambiguous when another dimension is 0; give every extent"
                               : "the product of the other dimensions must divide the number of elements");
    shape[*inferred] = type.size() / *known_size;
  } else if (known_size != type.size()) {
    mismatch("the number of elements must stay the same");
  }
  if (shape == type.shape) return x;
  ir::Attributes attrs;
  attrs.shape = std::move(shape);
  return detail::apply(Primitive::reshape, {x}, std::move(attrs), where);
}

Array transpose(const Array& x, std::vector<int64_t> perm, Location where) {
  const auto& type = ops::type_of(x, "transpose", where);
  int64_t rank = type.ndim();
  std::vector<int64_t> given = perm;
  if (perm.empty()) {
    for (int64_t a = rank; a-- > 0;) perm.push_back(a);
  } else {
    // NumPy accepts negative axes in a permutation.
    for (int64_t& axis : perm)
      if (axis < 0 && axis >= -rank) axis += rank;
  }
  if (!ops::is_permutation(perm, static_cast<size_t>(rank)))
    detail::raise("transpose", ops::ints_string(given) + " is not a permutation of the axes of " + type.to_string(),
                  where, "list every axis 0.." + std::to_string(rank - 1) + " exactly once (negative axes allowed)");
  bool identity = true;
  for (int64_t a = 0; a < rank; ++a) identity = identity && perm[static_cast<size_t>(a)] == a;
  if (identity) return x;
  return ops::apply_with_ints(Primitive::transpose, std::span<const Array>(&x, 1), std::move(perm), where);
}

Array broadcast_to(const Array& x, Shape shape, Location where) { return ops::broadcast_to_shape(x, shape, where); }

Array expand_dims(const Array& x, Axes axes, Location where) {
  const auto& type = ops::type_of(x, "expand_dims", where);
  if (axes.is_all())
    detail::raise("expand_dims", "needs explicit axes for " + type.to_string(), where,
                  "name the new axes, e.g. expand_dims(x, 0)");
  int64_t out_rank = type.ndim() + static_cast<int64_t>(axes.list().size());
  // Axes index the result, as in NumPy: -1 is the new last axis.
  std::vector<bool> is_new(static_cast<size_t>(out_rank), false);
  for (int64_t axis : axes.list()) {
    if (axis < -out_rank || axis >= out_rank)
      detail::raise("expand_dims",
                    "axis " + std::to_string(axis) + " is out of range for " + type.to_string() + " with " +
                        std::to_string(axes.list().size()) + " new axes (result rank " + std::to_string(out_rank) + ")",
                    where, "valid axes are -" + std::to_string(out_rank) + " to " + std::to_string(out_rank - 1));
    size_t position = static_cast<size_t>(axis < 0 ? axis + out_rank : axis);
    if (is_new[position])
      detail::raise("expand_dims", "repeated axis " + ops::ints_string(axes.list()) + " for " + type.to_string(), where,
                    "list each new axis once");
    is_new[position] = true;
  }
  Shape shape;
  size_t next = 0;
  for (bool added : is_new) shape.push_back(added ? 1 : type.shape[next++]);
  return reshape(x, std::move(shape), where);
}

Array squeeze(const Array& x, Axes axes, Location where) {
  const auto& type = ops::type_of(x, "squeeze", where);
  std::vector<bool> drop(type.shape.size(), false);
  if (axes.is_all()) {
    for (size_t a = 0; a < type.shape.size(); ++a) drop[a] = type.shape[a] == 1;
  } else {
    for (int64_t axis : ops::normalize_axes(axes, type.ndim(), "squeeze", type.shape, where)) {
      if (type.shape[static_cast<size_t>(axis)] != 1)
        detail::raise("squeeze",
                      "cannot squeeze axis " + std::to_string(axis) + " of " + type.to_string() + ": its extent is " +
                          std::to_string(type.shape[static_cast<size_t>(axis)]) + ", not 1",
                      where, "only axes of extent 1 can be removed; use slice or reshape otherwise");
      drop[static_cast<size_t>(axis)] = true;
    }
  }
  Shape shape;
  for (size_t a = 0; a < type.shape.size(); ++a)
    if (!drop[a]) shape.push_back(type.shape[a]);
  return reshape(x, std::move(shape), where);
}

Array slice(const Array& x, std::vector<int64_t> start, std::vector<int64_t> stop, std::vector<int64_t> step,
            Location where) {
  const auto& type = ops::type_of(x, "slice", where);
  size_t rank = type.shape.size();
  auto too_long = [&](const std::vector<int64_t>& values, const char* what) {
    if (values.size() > rank)
      detail::raise("slice",
                    std::string(what) + " " + ops::ints_string(values) + " has more entries than " + type.to_string() +
                        " has axes",
                    where, "give at most one entry per axis; omitted trailing axes are taken whole");
  };
  too_long(start, "start");
  too_long(stop, "stop");
  too_long(step, "step");
  std::vector<int64_t> ints(3 * rank);
  bool whole = true;
  for (size_t a = 0; a < rank; ++a) {
    int64_t extent = type.shape[a];
    // NumPy's rule: a negative bound counts from the end, and a bound past
    // either end clamps to it (x[:200] of 128 rows is all 128).
    auto resolve = [&](const std::vector<int64_t>& values, int64_t fallback) {
      if (a >= values.size()) return fallback;
      int64_t value = values[a];
      return std::clamp(value < 0 ? value + extent : value, int64_t{0}, extent);
    };
    int64_t begin = resolve(start, 0);
    int64_t end = resolve(stop, extent);
    int64_t stride = a < step.size() ? step[a] : 1;
    if (stride <= 0)
      detail::raise("slice",
                    "step " + std::to_string(stride) + " for axis " + std::to_string(a) + " of " + type.to_string() +
                        " must be >= 1",
                    where, "to step backwards, flip the axis first: slice(flip(x, axis), ...)");
    // NumPy gives an empty axis when start passes stop; the primitive wants start <= stop.
    end = std::max(begin, end);
    ints[a] = begin;
    ints[rank + a] = end;
    ints[2 * rank + a] = stride;
    whole = whole && begin == 0 && end == extent && (stride == 1 || extent <= 1);
  }
  if (whole && may_skip_trivial()) return x;
  return ops::apply_with_ints(Primitive::slice, std::span<const Array>(&x, 1), std::move(ints), where);
}

Array concatenate(const std::vector<Array>& xs, int64_t axis, Location where) {
  if (xs.empty())
    detail::raise("concatenate", "needs at least one array, got an empty list", where,
                  "pass one or more arrays of one rank");
  const auto& first = ops::type_of(xs[0], "concatenate", where);
  std::string all = ops::array_types_string(xs, "concatenate", where);
  if (first.ndim() == 0)
    detail::raise("concatenate", "0-d arrays cannot be concatenated, got " + all, where,
                  "use stack to join 0-d arrays into a 1-d array");
  int64_t rank = first.ndim();
  for (const Array& x : xs)
    if (x.ndim() != rank)
      detail::raise("concatenate", "arrays must have the same rank, got " + all, where,
                    "reshape or expand_dims the arrays to one rank first");
  axis = ops::normalize_axis(axis, rank, "concatenate", first.shape, where);
  ops::TypeClass target{first.dtype, first.weak};
  for (const Array& x : xs) {
    const auto& type = detail::impl(x)->type;
    for (int64_t a = 0; a < rank; ++a)
      if (a != axis && type.shape[static_cast<size_t>(a)] != first.shape[static_cast<size_t>(a)])
        detail::raise("concatenate",
                      "arrays must match in every dimension but axis " + std::to_string(axis) + ", got " + all, where,
                      "dimension " + std::to_string(a) + " differs");
    target = ops::promote(target, {type.dtype, type.weak});
  }
  if (xs.size() == 1) return ops::convert_to(xs[0], target.dtype, target.weak, where);
  std::vector<Array> operands;
  operands.reserve(xs.size());
  for (const Array& x : xs) operands.push_back(ops::convert_to(x, target.dtype, target.weak, where));
  return ops::apply_with_ints(Primitive::concatenate, operands, {axis}, where);
}

Array stack(const std::vector<Array>& xs, int64_t axis, Location where) {
  if (xs.empty())
    detail::raise("stack", "needs at least one array, got an empty list", where,
                  "pass one or more arrays of one shape");
  const auto& first = ops::type_of(xs[0], "stack", where);
  std::string all = ops::array_types_string(xs, "stack", where);
  for (const Array& x : xs)
    if (x.shape() != first.shape)
      detail::raise("stack", "arrays must have the same shape, got " + all, where,
                    "reshape, slice or pad them to one shape first");
  int64_t out_rank = first.ndim() + 1;
  if (axis < -out_rank || axis >= out_rank)
    detail::raise("stack",
                  "axis " + std::to_string(axis) + " is out of range for stacking " + all + " (result rank " +
                      std::to_string(out_rank) + ")",
                  where, "valid axes are -" + std::to_string(out_rank) + " to " + std::to_string(out_rank - 1));
  if (axis < 0) axis += out_rank;
  std::vector<Array> expanded;
  expanded.reserve(xs.size());
  for (const Array& x : xs) expanded.push_back(expand_dims(x, axis, where));
  return concatenate(expanded, axis, where);
}

Array pad(const Array& x, std::vector<int64_t> lo, std::vector<int64_t> hi, Scalar value, Location where) {
  const auto& type = ops::type_of(x, "pad", where);
  size_t rank = type.shape.size();
  if (lo.size() != rank || hi.size() != rank)
    detail::raise("pad",
                  "needs one lo and one hi per axis of " + type.to_string() + ", got lo=" + ops::ints_string(lo) +
                      " hi=" + ops::ints_string(hi),
                  where, "give " + std::to_string(rank) + " entries in each list");
  if (!ops::all_non_negative(lo) || !ops::all_non_negative(hi))
    detail::raise(
        "pad",
        "negative padding lo=" + ops::ints_string(lo) + " hi=" + ops::ints_string(hi) + " for " + type.to_string(),
        where, "padding must be >= 0; use slice to remove elements");
  Shape padded = type.shape;
  bool fits = true;
  for (size_t a = 0; a < rank; ++a)
    fits = fits && !__builtin_add_overflow(padded[a], lo[a], &padded[a]) &&
           !__builtin_add_overflow(padded[a], hi[a], &padded[a]);
  if (!fits || !ops::checked_size(padded))
    detail::raise("pad",
                  "padding lo=" + ops::ints_string(lo) + " hi=" + ops::ints_string(hi) + " of " + type.to_string() +
                      " gives more elements than an array can hold",
                  where);
  bool nothing = std::all_of(lo.begin(), lo.end(), [](int64_t v) { return v == 0; }) &&
                 std::all_of(hi.begin(), hi.end(), [](int64_t v) { return v == 0; });
  if (nothing && may_skip_trivial()) return x;
  std::vector<int64_t> ints = std::move(lo);
  ints.insert(ints.end(), hi.begin(), hi.end());
  Array fill = detail::literal(value, type.dtype, false, where);
  return ops::apply_with_ints(Primitive::pad, std::vector<Array>{x, fill}, std::move(ints), where);
}

Array flip(const Array& x, Axes axes, Location where) {
  const auto& type = ops::type_of(x, "flip", where);
  std::vector<int64_t> normalized = ops::normalize_axes(axes, type.ndim(), "flip", type.shape, where);
  if (normalized.empty()) return x;
  return ops::apply_with_ints(Primitive::reverse, std::span<const Array>(&x, 1), std::move(normalized), where);
}

}  // namespace kiln
