// OpenBLAS-backed matmul (see the header).
#include "runtime/blas.h"

#include <cblas.h>

#include <cstring>

namespace kiln::runtime {

bool blas_handles(const ir::Node& node) {
  return node.op == ir::Primitive::matmul && is_floating(node.type.dtype);
}

Array blas_matmul(const ir::Node& node, std::span<const Array> inputs) {
  const detail::ArrayImpl& a = *inputs[0].impl();
  const detail::ArrayImpl& b = *inputs[1].impl();
  Array result = detail::allocate(node.type);
  const Shape& shape_a = a.type.shape;
  const Shape& shape_b = b.type.shape;
  size_t rank = shape_a.size();
  int64_t m = shape_a[rank - 2], k = shape_a[rank - 1], n = shape_b[rank - 1];
  int64_t batch = 1;
  for (size_t d = 0; d + 2 < rank; ++d) batch *= shape_a[d];
  void* out = result.impl()->buffer->data();
  if (m * n == 0) return result;
  if (k == 0) {
    std::memset(out, 0, result.impl()->buffer->bytes());
    return result;
  }
  for (int64_t i = 0; i < batch; ++i) {
    if (node.type.dtype == DType::f32) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                  static_cast<int>(k), 1.0f, a.data<float>() + i * m * k, static_cast<int>(k),
                  b.data<float>() + i * k * n, static_cast<int>(n), 0.0f, static_cast<float*>(out) + i * m * n,
                  static_cast<int>(n));
    } else {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                  static_cast<int>(k), 1.0, a.data<double>() + i * m * k, static_cast<int>(k),
                  b.data<double>() + i * k * n, static_cast<int>(n), 0.0, static_cast<double*>(out) + i * m * n,
                  static_cast<int>(n));
    }
  }
  return result;
}

}  // namespace kiln::runtime
