// Linear algebra on the last two axes, batched over the others (numpy.linalg,
// jax.numpy.linalg), through LAPACK: factorizations that fail give NaN, as
// in JAX. Every function differentiates (JAX's rules) and batches under vmap.
#pragma once

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

}  // namespace kiln::linalg
