// The linalg family's composites over the decompositions: norm (NumPy's
// vector and matrix norms), lstsq, pinv and matrix_rank. They add no
// primitive: their derivatives and batching come from the operations they
// are built of.
#include <cmath>
#include <sstream>
#include <string>

#include "core/error_format.h"
#include "core/location_scope.h"
#include "kiln/linalg.h"
#include "ops/linalg/linalg.h"

namespace kiln::linalg {

using detail::OperationScope;

std::optional<double> NormOrder::number() const {
  if (std::holds_alternative<double>(order_)) return std::get<double>(order_);
  return std::nullopt;
}

std::string NormOrder::to_string() const {
  if (is_default()) return "None";
  if (auto p = number()) {
    if (std::isinf(*p)) return *p > 0 ? "inf" : "-inf";
    std::ostringstream text;
    text << *p;
    return text.str();
  }
  return "\"" + std::get<std::string>(order_) + "\"";
}

namespace {

/// Vector norms along `axis` (inside norm's scope).
Array vector_norm(const Array& x, const NormOrder& ord, int64_t axis, bool keepdims, const std::string& described,
                  Location where) {
  if (!ord.is_default() && !ord.number())
    detail::raise("norm",
                  "ord " + ord.to_string() + " is a matrix norm, but one axis (" + std::to_string(axis) + ") of " +
                      described + " was given",
                  where, "pass two axes for a matrix norm, or a number as ord");
  if (ord.is_default() || ord.is(2)) return sqrt(sum(square(x), axis, keepdims));
  if (ord.is(inf)) return max(abs(x), axis, keepdims);
  if (ord.is(-inf)) return min(abs(x), axis, keepdims);
  if (ord.is(0)) return sum(astype(x != 0, x.dtype()), axis, keepdims);
  if (ord.is(1)) return sum(abs(x), axis, keepdims);
  double p = *ord.number();
  return pow(sum(pow(abs(x), p), axis, keepdims), 1 / p);
}

/// Singular values of the matrices in axes (row, column), the other axes first.
Array singular_values_over(const Array& x, int64_t row, int64_t column, Location where) {
  std::vector<int64_t> permutation;
  for (int64_t a = 0; a < x.ndim(); ++a)
    if (a != row && a != column) permutation.push_back(a);
  permutation.insert(permutation.end(), {row, column});
  return svdvals(transpose(x, permutation, where), where);
}

/// Matrix norms over axes (row, column).
Array matrix_norm(const Array& x, const NormOrder& ord, int64_t row, int64_t column, bool keepdims, Location where) {
  Axes both{std::min(row, column), std::max(row, column)};
  if (ord.is_default() || ord.is("fro")) return sqrt(sum(square(x, where), both, keepdims, where), where);
  auto restore = [&](const Array& reduced) { return keepdims ? expand_dims(reduced, both, where) : reduced; };
  if (ord.is("nuc")) return restore(sum(singular_values_over(x, row, column, where), -1, false, where));
  if (ord.is(2)) return restore(max(singular_values_over(x, row, column, where), -1, false, where));
  if (ord.is(-2)) return restore(min(singular_values_over(x, row, column, where), -1, false, where));
  // 1: the largest column sum of |x|; inf: the largest row sum.
  bool by_columns = ord.is(1) || ord.is(-1), by_rows = ord.is(inf) || ord.is(-inf);
  if (!by_columns && !by_rows)
    detail::raise("norm", "matrix norms take ord \"fro\", \"nuc\", 1, -1, 2, -2, inf or -inf, got " + ord.to_string(),
                  where, "pass one axis for a vector p-norm");
  Array sums = sum(abs(x, where), by_columns ? row : column, true, where);
  int64_t across = by_columns ? column : row;
  Array extreme = ord.is(1) || ord.is(inf) ? max(sums, across, true, where) : min(sums, across, true, where);
  return keepdims ? extreme : squeeze(extreme, both, where);
}

double epsilon_of(DType dtype) {
  return dtype == DType::f32 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
}

/// The reciprocals of the singular values above `relative` times the
/// largest, zero for the others (the pseudo-inverse's middle factor), and
/// which were kept.
std::pair<Array, Array> inverted_singular_values(const Array& s, double relative, Location where) {
  Array largest = max(s, -1, true, where);
  Array kept = s > largest * relative;
  // The inner where keeps 1 / 0 out of the derivative of the values cut.
  return {kiln::where(kept, reciprocal(kiln::where(kept, s, 1)), 0), kept};
}

double default_cutoff(const Array& a, std::optional<double> given) {
  return given ? *given : epsilon_of(a.dtype()) * static_cast<double>(std::max(a.shape(-1), a.shape(-2)));
}

Shape batch_of(const Array& a) { return Shape(a.shape().begin(), a.shape().end() - 2); }

}  // namespace

Array norm(const Array& input, NormOrder ord, Axes axis, bool keepdims, Location where) {
  OperationScope at("norm", where);
  const detail::AbstractValue& type = detail::impl_of(input, "norm", where).type;
  // A complex array's norms are those of its magnitudes, in the real dtype of
  // its precision, except the ones built on singular values.
  Array x = is_floating(type.dtype)  ? input
            : is_complex(type.dtype) ? abs(input, where)
                                     : astype(input, DType::f32, where);
  int64_t ndim = x.ndim();
  std::vector<int64_t> axes;
  if (axis.is_all()) {
    if (ord.is_default()) return sqrt(sum(square(x, where), Axes::all(), keepdims, where), where);
    if (ndim != 1 && ndim != 2)
      detail::raise("norm", "ord " + ord.to_string() + " needs a vector or a matrix, got " + type.to_string(), where,
                    "pass axis: one axis for vector norms, two for matrix norms");
    for (int64_t a = 0; a < ndim; ++a) axes.push_back(a);
  } else {
    for (int64_t a : axis.list()) {
      int64_t normalized = a < 0 ? a + ndim : a;
      if (normalized < 0 || normalized >= ndim)
        detail::raise("norm", "axis " + std::to_string(a) + " is out of range for " + type.to_string(), where,
                      "pass axes in [-ndim, ndim)");
      axes.push_back(normalized);
    }
  }
  if (axes.size() == 1) return vector_norm(x, ord, axes[0], keepdims, type.to_string(), where);
  bool singular = ord.is("nuc") || ord.is(2) || ord.is(-2);
  if (axes.size() == 2 && singular && is_complex(type.dtype))
    detail::raise("norm",
                  "ord " + ord.to_string() + " needs the singular values of complex matrices, got " + type.to_string(),
                  where, "kiln's singular values are of real matrices: use ord \"fro\", 1 or inf, or real parts");
  if (axes.size() == 2 && axes[0] != axes[1]) return matrix_norm(x, ord, axes[0], axes[1], keepdims, where);
  detail::raise("norm",
                "takes one axis (vector norms) or two distinct axes (matrix norms), got " + ops::ints_string(axes) +
                    " for " + type.to_string(),
                where, "pass axis as one axis or a pair");
}

Lstsq lstsq(const Array& a, const Array& b, std::optional<double> rcond, Location where) {
  OperationScope at("lstsq", where);
  const detail::AbstractValue& a_type = detail::impl_of(a, "lstsq", where).type;
  const detail::AbstractValue& b_type = detail::impl_of(b, "lstsq", where).type;
  ops::check_matrices("lstsq", a_type, where);
  bool vector = b_type.ndim() == a_type.ndim() - 1;
  Array rhs = vector ? expand_dims(b, -1, where) : b;
  bool fits = b_type.dtype == a_type.dtype && rhs.ndim() == a.ndim() && rhs.shape(-2) == a.shape(-2) &&
              std::equal(a_type.shape.begin(), a_type.shape.end() - 2, rhs.shape().begin());
  if (!fits)
    detail::raise("lstsq",
                  "b must be [..., m, k] or [..., m] with a's batch dims and dtype, got a " + a_type.to_string() +
                      " and b " + b_type.to_string(),
                  where, "give b as many rows as a, and the same leading dims and dtype");
  int64_t m = a.shape(-2), n = a.shape(-1);
  auto [u, s, vh] = svd(a, false, true, where);
  Shape solution_shape = batch_of(a);
  solution_shape.insert(solution_shape.end(), {n, rhs.shape(-1)});
  Array x = zeros(solution_shape, a.dtype(), where), rank = zeros(batch_of(a), DType::i32, where);
  if (std::min(m, n) > 0) {
    auto [s_inverse, kept] = inverted_singular_values(s, default_cutoff(a, rcond), where);
    Array projected = matmul(ops::swap_last(u), rhs, where);
    x = matmul(ops::swap_last(vh), expand_dims(s_inverse, -1) * projected);
    rank = sum(kept, -1, false, where);
  }
  Shape empty = batch_of(a);
  empty.push_back(0);
  Array residuals = m > n ? sum(square(rhs - matmul(a, x)), -2) : zeros(empty, a.dtype());
  return {vector ? squeeze(x, -1, where) : x, residuals, rank, s};
}

Array pinv(const Array& a, std::optional<double> rcond, Location where) {
  OperationScope at("pinv", where);
  ops::check_matrices("pinv", detail::impl_of(a, "pinv", where).type, where);
  auto [u, s, vh] = svd(a, false, true, where);
  if (s.shape(-1) == 0) return ops::swap_last(zeros_like(a, where));
  Array s_inverse = inverted_singular_values(s, default_cutoff(a, rcond), where).first;
  return matmul(ops::swap_last(vh) * expand_dims(s_inverse, -2), ops::swap_last(u));
}

Array matrix_rank(const Array& a, std::optional<double> tol, Location where) {
  OperationScope at("matrix_rank", where);
  ops::check_matrices("matrix_rank", detail::impl_of(a, "matrix_rank", where).type, where);
  Array s = svdvals(a, where);
  if (s.shape(-1) == 0) return zeros(batch_of(a), DType::i64, where);
  Array largest = max(s, -1, true);
  Array threshold = tol ? full_like(largest, *tol) : largest * default_cutoff(a, std::nullopt);
  return count_nonzero(s > threshold, -1);
}

}  // namespace kiln::linalg
