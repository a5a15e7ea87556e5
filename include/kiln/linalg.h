// Linear algebra on the last two axes, batched over the others (numpy.linalg,
// jax.numpy.linalg), through LAPACK: factorizations that fail give NaN, as
// in JAX. Every function differentiates (JAX's rules) and batches under vmap.
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "kiln/ops.h"

namespace kiln::linalg {

/// The lower factor L of a symmetric positive definite a = L L^T (only a's
/// lower triangle is read).
Array cholesky(const Array& a, Location where = Location::current());
/// x with op(a) x = b, op(a) = a or a^T, a lower or upper triangular (the
/// other triangle is not read; unit_diagonal: its diagonal is taken as ones).
/// b is [..., n, k] or a vector [..., n].
Array triangular_solve(const Array& a, const Array& b, bool lower = true, bool transpose_a = false,
                       bool unit_diagonal = false, Location where = Location::current());
/// x with a x = b for square a (LU with partial pivoting); b [..., n, k] or [..., n].
Array solve(const Array& a, const Array& b, Location where = Location::current());
Array inv(const Array& a, Location where = Location::current());
/// (sign, log |det a|): sign 0 and log -inf for a singular matrix.
std::pair<Array, Array> slogdet(const Array& a, Location where = Location::current());
Array det(const Array& a, Location where = Location::current());

struct QR {
  Array q, r;
};
/// a = Q R with orthonormal columns in Q and R upper triangular (Householder,
/// LAPACK's signs, as NumPy). mode "reduced": Q [..., m, k], R [..., k, n],
/// k = min(m, n); "complete": Q [..., m, m], R [..., m, n]. Differentiable
/// except for mode "complete" with m > n.
QR qr(const Array& a, std::string_view mode = "reduced", Location where = Location::current());

struct SVD {
  Array u, s, vh;  // u and vh are empty Arrays when compute_uv is false
};
/// a = U diag(S) Vh, S descending (NumPy's svd). full_matrices: U [..., m, m]
/// and Vh [..., n, n], else [..., m, k] and [..., k, n]. Differentiable for
/// full_matrices=false (or square a) with distinct nonzero singular values;
/// S alone (compute_uv=false) wherever they are distinct.
SVD svd(const Array& a, bool full_matrices = true, bool compute_uv = true, Location where = Location::current());
/// The singular values alone, descending: svd(a, false, false).s.
Array svdvals(const Array& a, Location where = Location::current());

struct Eigh {
  Array eigenvalues, eigenvectors;
};
/// The eigenvalues (ascending) and eigenvectors (columns) of the symmetric
/// matrix whose lower (or upper) triangle is a's; the other is not read.
/// Differentiable with distinct eigenvalues.
Eigh eigh(const Array& a, bool lower = true, Location where = Location::current());
Array eigvalsh(const Array& a, bool lower = true, Location where = Location::current());

inline constexpr double inf = std::numeric_limits<double>::infinity();

/// NumPy's `ord` of norm: a number (2, 1, inf, -inf, 0, any p) or "fro" /
/// "nuc"; default-constructed, NumPy's None (2-norm of vectors, Frobenius
/// of matrices).
class NormOrder {
 public:
  NormOrder() = default;
  NormOrder(double p) : order_(p) {}
  NormOrder(int p) : order_(static_cast<double>(p)) {}
  NormOrder(const char* name) : order_(std::string(name)) {}

  bool is_default() const { return std::holds_alternative<std::monostate>(order_); }
  bool is(double p) const { return std::holds_alternative<double>(order_) && std::get<double>(order_) == p; }
  bool is(std::string_view name) const {
    return std::holds_alternative<std::string>(order_) && std::get<std::string>(order_) == name;
  }
  std::optional<double> number() const;
  /// "None", "2", "inf", "\"fro\"", ...
  std::string to_string() const;

 private:
  std::variant<std::monostate, double, std::string> order_;
};

/// numpy.linalg.norm: one axis gives vector norms, two matrix norms over
/// that pair of axes (2, -2 and "nuc" through svd); without an axis, a
/// vector or a matrix is one, and any other array with the default ord is
/// flattened. Integers are converted to f32.
Array norm(const Array& x, NormOrder ord = {}, Axes axis = Axes::all(), bool keepdims = false,
           Location where = Location::current());

struct Lstsq {
  Array solution;         // [..., n, k], or [..., n] for a vector b
  Array residuals;        // squared norms of b - a x per column [..., k] for m > n, else [..., 0]
  Array rank;             // i32 [...]
  Array singular_values;  // [..., min(m, n)], descending
};
/// numpy.linalg.lstsq, batched: the x of least |b - a x| (the least |x|
/// among those), through svd, singular values below rcond times the
/// largest (default: max(m, n) times the dtype's epsilon) taken as zero.
/// Unlike NumPy, a rank-deficient a still reports its residuals, since their
/// shape cannot depend on the values (JAX does the same). The solution
/// differentiates in a and b through svd's derivative: wherever the singular
/// values are distinct and nonzero.
Lstsq lstsq(const Array& a, const Array& b, std::optional<double> rcond = std::nullopt,
            Location where = Location::current());
/// The Moore-Penrose pseudo-inverse [..., n, m] through svd, with lstsq's cutoff.
Array pinv(const Array& a, std::optional<double> rcond = std::nullopt, Location where = Location::current());
/// The number of singular values above tol (default: the largest times
/// max(m, n) times epsilon, NumPy's), i64 [...].
Array matrix_rank(const Array& a, std::optional<double> tol = std::nullopt, Location where = Location::current());

}  // namespace kiln::linalg
