// NumPy's basic indexing (kiln::index): integers, Python slices with any
// bounds and steps, newaxis, ellipsis, and one index array. One slice
// primitive takes every positive-step range, flips turn the negative-step
// ones around, a take gathers along the array's axis, and a reshape drops
// the integer-indexed axes and adds the new ones: the view differentiates
// and batches through those primitives.
#include <algorithm>

#include "core/array_impl.h"
#include "core/error_format.h"
#include "kiln/ops.h"

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

}  // namespace

Array index(const Array& x, const std::vector<Index>& indices, Location where) {
  const detail::AbstractValue& type = detail::impl_of(x, "index", where).type;
  auto raise = [&](const std::string& what, const std::string& fix) {
    detail::raise("index", what + " (indexing " + type.to_string() + ")", where, fix);
  };
  int64_t named = 0, ellipses = 0, arrays = 0;
  for (const Index& i : indices) {
    if (i.kind() == Index::Kind::ellipsis) ++ellipses;
    else if (i.kind() != Index::Kind::new_axis) ++named;
    if (i.kind() == Index::Kind::array) ++arrays;
  }
  if (ellipses > 1) raise("more than one ellipsis", "use kiln::ellipsis once");
  if (arrays > 1)
    raise("more than one index array", "gather along one axis at a time, or combine the indices into flat positions");
  if (named > type.ndim())
    raise(std::to_string(named) + " indices for " + std::to_string(type.ndim()) + " dimensions",
          "index at most one entry per dimension");
  // Every axis gets one entry: the ellipsis (or the end) stands for the rest.
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

  std::vector<int64_t> start(static_cast<size_t>(type.ndim())), stop = type.shape, step(start.size(), 1);
  std::vector<int64_t> flipped;
  Shape result;
  std::optional<std::pair<int64_t, Array>> gather;  // axis and indices
  std::vector<int64_t> counts(entries.size(), 1);   // each slice's extent; 1 for a new axis
  int64_t axis = 0;
  for (size_t k = 0; k < entries.size(); ++k) {
    const Index& entry = entries[k];
    if (entry.kind() == Index::Kind::new_axis) {
      result.push_back(1);
      continue;
    }
    auto a = static_cast<size_t>(axis);
    int64_t n = type.shape[a];
    if (entry.kind() == Index::Kind::integer) {
      int64_t i = entry.integer() < 0 ? entry.integer() + n : entry.integer();
      if (i < 0 || i >= n)
        raise("index " + std::to_string(entry.integer()) + " is out of bounds for axis " + std::to_string(axis) +
                  " with size " + std::to_string(n),
              "integers count from 0, or from the end when negative");
      start[a] = i;
      stop[a] = i + 1;
    } else if (entry.kind() == Index::Kind::slice) {
      const Slice& s = entry.slice();
      if (s.step == 0) raise("slice " + index_text(entry) + " has step 0", "steps are nonzero: 1, 2, -1, ...");
      auto [first, count] = resolve(s, n);
      int64_t magnitude = std::abs(s.step);
      // A negative step walks from `first` down: take the same elements
      // upward from the last one, then flip the axis.
      int64_t lowest = s.step > 0 ? first : first + (count - 1) * s.step;
      start[a] = count == 0 ? 0 : lowest;
      stop[a] = count == 0 ? 0 : lowest + (count - 1) * magnitude + 1;
      step[a] = magnitude;
      if (s.step < 0 && count > 1) flipped.push_back(axis);
      result.push_back(count);
      counts[k] = count;
    } else {
      const Array& positions = entry.array();
      if (is_floating(positions.dtype(where)) || positions.dtype(where) == DType::bool_)
        raise("index arrays hold integers, got " + positions.impl()->type.to_string(),
              "convert with astype(indices, kiln::i32)");
      gather = std::pair{axis, positions};
      const Shape& shape = positions.shape(where);
      result.insert(result.end(), shape.begin(), shape.end());
    }
    ++axis;
  }
  Array view = slice(x, start, stop, step, where);
  if (!flipped.empty()) view = flip(view, Axes(flipped), where);
  if (!gather) return reshape(view, result, where);
  view = take(view, gather->second, gather->first, where);
  // With an index array, NumPy counts the integers as index arrays too: if
  // any of them stands apart from the array (another entry between), the
  // gathered dimensions go first instead of in place.
  std::vector<size_t> advanced;
  for (size_t k = 0; k < entries.size(); ++k)
    if (entries[k].kind() == Index::Kind::integer || entries[k].kind() == Index::Kind::array) advanced.push_back(k);
  bool together = advanced.back() - advanced.front() + 1 == advanced.size();
  if (together) return reshape(view, result, where);
  // Drop the integers' axes, bring the gathered dimensions to the front,
  // then add the new axes among the slices' dimensions where they stand.
  Shape compact, gathered = gather->second.shape(where), final_shape = gathered;
  size_t gathered_at = 0;
  for (size_t k = 0; k < entries.size(); ++k) {
    if (entries[k].kind() == Index::Kind::slice) compact.push_back(counts[k]);
    if (entries[k].kind() == Index::Kind::array) {
      gathered_at = compact.size();
      compact.insert(compact.end(), gathered.begin(), gathered.end());
    }
    if (entries[k].kind() == Index::Kind::slice || entries[k].kind() == Index::Kind::new_axis)
      final_shape.push_back(counts[k]);
  }
  std::vector<int64_t> permutation;
  for (size_t d = 0; d < gathered.size(); ++d) permutation.push_back(static_cast<int64_t>(gathered_at + d));
  for (size_t d = 0; d < compact.size(); ++d)
    if (d < gathered_at || d >= gathered_at + gathered.size()) permutation.push_back(static_cast<int64_t>(d));
  return reshape(transpose(reshape(view, compact, where), permutation, where), final_shape, where);
}

}  // namespace kiln
