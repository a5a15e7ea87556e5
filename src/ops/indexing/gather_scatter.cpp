// The general gather and scatter of the indexing family: `gather` reads x at
// the positions `indices` [..., k] give in x's first k axes (tf.gather_nd,
// JAX's common gather), each position carrying the window x.shape[k:];
// `scatter` writes windows of updates back at such positions, combining with
// what is there by its mode (assign, add, mul, max, min). NumPy's
// multi-array indexing, the scatter family and `x.at(...)` are built on them.
//
// Out-of-range indices, as JAX: a negative index counts from the end once;
// then gather clamps every index into its axis, and scatter drops an update
// whose position lies outside x. Duplicate positions in an assign scatter:
// the last update (in row-major order of the indices) wins, deterministically.
//
// Both run their reference kernels in the native backend too: one copy (or
// combine) of a contiguous window per position, already a memcpy-bound loop.
#include "ops/indexing/gather_scatter.h"

#include <algorithm>
#include <cstring>

#include "core/convert.h"
#include "core/dispatch.h"
#include "core/error_format.h"
#include "core/wrapping.h"
#include "kiln/ops.h"
#include "ops/common/apply.h"
#include "ops/common/batching.h"
#include "ops/common/promotion.h"

namespace kiln::ops {
namespace {

const Shape& shape_of(const Array& x) { return detail::impl(x)->type.shape; }
int64_t rank_of(const Array& x) { return static_cast<int64_t>(shape_of(x).size()); }

/// indices.shape[:-1] + x.shape[k:], checking what gather and scatter share.
Shape gathered_shape(std::string_view name, const AbstractValue& x, const AbstractValue& indices, Location where) {
  if (!is_integer(indices.dtype) || indices.ndim() < 1)
    detail::raise(name, "indices must be integers with a last axis of coordinates, got " + indices.to_string(), where,
                  "convert them with astype(indices, kiln::i32), shaped [..., k]");
  int64_t k = indices.shape.back();
  if (k > x.ndim())
    detail::raise(name,
                  "indices " + indices.to_string() + " address " + std::to_string(k) + " axes of " + x.to_string(),
                  where, "the last axis of indices holds at most one coordinate per axis of x");
  Shape shape(indices.shape.begin(), indices.shape.end() - 1);
  shape.insert(shape.end(), x.shape.begin() + k, x.shape.end());
  return shape;
}

AbstractValue infer_gather(const Node& node, std::span<const AbstractValue* const> inputs) {
  if (inputs.size() != 2)
    detail::raise("gather", "takes 2 operands (x, indices), got " + std::to_string(inputs.size()), node.where);
  const AbstractValue& x = *inputs[0];
  const AbstractValue& indices = *inputs[1];
  Shape shape = gathered_shape("gather", x, indices, node.where);
  auto k = static_cast<size_t>(indices.shape.back());
  bool empty_axis = std::find(x.shape.begin(), x.shape.begin() + static_cast<ptrdiff_t>(k), 0) !=
                    x.shape.begin() + static_cast<ptrdiff_t>(k);
  if (empty_axis && indices.size() > 0)
    detail::raise("gather", "cannot read " + x.to_string() + " at indices " + indices.to_string(), node.where,
                  "an empty axis has no element to read; use empty indices or non-empty axes");
  return {x.dtype, x.weak, std::move(shape)};
}

AbstractValue infer_scatter(const Node& node, std::span<const AbstractValue* const> inputs) {
  if (inputs.size() != 3)
    detail::raise("scatter", "takes 3 operands (x, indices, updates), got " + std::to_string(inputs.size()),
                  node.where);
  if (node.attrs.ints.size() != 1 || node.attrs.ints[0] < 0 || node.attrs.ints[0] >= scatter_mode_count)
    detail::raise("scatter", "attributes must be {mode}, got " + ints_string(node.attrs.ints), node.where);
  const AbstractValue& x = *inputs[0];
  const AbstractValue& updates = *inputs[2];
  auto mode = static_cast<ScatterMode>(node.attrs.ints[0]);
  if (mode == ScatterMode::max || mode == ScatterMode::min)
    check_ordered(mode == ScatterMode::max ? "scatter_max" : "scatter_min", x, node.where);
  Shape expected = gathered_shape("scatter", x, *inputs[1], node.where);
  if (updates.dtype != x.dtype || updates.shape != expected)
    detail::raise("scatter",
                  "updates must be " + std::string(dtype_name(x.dtype)) + shape_string(expected) + " for x " +
                      x.to_string() + " and indices " + inputs[1]->to_string() + ", got " + updates.to_string(),
                  node.where);
  return x;
}

/// The window index in x (x.shape[:k] flattened) of each position, or -1
/// where a coordinate lies outside its axis and `clamp` is off.
std::vector<int64_t> window_positions(const Array& indices, const Shape& x_shape, bool clamp) {
  const detail::ArrayImpl& impl = *detail::impl(indices);
  auto k = static_cast<size_t>(impl.type.shape.back());
  int64_t count = shape_size(Shape(impl.type.shape.begin(), impl.type.shape.end() - 1));
  std::vector<int64_t> result(static_cast<size_t>(count), 0);
  detail::dispatch(impl.type.dtype, [&]<class T>() {
    const T* data = impl.data<T>();
    for (size_t b = 0; b < result.size(); ++b) {
      int64_t position = 0;
      for (size_t d = 0; d < k; ++d) {
        auto index = detail::convert_element<int64_t>(data[b * k + d]);  // (an integer dtype)
        int64_t extent = x_shape[d];
        if (index < 0) index += extent;
        if (clamp) index = std::clamp<int64_t>(index, 0, extent - 1);
        else if (index < 0 || index >= extent) {
          position = -1;
          break;
        }
        position = position * extent + index;
      }
      result[b] = position;
    }
  });
  return result;
}

int64_t window_size(const Shape& x_shape, int64_t k) { return shape_size(Shape(x_shape.begin() + k, x_shape.end())); }

Array evaluate_gather(const Node& node, std::span<const Array> inputs) {
  const detail::ArrayImpl& x = *detail::impl(inputs[0]);
  Array result = detail::allocate(node.type);
  if (node.type.size() == 0) return result;
  int64_t k = shape_of(inputs[1]).back();
  int64_t window = window_size(x.type.shape, k);
  std::vector<int64_t> positions = window_positions(inputs[1], x.type.shape, true);
  size_t bytes = static_cast<size_t>(window) * dtype_size(x.type.dtype);
  const auto* in = static_cast<const char*>(x.buffer->data());
  auto* out = static_cast<char*>(detail::impl(result)->buffer->data());
  for (size_t b = 0; b < positions.size(); ++b)
    std::memcpy(out + b * bytes, in + static_cast<size_t>(positions[b]) * bytes, bytes);
  return result;
}

template <class T>
T combine(ScatterMode mode, T old, T update) {
  switch (mode) {
    case ScatterMode::assign: return update;
    case ScatterMode::add:
      if constexpr (std::is_same_v<T, bool>) return old || update;
      else if constexpr (std::is_integral_v<T>) {
        using U = detail::wrapping_type<T>;  // wraps like NumPy, without UB
        return static_cast<T>(static_cast<U>(old) + static_cast<U>(update));
      } else return old + update;
    case ScatterMode::mul:
      if constexpr (std::is_same_v<T, bool>) return old && update;
      else if constexpr (std::is_integral_v<T>) {
        using U = detail::wrapping_type<T>;
        return static_cast<T>(static_cast<U>(old) * static_cast<U>(update));
      } else return old * update;
    case ScatterMode::max:
    case ScatterMode::min:
      // NaN propagates, as XLA's max and min do.
      if constexpr (detail::is_complex_element<T>) {
        return update;  // refused by infer_scatter
      } else {
        if (detail::is_nan_element(old)) return old;
        if (detail::is_nan_element(update)) return update;
        return (mode == ScatterMode::max ? old < update : update < old) ? update : old;
      }
  }
  return update;
}

Array evaluate_scatter(const Node& node, std::span<const Array> inputs) {
  const detail::ArrayImpl& x = *detail::impl(inputs[0]);
  const detail::ArrayImpl& updates = *detail::impl(inputs[2]);
  Array result = detail::allocate(node.type);
  if (node.type.size() == 0) return result;
  std::memcpy(detail::impl(result)->buffer->data(), x.buffer->data(), x.type.bytes());
  int64_t k = shape_of(inputs[1]).back();
  int64_t window = window_size(x.type.shape, k);
  std::vector<int64_t> positions = window_positions(inputs[1], x.type.shape, false);
  auto mode = static_cast<ScatterMode>(node.attrs.ints[0]);
  detail::dispatch(x.type.dtype, [&]<class T>() {
    const T* from = updates.data<T>();
    T* out = detail::impl(result)->mutable_data<T>();
    for (size_t b = 0; b < positions.size(); ++b) {
      if (positions[b] < 0) continue;
      T* target = out + positions[b] * window;
      const T* source = from + static_cast<int64_t>(b) * window;
      for (int64_t i = 0; i < window; ++i) target[i] = combine(mode, target[i], source[i]);
    }
  });
  return result;
}

constexpr const char* mode_names[] = {"assign", "add", "mul", "max", "min"};

std::string describe_scatter(const Node& node) {
  return std::string("mode=") + mode_names[static_cast<size_t>(node.attrs.ints.at(0))];
}

// ---- derivative rules ------------------------------------------------------------
//
// The rules see indices exactly as the primitives do: a gather's cotangent
// goes back to the clamped position it read, and a dropped update gets none.

Array zeros_typed(const Array& like) {
  const AbstractValue& type = detail::impl(like)->type;
  return broadcast_to_shape(detail::literal(0, type.dtype, type.weak, Location::current()), type.shape,
                            Location::current());
}

Array or_zeros(const Array& tangent, const Array& primal) { return tangent.defined() ? tangent : zeros_typed(primal); }

/// Coordinate d of every position, wrapped once if negative.
Array coordinate(const Array& indices, int64_t d, int64_t extent) {
  Array c = index(indices, {ellipsis, d});
  return where(c < 0, c + extent, c);
}

/// Whether each position (indices.shape[:-1]) lies inside x: the updates scatter keeps.
Array positions_inside(const Array& indices, const Shape& x_shape) {
  Shape batch(shape_of(indices).begin(), shape_of(indices).end() - 1);
  Array inside =
      broadcast_to_shape(detail::literal(true, DType::bool_, false, Location::current()), batch, Location::current());
  for (int64_t d = 0; d < shape_of(indices).back(); ++d) {
    int64_t extent = x_shape[static_cast<size_t>(d)];
    Array c = coordinate(indices, d, extent);
    inside = inside & (c >= 0) & (c < extent);
  }
  return inside;
}

/// `per_position` (indices.shape[:-1]) spread over each position's window.
Array over_windows(const Array& per_position, const Shape& updates_shape) {
  Shape shape = shape_of(per_position);
  shape.resize(updates_shape.size(), 1);
  return broadcast_to(reshape(per_position, shape), updates_shape);
}

}  // namespace

Array gather_windows(const Array& x, const Array& indices) {
  return detail::apply(Primitive::gather, {x, indices}, {}, Location::current());
}

Array scatter_windows(ScatterMode mode, const Array& x, const Array& indices, const Array& updates) {
  ir::Attributes attrs;
  attrs.ints = {static_cast<int64_t>(mode)};
  return detail::apply(Primitive::scatter, {x, indices, updates}, std::move(attrs), Location::current());
}

Array clamped_indices(const Array& indices, const Shape& x_shape) {
  int64_t k = shape_of(indices).back();
  if (k == 0) return indices;
  std::vector<Array> coordinates;
  for (int64_t d = 0; d < k; ++d) {
    int64_t extent = x_shape[static_cast<size_t>(d)];
    coordinates.push_back(expand_dims(clip(coordinate(indices, d, extent), 0, std::max<int64_t>(extent - 1, 0)), -1));
  }
  return concatenate(coordinates, rank_of(indices) - 1);
}

namespace {

std::vector<Array> vjp_gather(const Node&, std::span<const Array> inputs, const Array&, const Array& cotangent) {
  const Shape& x_shape = shape_of(inputs[0]);
  return {scatter_windows(ScatterMode::add, zeros_typed(inputs[0]), clamped_indices(inputs[1], x_shape), cotangent),
          Array()};
}

Array jvp_gather(const Node&, std::span<const Array> inputs, const Array& output, std::span<const Array> tangents) {
  if (!tangents[0].defined()) return zeros_typed(output);
  return gather_windows(tangents[0], inputs[1]);
}

/// What every rule of a scatter needs: the operands and, per update element,
/// whether the scatter kept it.
struct ScatterParts {
  const Array &x, &indices, &updates;
  Array kept;
  ScatterParts(std::span<const Array> inputs)
      : x(inputs[0]),
        indices(inputs[1]),
        updates(inputs[2]),
        kept(over_windows(positions_inside(inputs[1], shape_of(inputs[0])), shape_of(inputs[2]))) {}
  Array gathered(const Array& values) const { return gather_windows(values, indices); }
  Array masked(const Array& values) const { return where(kept, values, zeros_typed(values)); }
};

// assign: the last update at a position wins; the positions it writes lose x.
struct AssignWeights {
  Array overwritten;  // x's shape, bool
  Array winner;       // updates' shape, bool
};

AssignWeights assign_weights(const ScatterParts& s) {
  const Shape& update_shape = shape_of(s.updates);
  Array flags = scatter_windows(ScatterMode::assign, zeros(shape_of(s.x), DType::bool_), s.indices,
                                ones(update_shape, DType::bool_));
  // Number every position; the one whose number survives at its place won.
  Shape batch(shape_of(s.indices).begin(), shape_of(s.indices).end() - 1);
  Array numbers = over_windows(reshape(arange(0, shape_size(batch), 1, DType::i64), batch), update_shape);
  Array written = scatter_windows(ScatterMode::assign, full(shape_of(s.x), -1, DType::i64), s.indices, numbers);
  return {flags, s.gathered(written) == numbers};
}

// mul: the product of the other updates at each update's position, zeros included.
Array product_of_others(const ScatterParts& s) {
  Array is_zero = s.updates == 0;
  Array nonzero = where(is_zero, 1, s.updates);
  Array products = s.gathered(scatter_windows(ScatterMode::mul, ones_like(s.x), s.indices, nonzero));
  Array zero_counts =
      s.gathered(scatter_windows(ScatterMode::add, zeros_typed(s.x), s.indices, astype(is_zero, s.x.dtype())));
  Array others = where(is_zero, where(zero_counts == 1, products, 0), where(zero_counts == 0, products / nonzero, 0));
  return s.masked(others);
}

// max/min: the result's derivative is shared evenly by x (where it equals the
// result) and every kept update equal to it, as JAX and torch.scatter_reduce do.
struct ExtremeWeights {
  Array x_weight, update_weight;
};

ExtremeWeights extreme_weights(const ScatterParts& s, const Array& output) {
  Array from_x = astype(s.x == output, s.x.dtype());
  Array from_update = astype(s.kept & (s.updates == s.gathered(output)), s.x.dtype());
  Array counts = from_x + scatter_windows(ScatterMode::add, zeros_typed(s.x), s.indices, from_update);
  Array safe = maximum(counts, 1);
  return {from_x / safe, from_update / s.gathered(safe)};
}

std::vector<Array> vjp_scatter(const Node& node, std::span<const Array> inputs, const Array& output,
                               const Array& cotangent) {
  ScatterParts s(inputs);
  switch (static_cast<ScatterMode>(node.attrs.ints[0])) {
    case ScatterMode::add: return {cotangent, Array(), s.masked(s.gathered(cotangent))};
    case ScatterMode::assign: {
      AssignWeights w = assign_weights(s);
      return {where(w.overwritten, zeros_typed(cotangent), cotangent), Array(),
              where(w.winner, s.gathered(cotangent), zeros_typed(s.updates))};
    }
    case ScatterMode::mul: {
      Array factors = scatter_windows(ScatterMode::mul, ones_like(s.x), s.indices, s.updates);
      return {cotangent * factors, Array(), s.gathered(cotangent * s.x) * product_of_others(s)};
    }
    case ScatterMode::max:
    case ScatterMode::min: {
      ExtremeWeights w = extreme_weights(s, output);
      return {cotangent * w.x_weight, Array(), s.gathered(cotangent) * w.update_weight};
    }
  }
  return {};
}

Array jvp_scatter(const Node& node, std::span<const Array> inputs, const Array& output,
                  std::span<const Array> tangents) {
  ScatterParts s(inputs);
  auto mode = static_cast<ScatterMode>(node.attrs.ints[0]);
  Array x_tangent = or_zeros(tangents[0], s.x);
  switch (mode) {
    case ScatterMode::add:
    case ScatterMode::assign:
      // Linear in (x, updates) jointly.
      return scatter_windows(mode, x_tangent, s.indices, or_zeros(tangents[2], s.updates));
    case ScatterMode::mul: {
      Array result = scatter_windows(ScatterMode::mul, x_tangent, s.indices, s.updates);
      if (!tangents[2].defined()) return result;
      Array spread = scatter_windows(ScatterMode::add, zeros_typed(s.x), s.indices, tangents[2] * product_of_others(s));
      return result + s.x * spread;
    }
    case ScatterMode::max:
    case ScatterMode::min: {
      ExtremeWeights w = extreme_weights(s, output);
      Array result = x_tangent * w.x_weight;
      if (!tangents[2].defined()) return result;
      return result + scatter_windows(ScatterMode::add, zeros_typed(s.x), s.indices, tangents[2] * w.update_weight);
    }
  }
  return {};
}

// ---- batching rules ------------------------------------------------------------------
//
// Indices per lane get the lane as a leading coordinate, so one gather or
// scatter over the batched x reads each lane's own windows. Indices shared by
// the lanes address x with its batch axis moved past the addressed axes.

Array with_lane_coordinate(const Array& indices) {
  Shape lane_shape = shape_of(indices);
  lane_shape.back() = 1;
  Array lane = iota(indices.dtype(), lane_shape, 0, Location::current());
  return concatenate({lane, indices}, rank_of(indices) - 1);
}

Array batch_gather(const Node&, std::span<const Array> inputs, std::span<const char> batched, int64_t) {
  const Array& x = inputs[0];
  const Array& indices = inputs[1];
  if (batched[1]) return gather_windows(x, batched[0] ? with_lane_coordinate(indices) : indices);
  int64_t k = shape_of(indices).back();
  return moveaxis(gather_windows(moveaxis(x, 0, k), indices), rank_of(indices) - 1, 0);
}

Array batch_scatter(const Node& node, std::span<const Array> inputs, std::span<const char> batched, int64_t size) {
  Array x = with_batch_axis(inputs[0], batched[0], size);
  Array updates = with_batch_axis(inputs[2], batched[2], size);
  const Array& indices = inputs[1];
  if (batched[1]) return apply_node_to(node, std::vector<Array>{x, with_lane_coordinate(indices), updates});
  int64_t k = shape_of(indices).back();
  Array moved =
      apply_node_to(node, std::vector<Array>{moveaxis(x, 0, k), indices, moveaxis(updates, 0, rank_of(indices) - 1)});
  return moveaxis(moved, k, 0);
}

constexpr const char* gather_scatter_waiver =
    "runs its reference kernel: one memcpy (or combining loop) of a contiguous window per position";

}  // namespace

void register_gather_scatter_rules(RuleTable& table) {
  table[static_cast<size_t>(Primitive::gather)] = {.infer = &infer_gather,
                                                   .evaluate = &evaluate_gather,
                                                   .vjp = &vjp_gather,
                                                   .jvp = &jvp_gather,
                                                   .batch = &batch_gather,
                                                   .fusion = Fusion::kernel,
                                                   .no_native_lowering = gather_scatter_waiver};
  table[static_cast<size_t>(Primitive::scatter)] = {.infer = &infer_scatter,
                                                    .evaluate = &evaluate_scatter,
                                                    .describe = &describe_scatter,
                                                    .vjp = &vjp_scatter,
                                                    .jvp = &jvp_scatter,
                                                    .batch = &batch_scatter,
                                                    .fusion = Fusion::kernel,
                                                    .no_native_lowering = gather_scatter_waiver};
}

}  // namespace kiln::ops
