// What the files of the linalg family share: the matrix dimensions of a
// type, the square-matrix check, the walk over a batch of matrices, and the
// small builders their derivative rules are written with.
#pragma once

#include <algorithm>
#include <limits>
#include <vector>

#include "core/array_impl.h"
#include "ops/common/rules.h"

namespace kiln::ops {

inline int64_t rows(const AbstractValue& type) { return type.shape[type.shape.size() - 2]; }
inline int64_t columns(const AbstractValue& type) { return type.shape.back(); }

/// Raises (naming `name`) unless `a` holds square f32 or f64 matrices.
void check_square(const char* name, const AbstractValue& a, Location where);
/// Raises (naming `name`) unless `a` holds f32 or f64 matrices [..., m, n].
void check_matrices(const char* name, const AbstractValue& a, Location where);

/// Calls fn(matrix index) for each matrix of a [..., r, c] array.
template <class F>
void each_matrix(const AbstractValue& type, F&& fn) {
  int64_t count = 1;
  for (size_t a = 0; a + 2 < type.shape.size(); ++a) count *= type.shape[a];
  for (int64_t m = 0; m < count; ++m) fn(m);
}

template <class T>
void fill_nan(T* begin, int64_t count) {
  std::fill(begin, begin + count, std::numeric_limits<T>::quiet_NaN());
}

/// x with its last two axes swapped.
Array swap_last(const Array& x);
/// The triangular_solve primitive on a [..., n, n] and b [..., n, k].
Array triangular(const Array& a, const Array& b, bool is_lower, bool transpose_a, bool unit, Location where);
/// n x n identity matrices in the shape of the square matrices `a`.
Array identity_like(const Array& a);

/// The rule the linalg primitives share for vmap: they take leading batch
/// dimensions already, so the batch axis is one more of them.
Array batch_matrices(const Node& node, std::span<const Array> inputs, std::span<const char> batched, int64_t size);

inline constexpr const char* lapack_waiver = "runs its reference kernel: one LAPACK or BLAS call per matrix";

/// Several results of one factorization in one array: each block's elements
/// in row-major order, one block after the other along the last axis (the
/// IR's nodes have one result each). The blocks share their first
/// `batch_rank` axes.
Array pack_blocks(const std::vector<Array>& blocks, int64_t batch_rank);
/// Block `index` of `packed`, reshaped to batch + `extents`; `sizes` lists
/// every block's element count.
Array unpack_block(const Array& packed, const std::vector<int64_t>& sizes, size_t index, const Shape& extents);

void register_linalg_decomposition_rules(RuleTable& table);

}  // namespace kiln::ops
