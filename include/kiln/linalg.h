// Linear algebra on the last two axes, batched over the others (numpy.linalg,
// jax.numpy.linalg), through LAPACK: factorizations that fail give NaN, as
// in JAX. Every function differentiates (JAX's rules) and batches under vmap.
#pragma once

#include <string_view>
#include <utility>

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

}  // namespace kiln::linalg
