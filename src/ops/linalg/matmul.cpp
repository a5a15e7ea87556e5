// The matmul primitive ([..., m, k] x [..., k, n] with equal batch dims and
// dtypes): shape/dtype rule, reference kernel, and the public builder with
// NumPy semantics (1-d operands, broadcast batch dims, promotion), and its
// derivative rules.
#include <cblas.h>

#include <algorithm>
#include <complex>
#include <type_traits>

#include "core/dispatch.h"
#include "core/error_format.h"
#include "core/wrapping.h"
#include "ops/common/apply.h"
#include "ops/common/batching.h"
#include "ops/common/promotion.h"
#include "telemetry/timeline.h"

namespace kiln {
namespace ops {
namespace {

AbstractValue infer_matmul(const Node& node, std::span<const AbstractValue* const> inputs) {
  if (inputs.size() != 2) detail::raise("matmul", "takes 2 operands, got " + std::to_string(inputs.size()), node.where);
  const AbstractValue& a = *inputs[0];
  const AbstractValue& b = *inputs[1];
  size_t rank = a.shape.size();
  bool ok = a.dtype == b.dtype && rank >= 2 && b.shape.size() == rank && a.shape[rank - 1] == b.shape[rank - 2];
  for (size_t i = 0; ok && i + 2 < rank; ++i) ok = a.shape[i] == b.shape[i];
  if (!ok)
    detail::raise("matmul",
                  "operands must be [..., m, k] and [..., k, n] of one dtype and equal batch dims, got " +
                      a.to_string() + " and " + b.to_string(),
                  node.where);
  Shape shape(a.shape.begin(), a.shape.end() - 1);
  shape.push_back(b.shape[rank - 1]);
  return {a.dtype, a.weak && b.weak, shape};
}

// f32 accumulates in double: the reference carries only the final rounding,
// so it stays within tolerance of NumPy's (BLAS, f32-accumulating) result
// and of any compiled kernel, each of which differs from it by its own error
// alone. Integers wrap (unsigned arithmetic) like NumPy's integer matmul;
// bool is the "or" of "and"s, as in NumPy.
template <class T>
using Accumulator = std::conditional_t<std::is_same_v<T, float> || HalfFloat<T>, double, T>;

template <class A>
A multiply_add(A acc, A x, A y) {
  if constexpr (std::is_same_v<A, bool>) {
    return acc || (x && y);
  } else if constexpr (std::is_integral_v<A>) {
    using U = detail::wrapping_type<A>;
    return static_cast<A>(static_cast<U>(acc) + static_cast<U>(x) * static_cast<U>(y));
  } else {
    return acc + x * y;
  }
}

// Complex products are OpenBLAS's cgemm and zgemm, one call per batch entry,
// in the reference kernel itself: eager, interpreted and compiled graphs all
// run this kernel on complex numbers (backend/llvm/plan.h, touches_complex),
// so their results are the same bits.
template <class T>
void complex_gemm(const T* lhs, const T* rhs, T* out, int64_t batch, int64_t m, int64_t k, int64_t n) {
  const T one(1), zero(0);
  for (int64_t s = 0; s < batch; ++s) {
    const T* a = lhs + s * m * k;
    const T* b = rhs + s * k * n;
    T* c = out + s * m * n;
    if (k == 0) {
      std::fill(c, c + m * n, zero);
      continue;
    }
    constexpr bool single = std::is_same_v<T, std::complex<float>>;
    auto gemm = single ? &cblas_cgemm : &cblas_zgemm;
    telemetry::timeline::Span span;
    if (telemetry::timeline::recording())
      span.begin("blas", single ? "cgemm" : "zgemm", {{"m", m}, {"n", n}, {"k", k}});
    gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
         static_cast<blasint>(k), &one, a, static_cast<blasint>(k), b, static_cast<blasint>(n), &zero, c,
         static_cast<blasint>(n));
  }
}

Array evaluate_matmul(const Node& node, std::span<const Array> inputs) {
  const detail::ArrayImpl& a = *detail::impl(inputs[0]);
  const detail::ArrayImpl& b = *detail::impl(inputs[1]);
  Array result = detail::allocate(node.type);
  const Shape& a_shape = a.type.shape;
  size_t rank = a_shape.size();
  int64_t m = a_shape[rank - 2], k = a_shape[rank - 1], n = b.type.shape[rank - 1];
  int64_t batch = 1;
  for (size_t i = 0; i + 2 < rank; ++i) batch *= a_shape[i];
  if (m == 0 || n == 0) return result;
  if (node.type.dtype == DType::c64) {
    using C = std::complex<float>;
    complex_gemm(a.data<C>(), b.data<C>(), detail::impl(result)->mutable_data<C>(), batch, m, k, n);
    return result;
  }
  if (node.type.dtype == DType::c128) {
    using C = std::complex<double>;
    complex_gemm(a.data<C>(), b.data<C>(), detail::impl(result)->mutable_data<C>(), batch, m, k, n);
    return result;
  }
  detail::dispatch(node.type.dtype, [&]<class T>() {
    using A = Accumulator<T>;
    const T* lhs = a.data<T>();
    const T* rhs = b.data<T>();
    T* out = detail::impl(result)->mutable_data<T>();
    // Row by row, in i-p-j order so both operands are read contiguously.
    std::vector<A> row(static_cast<size_t>(n));
    for (int64_t s = 0; s < batch; ++s) {
      const T* lhs_matrix = lhs + s * m * k;
      const T* rhs_matrix = rhs + s * k * n;
      for (int64_t i = 0; i < m; ++i) {
        std::fill(row.begin(), row.end(), A(0));
        for (int64_t p = 0; p < k; ++p) {
          A x = static_cast<A>(lhs_matrix[i * k + p]);
          for (int64_t j = 0; j < n; ++j)
            row[static_cast<size_t>(j)] =
                multiply_add<A>(row[static_cast<size_t>(j)], x, static_cast<A>(rhs_matrix[p * n + j]));
        }
        T* out_row = out + (s * m + i) * n;
        for (int64_t j = 0; j < n; ++j) out_row[j] = static_cast<T>(row[static_cast<size_t>(j)]);
      }
    }
  });
  return result;
}

// The reshape primitive directly (not the public builder), skipping no-ops.
Array reshape_to(const Array& x, const Shape& shape, Location where) {
  if (detail::impl_of(x, "reshape", where).type.shape == shape) return x;
  ir::Attributes attrs;
  attrs.shape = shape;
  return detail::apply(Primitive::reshape, {x}, std::move(attrs), where);
}

/// The matmul primitive on operands that already fit it. An outer product
/// (one term contracted: the derivative of a matmul by a vector, a
/// per-example gradient under vmap) is a broadcast multiply, one fused
/// kernel instead of a BLAS call per matrix. Adding +0.0, as the sum
/// does, keeps -0.0 products +0.0, so the result is the matmul's bit for bit.
Array product(const Array& a, const Array& b, Location where) {
  const AbstractValue& type = detail::impl_of(a, "matmul", where).type;
  if (is_half(type.dtype)) {
    // f16 and bf16 products run as f32 ones (OpenBLAS's sgemm), rounded once:
    // the matmul primitive never holds a 16-bit float.
    Array wide = product(convert_to(a, DType::f32, false, where), convert_to(b, DType::f32, false, where), where);
    return convert_to(wide, type.dtype, false, where);
  }
  if (type.shape.back() == 1 && type.dtype != DType::bool_ &&
      type.dtype == detail::impl_of(b, "matmul", where).type.dtype) {
    detail::OperationScope at("matmul", where);
    Array outer = a * b;
    return is_floating(type.dtype) ? outer + detail::literal(0.0, type.dtype, true, where) : outer;
  }
  return detail::apply(Primitive::matmul, {a, b}, {}, where);
}

/// The last two axes swapped: [..., m, k] -> [..., k, m].
Array matrix_transpose(const Array& x, Location where) {
  auto rank = static_cast<int64_t>(detail::impl_of(x, "matmul", where).type.shape.size());
  std::vector<int64_t> permutation;
  for (int64_t a = 0; a < rank - 2; ++a) permutation.push_back(a);
  permutation.insert(permutation.end(), {rank - 1, rank - 2});
  return transpose(x, std::move(permutation), where);
}

std::vector<Array> matmul_vjp(const Node& node, std::span<const Array> inputs, const Array&, const Array& cotangent) {
  return {product(cotangent, matrix_transpose(inputs[1], node.where), node.where),
          product(matrix_transpose(inputs[0], node.where), cotangent, node.where)};
}

Array matmul_jvp(const Node& node, std::span<const Array> inputs, const Array&, std::span<const Array> tangents) {
  Array through_a = tangents[0].defined() ? product(tangents[0], inputs[1], node.where) : Array();
  Array through_b = tangents[1].defined() ? product(inputs[0], tangents[1], node.where) : Array();
  if (!through_a.defined()) return through_b;
  if (!through_b.defined()) return through_a;
  return through_a + through_b;
}

}  // namespace

// A batched operand times an unbatched one is one matmul, not a matmul per
// lane: the lanes' rows (or columns) join the operand's own, so BLAS sees one
// taller (or wider) matrix and the unbatched operand is read once.
Array batch_matmul(const Node& node, std::span<const Array> inputs, std::span<const char> batched, int64_t size) {
  const Array& a = inputs[0];
  const Array& b = inputs[1];
  if (batched[0] && batched[1]) return product(a, b, node.where);
  const Shape& a_shape = detail::impl(a)->type.shape;
  const Shape& b_shape = detail::impl(b)->type.shape;
  auto rank = static_cast<int64_t>((batched[0] ? b_shape : a_shape).size());  // of one lane
  std::vector<int64_t> lanes_before_matrix(static_cast<size_t>(rank + 1));
  // Axes [B, dims..., r, c] -> [dims..., B, r, c] and back.
  for (int64_t axis = 0; axis < rank - 2; ++axis) lanes_before_matrix[static_cast<size_t>(axis)] = axis + 1;
  lanes_before_matrix[static_cast<size_t>(rank - 2)] = 0;
  lanes_before_matrix[static_cast<size_t>(rank - 1)] = rank - 1;
  lanes_before_matrix[static_cast<size_t>(rank)] = rank;
  std::vector<int64_t> lanes_first(static_cast<size_t>(rank + 1));
  for (size_t axis = 0; axis < lanes_first.size(); ++axis)
    lanes_first[static_cast<size_t>(lanes_before_matrix[axis])] = static_cast<int64_t>(axis);
  Shape dims(batched[0] ? b_shape.begin() : a_shape.begin(), (batched[0] ? b_shape.end() : a_shape.end()) - 2);
  auto with = [&](std::initializer_list<int64_t> tail) {
    Shape shape = dims;
    shape.insert(shape.end(), tail);
    return shape;
  };
  if (batched[0]) {
    int64_t m = a_shape[a_shape.size() - 2], k = a_shape.back(), n = b_shape.back();
    Array rows = reshape(transpose(a, lanes_before_matrix), with({size * m, k}));
    return transpose(reshape(product(rows, b, node.where), with({size, m, n})), lanes_first);
  }
  // [B, dims..., k, n] -> [dims..., k, B, n] -> [dims..., k, B * n]
  int64_t m = a_shape[a_shape.size() - 2], k = b_shape[b_shape.size() - 2], n = b_shape.back();
  std::vector<int64_t> lanes_before_columns(static_cast<size_t>(rank + 1));
  for (int64_t axis = 0; axis < rank - 2; ++axis) lanes_before_columns[static_cast<size_t>(axis)] = axis + 1;
  lanes_before_columns[static_cast<size_t>(rank - 2)] = rank - 1;
  lanes_before_columns[static_cast<size_t>(rank - 1)] = 0;
  lanes_before_columns[static_cast<size_t>(rank)] = rank;
  Array columns = reshape(transpose(b, lanes_before_columns), with({k, size * n}));
  // [dims..., m, B * n] -> [dims..., m, B, n] -> [B, dims..., m, n]
  std::vector<int64_t> back(static_cast<size_t>(rank + 1));
  back[0] = rank - 1;
  for (int64_t axis = 0; axis < rank - 2; ++axis) back[static_cast<size_t>(axis + 1)] = axis;
  back[static_cast<size_t>(rank - 1)] = rank - 2;
  back[static_cast<size_t>(rank)] = rank;
  return transpose(reshape(product(a, columns, node.where), with({m, size, n})), back);
}

void register_matmul_rules(RuleTable& table) {
  // Floating products go to BLAS; BLAS has no integer product, so those run a native kernel.
  table[static_cast<size_t>(Primitive::matmul)] = {.infer = &infer_matmul,
                                                   .evaluate = &evaluate_matmul,
                                                   .vjp = &matmul_vjp,
                                                   .jvp = &matmul_jvp,
                                                   .batch = &batch_matmul,
                                                   .fusion = Fusion::matmul,
                                                   .kernel = NativeKernel::integer_matmul};
}

}  // namespace ops

Array matmul(const Array& a, const Array& b, Location where) {
  const auto& a_type = detail::impl_of(a, "matmul", where).type;
  const auto& b_type = detail::impl_of(b, "matmul", where).type;
  int operand_index = 0;
  for (const auto* type : {&a_type, &b_type}) {
    if (type->ndim() == 0)
      detail::raise("matmul",
                    "input operand " + std::to_string(operand_index) +
                        " does not have enough dimensions: " + type->to_string() + " is 0-d",
                    where, "matmul needs operands of rank >= 1; to scale by a scalar use mul (or *)");
    ++operand_index;
  }
  auto describe_operands = [&] { return a_type.to_string() + " @ " + b_type.to_string(); };

  // NumPy: a 1-d left operand is a row [1, k], a 1-d right operand a column [k, 1].
  Shape a_shape = a_type.shape, b_shape = b_type.shape;
  bool a_vector = a_shape.size() == 1, b_vector = b_shape.size() == 1;
  if (a_vector) a_shape.insert(a_shape.begin(), 1);
  if (b_vector) b_shape.push_back(1);
  int64_t m = a_shape[a_shape.size() - 2], k = a_shape.back();
  int64_t b_k = b_shape[b_shape.size() - 2], n = b_shape.back();
  if (k != b_k)
    detail::raise("matmul",
                  "contraction dimensions differ: " + describe_operands() + " contracts " + std::to_string(k) +
                      " with " + std::to_string(b_k),
                  where,
                  "the last axis of the first operand must equal the " +
                      std::string(b_vector ? "length of the 1-d second operand" : "second-to-last axis of the second") +
                      "; transpose one operand?");

  Shape a_batch(a_shape.begin(), a_shape.end() - 2), b_batch(b_shape.begin(), b_shape.end() - 2);
  size_t batch_rank = std::max(a_batch.size(), b_batch.size());
  for (size_t i = 0; i < batch_rank; ++i) {
    int64_t da = i < batch_rank - a_batch.size() ? 1 : a_batch[i - (batch_rank - a_batch.size())];
    int64_t db = i < batch_rank - b_batch.size() ? 1 : b_batch[i - (batch_rank - b_batch.size())];
    if (da != db && da != 1 && db != 1)
      detail::raise("matmul",
                    "batch dimensions do not broadcast: " + describe_operands() + " has batch shapes " +
                        shape_string(a_batch) + " and " + shape_string(b_batch),
                    where, "batch dimensions (all but the last two) follow NumPy broadcasting: equal or 1");
  }
  Shape batch = ops::broadcast_shapes(a_batch, b_batch, "matmul", where);

  ops::TypeClass target = ops::promote({a_type.dtype, a_type.weak}, {b_type.dtype, b_type.weak});
  auto prepare = [&](const Array& x, const Shape& matrix_shape, Shape full_shape) {
    Array converted = ops::convert_to(x, target.dtype, target.weak, where);
    full_shape.insert(full_shape.begin(), batch.begin(), batch.end());
    return ops::broadcast_to_shape(ops::reshape_to(converted, matrix_shape, where), full_shape, where);
  };
  Array lhs = prepare(a, a_shape, {m, k});
  Array rhs = prepare(b, b_shape, {k, n});
  Array product = ops::product(lhs, rhs, where);

  // Drop the dims that 1-d operands gained.
  Shape out_shape = batch;
  if (!a_vector) out_shape.push_back(m);
  if (!b_vector) out_shape.push_back(n);
  return ops::reshape_to(product, out_shape, where);
}

}  // namespace kiln
