// NumPy's indexing (kiln::index): integers, Python slices with any bounds
// and steps, newaxis, ellipsis, and integer index arrays. One slice
// primitive takes every positive-step range, flips turn the negative-step
// ones around, a take gathers along one array's axis (several arrays: one
// gather over their axes moved first), and a reshape drops the
// integer-indexed axes and adds the new ones: the view differentiates and
// batches through those primitives. x.at(...) updates through the same
// view, applied to the flat positions of x's elements.
#include <algorithm>
#include <limits>

#include "core/array_impl.h"
#include "core/error_format.h"
#include "kiln/ops.h"
#include "ops/common/apply.h"
#include "ops/common/promotion.h"
#include "ops/indexing/gather_scatter.h"

namespace kiln {

namespace {

std::string index_text(const Index& index) {
  switch (index.kind()) {
    case Index::Kind::integer: return std::to_string(index.integer());
    case Index::Kind::new_axis: return "newaxis";
    case Index::Kind::ellipsis: return "...";
    case Index::Kind::array: return "an index array";
    case Index::Kind::slice: {
      const Slice& s = index.slice();
      return (s.start ? std::to_string(*s.start) : "") + ":" + (s.stop ? std::to_string(*s.stop) : "") + ":" +
             std::to_string(s.step);
    }
  }
  return "";
}

// Python's slice.indices(n): the first index, and how many the slice takes.
std::pair<int64_t, int64_t> resolve(const Slice& s, int64_t n) {
  bool forward = s.step > 0;
  int64_t lower = forward ? 0 : -1, upper = forward ? n : n - 1;
  auto bound = [&](std::optional<int64_t> given, int64_t fallback) {
    if (!given) return fallback;
    int64_t value = *given < 0 ? *given + n : *given;
    return std::clamp(value, lower, upper);
  };
  int64_t start = bound(s.start, forward ? lower : upper), stop = bound(s.stop, forward ? upper : lower);
  int64_t span = forward ? stop - start : start - stop, step = forward ? s.step : -s.step;
  return {start, span <= 0 ? 0 : (span + step - 1) / step};
}

[[noreturn]] void refuse(const detail::AbstractValue& type, const std::string& what, const std::string& fix,
                         Location where) {
  detail::raise("index", what + " (indexing " + type.to_string() + ")", where, fix);
}

/// One entry per axis of x, and the new axes: the ellipsis (or the end)
/// stands for every axis not named.
std::vector<Index> expand_entries(const detail::AbstractValue& type, const std::vector<Index>& indices,
                                  Location where) {
  int64_t named = 0, ellipses = 0;
  for (const Index& i : indices) {
    if (i.kind() == Index::Kind::ellipsis) ++ellipses;
    else if (i.kind() != Index::Kind::new_axis) ++named;
    if (i.kind() != Index::Kind::array) continue;
    const detail::AbstractValue& positions = detail::impl_of(i.array(), "index", where).type;
    if (positions.dtype == DType::bool_)
      refuse(
          type,
          "a boolean index array " + positions.to_string() + " selects a number of elements known only from its values",
          "keep the shape with where(mask, x, fill), or index with the integer positions of a concrete mask", where);
    if (!is_integer(positions.dtype))
      refuse(type, "index arrays hold integers, got " + positions.to_string(),
             "convert with astype(indices, kiln::i32)", where);
  }
  if (ellipses > 1) refuse(type, "more than one ellipsis", "use kiln::ellipsis once", where);
  if (named > type.ndim())
    refuse(type, std::to_string(named) + " indices for " + std::to_string(type.ndim()) + " dimensions",
           "index at most one entry per dimension", where);
  std::vector<Index> entries;
  for (const Index& i : indices) {
    if (i.kind() != Index::Kind::ellipsis) {
      entries.push_back(i);
      continue;
    }
    for (int64_t k = 0; k < type.ndim() - named; ++k) entries.push_back(Slice{});
  }
  if (ellipses == 0)
    for (int64_t k = 0; k < type.ndim() - named; ++k) entries.push_back(Slice{});
  return entries;
}

bool is_advanced(const Index& entry) {
  return entry.kind() == Index::Kind::integer || entry.kind() == Index::Kind::array;
}

/// Several index arrays on `view` (x sliced, the integers' axes of extent 1):
/// they broadcast together and one gather reads their axes, moved first.
/// NumPy's placement: with the arrays and integers adjacent (`together`),
/// their broadcast dimensions stand where they do, else they go first.
Array gather_arrays(const Array& view, const std::vector<Index>& entries, const std::vector<int64_t>& counts,
                    bool together, Location where) {
  const Shape& view_shape = view.shape(where);
  Shape kept, broadcast;
  std::vector<int64_t> array_axes, other_axes;
  std::vector<Array> arrays;
  size_t slices_before = 0, axis = 0;
  bool seen_advanced = false;
  for (size_t k = 0; k < entries.size(); ++k) {
    Index::Kind kind = entries[k].kind();
    if (kind == Index::Kind::new_axis) continue;
    int64_t extent = view_shape[axis++];
    if (kind == Index::Kind::integer) {
      seen_advanced = true;
      continue;
    }
    if (kind == Index::Kind::slice) {
      other_axes.push_back(static_cast<int64_t>(kept.size()));
      if (!seen_advanced) ++slices_before;
    } else {
      seen_advanced = true;
      array_axes.push_back(static_cast<int64_t>(kept.size()));
      arrays.push_back(entries[k].array());
      broadcast = ops::broadcast_shapes(broadcast, arrays.back().shape(where), "index", where);
    }
    kept.push_back(extent);
  }
  DType dtype = arrays[0].dtype(where);
  for (const Array& a : arrays)
    if (a.dtype(where) != dtype) dtype = DType::i64;
  std::vector<Array> columns;
  for (const Array& a : arrays)
    columns.push_back(
        expand_dims(ops::broadcast_to_shape(ops::convert_to(a, dtype, false, where), broadcast, where), -1, where));
  std::vector<int64_t> permutation = array_axes;
  permutation.insert(permutation.end(), other_axes.begin(), other_axes.end());
  Array moved = transpose(reshape(view, kept, where), permutation, where);
  Array gathered = gather(moved, concatenate(columns, static_cast<int64_t>(broadcast.size()), where), where);
  auto dims = static_cast<int64_t>(broadcast.size());
  if (together && slices_before > 0) {
    // [broadcast..., slices...] -> [slices before..., broadcast..., slices after...]
    std::vector<int64_t> order;
    for (size_t d = 0; d < slices_before; ++d) order.push_back(dims + static_cast<int64_t>(d));
    for (int64_t d = 0; d < dims; ++d) order.push_back(d);
    for (int64_t d = dims + static_cast<int64_t>(slices_before); d < gathered.ndim(where); ++d) order.push_back(d);
    gathered = transpose(gathered, order, where);
  }
  // Only axes of extent 1 (the new ones) remain to add: a reshape.
  Shape result = together ? Shape{} : broadcast;
  bool placed = false;
  for (size_t k = 0; k < entries.size(); ++k) {
    Index::Kind kind = entries[k].kind();
    if (kind == Index::Kind::slice || kind == Index::Kind::new_axis) result.push_back(counts[k]);
    else if (together && !placed) {
      result.insert(result.end(), broadcast.begin(), broadcast.end());
      placed = true;
    }
  }
  return reshape(gathered, result, where);
}

/// The integers and slices of a view as one strided slice and flips, with
/// what the rest of the view needs; index arrays are left to a gather.
struct ViewPlan {
  std::vector<int64_t> start, stop, step, flipped;
  Shape result;                 // the view's shape: slices, new axes and index arrays' shapes where they stand
  std::vector<int64_t> counts;  // each entry's extent: a slice's count, 1 for a new axis
  std::optional<std::pair<int64_t, Array>> first_array;  // the first index array's axis and indices
  int64_t array_count = 0;
};

ViewPlan plan_view(const detail::AbstractValue& type, const std::vector<Index>& entries, Location where) {
  ViewPlan plan;
  plan.start.assign(static_cast<size_t>(type.ndim()), 0);
  plan.stop = type.shape;
  plan.step.assign(plan.start.size(), 1);
  plan.counts.assign(entries.size(), 1);
  int64_t axis = 0;
  for (size_t k = 0; k < entries.size(); ++k) {
    const Index& entry = entries[k];
    if (entry.kind() == Index::Kind::new_axis) {
      plan.result.push_back(1);
      continue;
    }
    auto a = static_cast<size_t>(axis);
    int64_t n = type.shape[a];
    if (entry.kind() == Index::Kind::integer) {
      int64_t i = entry.integer() < 0 ? entry.integer() + n : entry.integer();
      if (i < 0 || i >= n)
        refuse(type,
               "index " + std::to_string(entry.integer()) + " is out of bounds for axis " + std::to_string(axis) +
                   " with size " + std::to_string(n),
               "integers count from 0, or from the end when negative", where);
      plan.start[a] = i;
      plan.stop[a] = i + 1;
    } else if (entry.kind() == Index::Kind::slice) {
      const Slice& s = entry.slice();
      if (s.step == 0)
        refuse(type, "slice " + index_text(entry) + " has step 0", "steps are nonzero: 1, 2, -1, ...", where);
      auto [first, count] = resolve(s, n);
      int64_t magnitude = std::abs(s.step);
      // A negative step walks from `first` down: take the same elements
      // upward from the last one, then flip the axis.
      int64_t lowest = s.step > 0 ? first : first + (count - 1) * s.step;
      plan.start[a] = count == 0 ? 0 : lowest;
      plan.stop[a] = count == 0 ? 0 : lowest + (count - 1) * magnitude + 1;
      plan.step[a] = magnitude;
      if (s.step < 0 && count > 1) plan.flipped.push_back(axis);
      plan.result.push_back(count);
      plan.counts[k] = count;
    } else {
      if (plan.array_count++ == 0) plan.first_array = std::pair{axis, entry.array()};
      const Shape& shape = entry.array().shape(where);
      plan.result.insert(plan.result.end(), shape.begin(), shape.end());
    }
    ++axis;
  }
  return plan;
}

// With an index array, NumPy counts the integers as index arrays too: if any
// of them stands apart from the others (another entry between), the gathered
// dimensions go first instead of in place.
bool advanced_together(const std::vector<Index>& entries) {
  std::vector<size_t> advanced;
  for (size_t k = 0; k < entries.size(); ++k)
    if (is_advanced(entries[k])) advanced.push_back(k);
  return advanced.back() - advanced.front() + 1 == advanced.size();
}

// The view after the one index array's take, when it stands apart: the
// integers' axes dropped, the gathered dimensions brought to the front, then
// the new axes added among the slices' dimensions where they stand.
Array gathered_dimensions_first(const Array& taken, const std::vector<Index>& entries, const ViewPlan& plan,
                                Location where) {
  Shape compact, gathered = plan.first_array->second.shape(where), final_shape = gathered;
  size_t gathered_at = 0;
  for (size_t k = 0; k < entries.size(); ++k) {
    if (entries[k].kind() == Index::Kind::slice) compact.push_back(plan.counts[k]);
    if (entries[k].kind() == Index::Kind::array) {
      gathered_at = compact.size();
      compact.insert(compact.end(), gathered.begin(), gathered.end());
    }
    if (entries[k].kind() == Index::Kind::slice || entries[k].kind() == Index::Kind::new_axis)
      final_shape.push_back(plan.counts[k]);
  }
  std::vector<int64_t> permutation;
  for (size_t d = 0; d < gathered.size(); ++d) permutation.push_back(static_cast<int64_t>(gathered_at + d));
  for (size_t d = 0; d < compact.size(); ++d)
    if (d < gathered_at || d >= gathered_at + gathered.size()) permutation.push_back(static_cast<int64_t>(d));
  return reshape(transpose(reshape(taken, compact, where), permutation, where), final_shape, where);
}

}  // namespace

Array index(const Array& x, const std::vector<Index>& indices, Location where) {
  detail::OperationScope at("index", where);
  const detail::AbstractValue& type = detail::impl_of(x, "index", where).type;
  std::vector<Index> entries = expand_entries(type, indices, where);
  ViewPlan plan = plan_view(type, entries, where);
  Array view = slice(x, plan.start, plan.stop, plan.step, where);
  if (!plan.flipped.empty()) view = flip(view, Axes(plan.flipped), where);
  if (!plan.first_array) return reshape(view, plan.result, where);
  bool together = advanced_together(entries);
  if (plan.array_count > 1) return gather_arrays(view, entries, plan.counts, together, where);
  view = take(view, plan.first_array->second, plan.first_array->first, where);
  if (together) return reshape(view, plan.result, where);
  return gathered_dimensions_first(view, entries, plan, where);
}

namespace {

/// x with `values` combined in where index(x, indices) reads, by `mode`.
Array update_at(ops::ScatterMode mode, const Array& x, const std::vector<Index>& indices, const Operand& values,
                Location where) {
  const detail::AbstractValue& type = detail::impl_of(x, "at", where).type;
  detail::OperationScope at("at", where);
  std::vector<Index> entries = expand_entries(type, indices, where);
  DType position_dtype = type.size() < std::numeric_limits<int32_t>::max() ? DType::i32 : DType::i64;
  Array positions = reshape(arange(0, type.size(), 1, position_dtype), type.shape);
  // Past each axis an array indexes, one more slot holds the position
  // `size`: where an out-of-range entry reads, and the scatter drops it.
  int64_t axis = 0;
  for (Index& entry : entries) {
    if (entry.kind() == Index::Kind::new_axis) continue;
    if (entry.kind() == Index::Kind::array) {
      int64_t n = type.shape[static_cast<size_t>(axis)];
      const Array& a = entry.array();
      Array wrapped = kiln::where(a < 0, a + n, a);
      entry = Index(kiln::where((wrapped >= 0) & (wrapped < n), wrapped, n));
      std::vector<int64_t> lo(type.shape.size(), 0), hi(type.shape.size(), 0);
      hi[static_cast<size_t>(axis)] = 1;
      positions = pad(positions, lo, hi, type.size());
    }
    ++axis;
  }
  Array selected = index(positions, entries, where);
  const Shape& selected_shape = selected.shape(where);
  Array updates = ops::materialize(values, {type.dtype, type.weak}, selected_shape, where);
  int64_t count = shape_size(selected_shape);
  Array written =
      ops::scatter_windows(mode, reshape(x, {type.size()}), reshape(selected, {count, 1}), reshape(updates, {count}));
  return reshape(written, type.shape);
}

}  // namespace

IndexUpdate Array::at(std::vector<Index> indices) const { return IndexUpdate(*this, std::move(indices)); }

Array IndexUpdate::get(Location where) const { return index(x_, indices_, where); }
Array IndexUpdate::set(Operand values, Location where) const {
  return update_at(ops::ScatterMode::assign, x_, indices_, values, where);
}
Array IndexUpdate::add(Operand values, Location where) const {
  return update_at(ops::ScatterMode::add, x_, indices_, values, where);
}
Array IndexUpdate::mul(Operand values, Location where) const {
  return update_at(ops::ScatterMode::mul, x_, indices_, values, where);
}
Array IndexUpdate::max(Operand values, Location where) const {
  return update_at(ops::ScatterMode::max, x_, indices_, values, where);
}
Array IndexUpdate::min(Operand values, Location where) const {
  return update_at(ops::ScatterMode::min, x_, indices_, values, where);
}

}  // namespace kiln
