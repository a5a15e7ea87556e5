// NumPy's shape helpers as composites of reshape, transpose, broadcast,
// slice and concatenate: flatten, ravel, swapaxes, moveaxis, atleast_*d,
// roll, split, unstack, tile, repeat, tril, triu, tri, broadcast_arrays,
// meshgrid, diagonal, trace, diag. They trace and differentiate through the primitives they use.
#include <algorithm>
#include <numeric>

#include "core/error_format.h"
#include "kiln/ops.h"
#include "ops/common/apply.h"
#include "ops/common/axes.h"
#include "ops/common/promotion.h"

namespace kiln {

using detail::OperationScope;

namespace {

int64_t axis_of(const Array& x, int64_t axis, const char* operation, Location where) {
  return ops::normalize_axis(axis, x.ndim(), operation, x.shape(), where);
}

// Rows and columns of the last two axes compared: column - row against k.
// Called inside tril's, triu's or diag's scope.
Array diagonal_offsets(const Shape& shape, const char* operation, Location where) {
  if (shape.size() < 2)
    detail::raise(operation, "needs at least 2 dimensions, got " + shape_string(shape), where,
                  "reshape a vector to [1, n] (atleast_2d) first");
  int64_t rows = shape[shape.size() - 2], columns = shape.back();
  return reshape(arange(0, columns, 1, DType::i64), {1, columns}) - reshape(arange(0, rows, 1, DType::i64), {rows, 1});
}

}  // namespace

Array flatten(const Array& x, Location where) { return reshape(x, {x.size()}, where); }
Array ravel(const Array& x, Location where) { return flatten(x, where); }

Array swapaxes(const Array& x, int64_t axis1, int64_t axis2, Location where) {
  std::vector<int64_t> perm(static_cast<size_t>(x.ndim()));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[static_cast<size_t>(axis_of(x, axis1, "swapaxes", where))],
            perm[static_cast<size_t>(axis_of(x, axis2, "swapaxes", where))]);
  return transpose(x, perm, where);
}

Array moveaxis(const Array& x, int64_t source, int64_t destination, Location where) {
  int64_t from = axis_of(x, source, "moveaxis", where), to = axis_of(x, destination, "moveaxis", where);
  std::vector<int64_t> perm;
  for (int64_t axis = 0; axis < x.ndim(); ++axis)
    if (axis != from) perm.push_back(axis);
  perm.insert(perm.begin() + to, from);
  return transpose(x, perm, where);
}

Array atleast_1d(const Array& x, Location where) { return x.ndim() >= 1 ? x : reshape(x, {1}, where); }

Array atleast_2d(const Array& x, Location where) {
  if (x.ndim() >= 2) return x;
  return reshape(x, {1, x.size()}, where);
}

Array atleast_3d(const Array& x, Location where) {
  if (x.ndim() >= 3) return x;
  if (x.ndim() == 2) return reshape(x, {x.shape()[0], x.shape()[1], 1}, where);
  return reshape(x, {1, x.size(), 1}, where);
}

Array roll(const Array& x, int64_t shift, std::optional<int64_t> axis, Location where) {
  if (!axis) return reshape(roll(flatten(x, where), shift, 0, where), x.shape(), where);
  int64_t a = axis_of(x, *axis, "roll", where);
  int64_t extent = x.shape()[static_cast<size_t>(a)];
  if (extent == 0) return x;
  int64_t cut = ((-shift) % extent + extent) % extent;  // the element that comes first
  if (cut == 0) return x;
  std::vector<int64_t> start(static_cast<size_t>(x.ndim()), 0), stop = x.shape();
  std::vector<int64_t> head_stop = stop, tail_start = start;
  tail_start[static_cast<size_t>(a)] = cut;
  head_stop[static_cast<size_t>(a)] = cut;
  return concatenate({slice(x, tail_start, stop, {}, where), slice(x, start, head_stop, {}, where)}, a, where);
}

std::vector<Array> split(const Array& x, const std::vector<int64_t>& indices, int64_t axis, Location where) {
  int64_t a = axis_of(x, axis, "split", where);
  int64_t extent = x.shape()[static_cast<size_t>(a)];
  // Part k is x[cut k-1 : cut k] along the axis, each cut read as a Python
  // slice bound (negative from the end, clamped): cuts out of order give
  // empty parts, and the next part starts at its own cut.
  auto bound = [extent](int64_t cut) { return std::clamp<int64_t>(cut < 0 ? cut + extent : cut, 0, extent); };
  std::vector<Array> parts;
  for (size_t k = 0; k <= indices.size(); ++k) {
    int64_t begin = k == 0 ? 0 : bound(indices[k - 1]);
    int64_t end = k < indices.size() ? bound(indices[k]) : extent;
    std::vector<int64_t> start(static_cast<size_t>(x.ndim()), 0), stop = x.shape();
    start[static_cast<size_t>(a)] = begin;
    stop[static_cast<size_t>(a)] = std::max(begin, end);
    parts.push_back(slice(x, start, stop, {}, where));
  }
  return parts;
}

std::vector<Array> split(const Array& x, int64_t sections, int64_t axis, Location where) {
  int64_t a = axis_of(x, axis, "split", where);
  int64_t extent = x.shape()[static_cast<size_t>(a)];
  if (sections <= 0 || extent % sections != 0)
    detail::raise("split",
                  "axis " + std::to_string(a) + " of " + shape_string(x.shape()) + " has " + std::to_string(extent) +
                      " elements, which " + std::to_string(sections) + " sections do not divide equally",
                  where, "pass the cut indices instead (split(x, {i, j, ...}, axis)) for unequal parts");
  std::vector<int64_t> cuts;
  for (int64_t k = 1; k < sections; ++k) cuts.push_back(k * (extent / sections));
  return split(x, cuts, a, where);
}

std::vector<Array> unstack(const Array& x, int64_t axis, Location where) {
  int64_t a = axis_of(x, axis, "unstack", where);
  std::vector<Array> parts;
  Shape rest = x.shape();
  rest.erase(rest.begin() + a);
  for (const Array& part : split(x, x.shape()[static_cast<size_t>(a)], a, where))
    parts.push_back(reshape(part, rest, where));
  return parts;
}

Array tile(const Array& x, std::vector<int64_t> reps, Location where) {
  OperationScope at("tile", where);
  for (int64_t r : reps)
    if (r < 0) detail::raise("tile", "a negative repetition " + std::to_string(r), where, "repetitions are >= 0");
  // Both padded with leading 1s to one rank; each axis becomes [reps, extent].
  size_t rank = std::max(reps.size(), static_cast<size_t>(x.ndim()));
  reps.insert(reps.begin(), rank - reps.size(), 1);
  Shape shape = x.shape();
  shape.insert(shape.begin(), rank - shape.size(), 1);
  Shape interleaved, broadcast, result;
  for (size_t d = 0; d < rank; ++d) {
    interleaved.insert(interleaved.end(), {1, shape[d]});
    broadcast.insert(broadcast.end(), {reps[d], shape[d]});
    result.push_back(reps[d] * shape[d]);
  }
  return reshape(broadcast_to(reshape(x, interleaved, where), broadcast, where), result, where);
}

Array repeat(const Array& x, int64_t repeats, std::optional<int64_t> axis, Location where) {
  OperationScope at("repeat", where);
  if (repeats < 0)
    detail::raise("repeat", "a negative repetition " + std::to_string(repeats), where, "repetitions are >= 0");
  if (!axis) return repeat(flatten(x, where), repeats, 0, where);
  int64_t a = axis_of(x, *axis, "repeat", where);
  // Each element gets a new axis after `a` of extent `repeats`, then the two merge.
  Shape expanded = x.shape(), broadcast = x.shape(), result = x.shape();
  expanded.insert(expanded.begin() + a + 1, 1);
  broadcast.insert(broadcast.begin() + a + 1, repeats);
  result[static_cast<size_t>(a)] *= repeats;
  return reshape(broadcast_to(reshape(x, expanded, where), broadcast, where), result, where);
}

Array tril(const Array& x, int64_t k, Location where) {
  OperationScope at("tril", where);
  return kiln::where(diagonal_offsets(x.shape(), "tril", where) <= k, x, zeros({}, x.dtype()));
}

Array triu(const Array& x, int64_t k, Location where) {
  OperationScope at("triu", where);
  return kiln::where(diagonal_offsets(x.shape(), "triu", where) >= k, x, zeros({}, x.dtype()));
}

Array tri(int64_t n, std::optional<int64_t> m, int64_t k, DType dtype, Location where) {
  OperationScope at("tri", where);
  if (n < 0 || m.value_or(n) < 0)
    detail::raise("tri", "a negative extent", where, "tri(n, m) makes an n x m matrix: n, m >= 0");
  return tril(ones({n, m.value_or(n)}, dtype, where), k, where);
}

std::vector<Array> broadcast_arrays(const std::vector<Array>& xs, Location where) {
  OperationScope at("broadcast_arrays", where);
  Shape common;
  for (const Array& x : xs) common = ops::broadcast_shapes(common, x.shape(), "broadcast_arrays", where);
  std::vector<Array> out;
  for (const Array& x : xs) out.push_back(broadcast_to(x, common, where));
  return out;
}

std::vector<Array> meshgrid(const std::vector<Array>& xs, bool xy_indexing, Location where) {
  OperationScope at("meshgrid", where);
  for (const Array& x : xs)
    if (x.ndim() != 1)
      detail::raise("meshgrid", "takes 1-d arrays, got " + shape_string(x.shape()), where, "flatten them first");
  size_t count = xs.size();
  Shape grid;
  for (const Array& x : xs) grid.push_back(x.size());
  if (xy_indexing && count >= 2) std::swap(grid[0], grid[1]);
  std::vector<Array> out;
  for (size_t k = 0; k < count; ++k) {
    size_t position = k;
    if (xy_indexing && count >= 2 && k < 2) position = 1 - k;
    Shape shape(count, 1);
    shape[position] = xs[k].size();
    out.push_back(broadcast_to(reshape(xs[k], shape, where), grid, where));
  }
  return out;
}

Array diagonal(const Array& x, int64_t offset, int64_t axis1, int64_t axis2, Location where) {
  OperationScope at("diagonal", where);
  const detail::AbstractValue& type = detail::impl_of(x, "diagonal", where).type;
  if (type.ndim() < 2)
    detail::raise("diagonal", "needs at least 2 dimensions, got " + type.to_string(), where,
                  "use diag to build a matrix from a vector");
  int64_t a1 = axis_of(x, axis1, "diagonal", where), a2 = axis_of(x, axis2, "diagonal", where);
  if (a1 == a2)
    detail::raise("diagonal", "axis1 and axis2 are both " + std::to_string(a1) + " for " + type.to_string(), where,
                  "name two different axes");
  // The two axes last (NumPy puts the diagonal last), then the diagonal's
  // elements gathered from the flattened matrices.
  std::vector<int64_t> permutation;
  for (int64_t a = 0; a < type.ndim(); ++a)
    if (a != a1 && a != a2) permutation.push_back(a);
  permutation.push_back(a1);
  permutation.push_back(a2);
  Array moved = transpose(x, permutation, where);
  Shape shape = moved.shape();
  int64_t rows = shape[shape.size() - 2], columns = shape.back();
  int64_t first_row = std::max<int64_t>(-offset, 0), first_column = std::max<int64_t>(offset, 0);
  int64_t length = std::max<int64_t>(0, std::min(rows - first_row, columns - first_column));
  shape.resize(shape.size() - 2);
  Shape flat = shape;
  flat.push_back(rows * columns);
  // Element i of the diagonal is at (first_row + i) * columns + first_column + i.
  Array positions = arange(first_row * columns + first_column,
                           first_row * columns + first_column + length * (columns + 1), columns + 1, DType::i64, where);
  return take(reshape(moved, flat, where), positions, -1, where);
}

Array trace(const Array& x, int64_t offset, int64_t axis1, int64_t axis2, Location where) {
  OperationScope at("trace", where);
  return sum(diagonal(x, offset, axis1, axis2, where), -1, false, where);
}

Array diag(const Array& x, int64_t k, Location where) {
  OperationScope at("diag", where);
  const detail::AbstractValue& type = detail::impl_of(x, "diag", where).type;
  if (type.ndim() == 2) return diagonal(x, k, 0, 1, where);
  if (type.ndim() != 1)
    detail::raise("diag",
                  "needs a vector (to build a matrix) or a matrix (to read a diagonal), got " + type.to_string(), where,
                  "use diagonal for the diagonals of stacked matrices");
  // A square matrix of n + |k| rows, zero off the k-th diagonal, which holds x.
  int64_t n = type.shape[0], size = n + std::abs(k);
  Array on_diagonal = diagonal_offsets({size, size}, "diag", where) == k;
  // Where along x each diagonal element sits: its row (k >= 0) or column.
  Array position = reshape(arange(0, size, 1, DType::i64), k >= 0 ? Shape{size, 1} : Shape{1, size});
  Array values =
      n == 0 ? zeros({size, size}, type.dtype) : take(x, clip(broadcast_to(position, {size, size}), 0, n - 1), 0);
  return kiln::where(on_diagonal, values, detail::literal(0, type.dtype, true, where));
}

}  // namespace kiln
