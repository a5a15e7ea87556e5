// OpenBLAS-backed matmul (see the header).
#include "runtime/blas.h"

#include <cblas.h>

#include <cstring>

namespace kiln::runtime {

bool blas_handles(const ir::Node& node) {
  return node.op == ir::Primitive::matmul && is_floating(node.type.dtype);
}

Array blas_matmul(const ir::Node& node, std::span<const Array> inputs) {
  return blas_matmul(node, inputs[0], false, inputs[1], false);
}

Array blas_matmul(const ir::Node& node, const Array& a_array, bool transpose_a, const Array& b_array,
                  bool transpose_b) {
  const detail::ArrayImpl& a = *a_array.impl();
  const detail::ArrayImpl& b = *b_array.impl();
  Array result = detail::allocate(node.type);
  const Shape& shape = node.type.shape;
  size_t rank = shape.size();
  int64_t m = shape[rank - 2], n = shape[rank - 1];
  const Shape& shape_a = a.type.shape;
  int64_t k = transpose_a ? shape_a[rank - 2] : shape_a[rank - 1];
  int64_t batch = 1;
  for (size_t d = 0; d + 2 < rank; ++d) batch *= shape[d];
  void* out = result.impl()->buffer->data();
  if (m * n == 0) return result;
  if (k == 0) {
    std::memset(out, 0, result.impl()->buffer->bytes());
    return result;
  }
  // Row-major leading dimensions are the stored rows' lengths.
  int lda = static_cast<int>(transpose_a ? m : k), ldb = static_cast<int>(transpose_b ? k : n);
  CBLAS_TRANSPOSE ta = transpose_a ? CblasTrans : CblasNoTrans, tb = transpose_b ? CblasTrans : CblasNoTrans;
  for (int64_t i = 0; i < batch; ++i) {
    if (node.type.dtype == DType::f32) {
      cblas_sgemm(CblasRowMajor, ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f,
                  a.data<float>() + i * m * k, lda, b.data<float>() + i * k * n, ldb, 0.0f,
                  static_cast<float*>(out) + i * m * n, static_cast<int>(n));
    } else {
      cblas_dgemm(CblasRowMajor, ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0,
                  a.data<double>() + i * m * k, lda, b.data<double>() + i * k * n, ldb, 0.0,
                  static_cast<double*>(out) + i * m * n, static_cast<int>(n));
    }
  }
  return result;
}

}  // namespace kiln::runtime
