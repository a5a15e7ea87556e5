// Matrix products through OpenBLAS for compiled executables. The reference
// interpreter keeps its own plain loops: it is the oracle these are tested against.
#pragma once

#include <span>

#include "ir/graph.h"

namespace kiln::runtime {

/// True when `node` is a matmul this module computes (f32 or f64).
bool blas_handles(const ir::Node& node);
/// [..., m, k] x [..., k, n] with equal batch dims, one gemm per batch entry.
Array blas_matmul(const ir::Node& node, std::span<const Array> inputs);
/// The same with operands stored transposed in their last two axes: `a` is
/// [..., k, m] when `transpose_a`, `b` is [..., n, k] when `transpose_b`.
Array blas_matmul(const ir::Node& node, const Array& a, bool transpose_a, const Array& b, bool transpose_b);

}  // namespace kiln::runtime
