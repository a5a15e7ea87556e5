// The linalg family: cholesky, triangular_solve, solve and slogdet on the
// last two axes, batched over the others, by LAPACK (LAPACKE over OpenBLAS)
// and BLAS's trsm — one call per matrix; the native backend runs these
// reference kernels too. A factorization that fails (a matrix that is not
// positive definite, or singular) gives NaN, as in JAX, so compiled code
// never stops halfway. Derivatives are JAX's, written with these primitives.
// The composites (inv, det) and the public builders are at the end; the
// decompositions (linalg_decompositions.cpp) and the composites over them
// (linalg_composites.cpp) are the family's other files.
#include "kiln/linalg.h"

#include <cblas.h>
#include <lapacke.h>

#include <cmath>
#include <limits>

#include "core/error_format.h"
#include "ops/common/apply.h"
#include "ops/common/batching.h"
#include "ops/common/promotion.h"
#include "ops/linalg/linalg.h"
#include "telemetry/timeline.h"

namespace kiln {
namespace ops {

void check_square(const char* name, const AbstractValue& a, Location where) {
  if (a.ndim() < 2 || rows(a) != columns(a) || (a.dtype != DType::f32 && a.dtype != DType::f64))
    detail::raise(name, "needs square f32 or f64 matrices [..., n, n], got " + a.to_string(), where,
                  "convert with astype(a, kiln::f64), or pass the matrices' last two axes square");
}

void check_matrices(const char* name, const AbstractValue& a, Location where) {
  if (a.ndim() < 2 || (a.dtype != DType::f32 && a.dtype != DType::f64))
    detail::raise(
        name, "needs f32 or f64 matrices [..., m, n], got " + a.to_string(), where,
        a.ndim() < 2 ? "pass at least two axes: the matrices' rows and columns" : "convert with astype(a, kiln::f64)");
}

Array swap_last(const Array& x) { return swapaxes(x, -1, -2); }

Array triangular(const Array& a, const Array& b, bool is_lower, bool transpose_a, bool unit, Location where) {
  ir::Attributes attrs;
  attrs.ints = {is_lower ? 1 : 0, transpose_a ? 1 : 0, unit ? 1 : 0};
  return detail::apply(Primitive::triangular_solve, {a, b}, std::move(attrs), where);
}

Array identity_like(const Array& a) {
  const Shape& shape = a.shape();
  int64_t n = shape.back();
  return broadcast_to(eye(n, std::nullopt, 0, a.dtype()), shape);
}

Array batch_matrices(const Node& node, std::span<const Array> inputs, std::span<const char> batched, int64_t size) {
  return batch_elementwise(node, inputs, batched, size);
}

Array pack_blocks(const std::vector<Array>& blocks, int64_t batch_rank) {
  std::vector<Array> flat;
  for (const Array& block : blocks) {
    Shape shape(block.shape().begin(), block.shape().begin() + batch_rank);
    shape.push_back(-1);
    flat.push_back(reshape(block, shape));
  }
  return concatenate(flat, -1);
}

Array unpack_block(const Array& packed, const std::vector<int64_t>& sizes, size_t index, const Shape& extents) {
  int64_t offset = 0;
  for (size_t b = 0; b < index; ++b) offset += sizes[b];
  std::vector<int64_t> start(static_cast<size_t>(packed.ndim()), 0);
  std::vector<int64_t> stop = packed.shape();
  start.back() = offset;
  stop.back() = offset + sizes[index];
  Shape shape(packed.shape().begin(), packed.shape().end() - 1);
  shape.insert(shape.end(), extents.begin(), extents.end());
  return reshape(slice(packed, start, stop), shape);
}

namespace {

AbstractValue infer_cholesky(const Node& node, std::span<const AbstractValue* const> inputs) {
  check_square("cholesky", *inputs[0], node.where);
  return *inputs[0];
}

AbstractValue infer_system(const Node& node, std::span<const AbstractValue* const> inputs) {
  const char* name = ir::primitive_name(node.op).data();
  if (inputs.size() != 2)
    detail::raise(name, "takes (a, b), got " + std::to_string(inputs.size()) + " operands", node.where);
  const AbstractValue &a = *inputs[0], &b = *inputs[1];
  check_square(name, a, node.where);
  bool fits = b.dtype == a.dtype && b.ndim() == a.ndim() && rows(b) == rows(a) &&
              std::equal(a.shape.begin(), a.shape.end() - 2, b.shape.begin());
  if (!fits)
    detail::raise(
        name, "b must be [..., n, k] with a's batch dims and dtype, got a " + a.to_string() + " and b " + b.to_string(),
        node.where);
  return b;
}

AbstractValue infer_slogdet(const Node& node, std::span<const AbstractValue* const> inputs) {
  check_square("slogdet", *inputs[0], node.where);
  AbstractValue result = *inputs[0];
  result.shape.pop_back();
  result.shape.back() = 2;
  return result;
}

Array evaluate_cholesky(const Node&, std::span<const Array> inputs) {
  const AbstractValue& type = detail::impl(inputs[0])->type;
  Array result = detail::allocate(type);
  int64_t n = rows(type), size = n * n;
  auto run = [&]<class T>(T* out, auto potrf) {
    std::copy(detail::impl(inputs[0])->data<T>(), detail::impl(inputs[0])->data<T>() + type.size(), out);
    each_matrix(type, [&](int64_t m) {
      T* a = out + m * size;
      // Row-major lower is column-major upper: LAPACK reads and writes the
      // matrix where it lies, with no transposed copies.
      if (n > 0 && potrf(LAPACK_COL_MAJOR, 'U', n, a, n) != 0) return fill_nan(a, size);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = i + 1; j < n; ++j) a[i * n + j] = 0;
    });
  };
  if (type.dtype == DType::f64) run(detail::impl(result)->mutable_data<double>(), &LAPACKE_dpotrf);
  else run(detail::impl(result)->mutable_data<float>(), &LAPACKE_spotrf);
  return result;
}

bool lower(const Node& node) { return node.attrs.ints.at(0) != 0; }
bool transposed(const Node& node) { return node.attrs.ints.at(1) != 0; }
bool unit_diagonal(const Node& node) { return node.attrs.ints.at(2) != 0; }

Array evaluate_triangular_solve(const Node& node, std::span<const Array> inputs) {
  const AbstractValue &a = detail::impl(inputs[0])->type, &b = detail::impl(inputs[1])->type;
  Array result = detail::allocate(b);
  int64_t n = rows(a), k = columns(b);
  auto uplo = lower(node) ? CblasLower : CblasUpper;
  auto trans = transposed(node) ? CblasTrans : CblasNoTrans;
  auto diag = unit_diagonal(node) ? CblasUnit : CblasNonUnit;
  auto run = [&]<class T>(T* out, auto trsm) {
    std::copy(detail::impl(inputs[1])->data<T>(), detail::impl(inputs[1])->data<T>() + b.size(), out);
    const T* matrices = detail::impl(inputs[0])->data<T>();
    if (n == 0 || k == 0) return;
    each_matrix(a, [&](int64_t m) {
      telemetry::timeline::Span span;
      if (telemetry::timeline::recording())
        span.begin("blas", a.dtype == DType::f64 ? "dtrsm" : "strsm", {{"m", n}, {"n", k}});
      trsm(CblasRowMajor, CblasLeft, uplo, trans, diag, static_cast<int>(n), static_cast<int>(k), T(1),
           matrices + m * n * n, static_cast<int>(n), out + m * n * k, static_cast<int>(k));
    });
  };
  if (a.dtype == DType::f64) run(detail::impl(result)->mutable_data<double>(), &cblas_dtrsm);
  else run(detail::impl(result)->mutable_data<float>(), &cblas_strsm);
  return result;
}

// Row-major a is column-major a^T: LAPACK factors a^T where it lies and
// solves with the transpose of that factorization; only b (n x k, usually
// narrow) is transposed into column-major order and back.
Array evaluate_solve(const Node&, std::span<const Array> inputs) {
  const AbstractValue &a = detail::impl(inputs[0])->type, &b = detail::impl(inputs[1])->type;
  Array result = detail::allocate(b);
  int64_t n = rows(a), k = columns(b);
  std::vector<lapack_int> pivots(static_cast<size_t>(n));
  auto run = [&]<class T>(T* out, auto getrf, auto getrs) {
    std::vector<T> lu(static_cast<size_t>(n * n)), columns_of_b(static_cast<size_t>(n * k));
    if (n == 0 || k == 0) return;
    each_matrix(a, [&](int64_t m) {
      const T* matrix = detail::impl(inputs[0])->data<T>() + m * n * n;
      const T* right = detail::impl(inputs[1])->data<T>() + m * n * k;
      T* x = out + m * n * k;
      std::copy(matrix, matrix + n * n, lu.begin());
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < k; ++j) columns_of_b[static_cast<size_t>(j * n + i)] = right[i * k + j];
      if (getrf(LAPACK_COL_MAJOR, n, n, lu.data(), n, pivots.data()) != 0) return fill_nan(x, n * k);
      getrs(LAPACK_COL_MAJOR, 'T', n, k, lu.data(), n, pivots.data(), columns_of_b.data(), n);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < k; ++j) x[i * k + j] = columns_of_b[static_cast<size_t>(j * n + i)];
    });
  };
  if (a.dtype == DType::f64) run(detail::impl(result)->mutable_data<double>(), &LAPACKE_dgetrf, &LAPACKE_dgetrs);
  else run(detail::impl(result)->mutable_data<float>(), &LAPACKE_sgetrf, &LAPACKE_sgetrs);
  return result;
}

Array evaluate_slogdet(const Node& node, std::span<const Array> inputs) {
  const AbstractValue& a = detail::impl(inputs[0])->type;
  Array result = detail::allocate(node.type);
  int64_t n = rows(a);
  std::vector<lapack_int> pivots(static_cast<size_t>(n));
  auto run = [&]<class T>(T* out, auto getrf) {
    std::vector<T> lu(static_cast<size_t>(n * n));
    each_matrix(a, [&](int64_t m) {
      const T* matrix = detail::impl(inputs[0])->data<T>() + m * n * n;
      std::copy(matrix, matrix + n * n, lu.begin());
      T sign = 1, log_magnitude = 0;
      // det a = det a^T: factor the column-major view, with no transposed copy.
      lapack_int info = n > 0 ? getrf(LAPACK_COL_MAJOR, n, n, lu.data(), n, pivots.data()) : 0;
      if (info < 0) {
        sign = log_magnitude = std::numeric_limits<T>::quiet_NaN();
      } else {
        // A zero pivot (info > 0) makes the product zero: sign 0, log -inf.
        for (int64_t i = 0; i < n; ++i) {
          T pivot = lu[static_cast<size_t>(i * n + i)];
          if (pivots[static_cast<size_t>(i)] != i + 1) sign = -sign;
          if (pivot < 0) sign = -sign;
          if (pivot == 0) sign = 0;
          log_magnitude += std::log(std::abs(pivot));
        }
      }
      out[2 * m] = sign;
      out[2 * m + 1] = log_magnitude;
    });
  };
  if (a.dtype == DType::f64) run(detail::impl(result)->mutable_data<double>(), &LAPACKE_dgetrf);
  else run(detail::impl(result)->mutable_data<float>(), &LAPACKE_sgetrf);
  return result;
}

std::string describe_triangular_solve(const Node& node) {
  return std::string(lower(node) ? "lower" : "upper") + (transposed(node) ? " transposed" : "") +
         (unit_diagonal(node) ? " unit_diagonal" : "");
}

// ---- derivatives, with these primitives --------------------------------------------

Array solve_system(const Array& a, const Array& b, Location where) {
  return detail::apply(Primitive::solve, {a, b}, {}, where);
}

/// The part of a square matrix's derivative a triangular solve reads.
Array used_triangle(const Node& node, const Array& m) {
  return lower(node) ? tril(m, unit_diagonal(node) ? -1 : 0) : triu(m, unit_diagonal(node) ? 1 : 0);
}

std::vector<Array> triangular_vjp(const Node& node, std::span<const Array> inputs, const Array& output,
                                  const Array& cotangent) {
  Array b_bar = triangular(inputs[0], cotangent, lower(node), !transposed(node), unit_diagonal(node), node.where);
  Array a_bar = transposed(node) ? neg(matmul(output, swap_last(b_bar))) : neg(matmul(b_bar, swap_last(output)));
  return {used_triangle(node, a_bar), b_bar};
}

Array triangular_jvp(const Node& node, std::span<const Array> inputs, const Array& output,
                     std::span<const Array> tangents) {
  Array rhs = tangents[1].defined() ? tangents[1] : zeros_like(output);
  if (tangents[0].defined()) {
    Array a_dot = used_triangle(node, tangents[0]);
    rhs = sub(rhs, matmul(transposed(node) ? swap_last(a_dot) : a_dot, output));
  }
  return triangular(inputs[0], rhs, lower(node), transposed(node), unit_diagonal(node), node.where);
}

std::vector<Array> solve_vjp(const Node& node, std::span<const Array> inputs, const Array& output,
                             const Array& cotangent) {
  Array b_bar = solve_system(swap_last(inputs[0]), cotangent, node.where);
  return {neg(matmul(b_bar, swap_last(output))), b_bar};
}

Array solve_jvp(const Node& node, std::span<const Array> inputs, const Array& output, std::span<const Array> tangents) {
  Array rhs = tangents[1].defined() ? tangents[1] : zeros_like(output);
  if (tangents[0].defined()) rhs = sub(rhs, matmul(tangents[0], output));
  return solve_system(inputs[0], rhs, node.where);
}

/// tril with a halved diagonal: the map cholesky's derivative goes through.
Array lower_half_diagonal(const Array& x) {
  Array diagonal_half = mul(tril(x) - tril(x, -1), 0.5);
  return add(tril(x, -1), diagonal_half);
}

Array symmetric(const Array& x) { return mul(add(x, swap_last(x)), 0.5); }

Array cholesky_jvp(const Node& node, std::span<const Array>, const Array& output, std::span<const Array> tangents) {
  // L' = L phi(L^-1 sym(A') L^-T)
  Array left = triangular(output, symmetric(tangents[0]), true, false, false, node.where);
  Array middle = triangular(output, swap_last(left), true, false, false, node.where);
  return matmul(output, lower_half_diagonal(middle));
}

std::vector<Array> cholesky_vjp(const Node& node, std::span<const Array>, const Array& output, const Array& cotangent) {
  // A_bar = sym(L^-T phi(L^T L_bar) L^-1)
  Array phi = lower_half_diagonal(matmul(swap_last(output), cotangent));
  Array right = swap_last(triangular(output, swap_last(phi), true, true, false, node.where));  // phi L^-1
  return {symmetric(triangular(output, right, true, true, false, node.where))};
}

std::vector<Array> slogdet_vjp(const Node& node, std::span<const Array> inputs, const Array&, const Array& cotangent) {
  // d log|det A| = tr(A^-1 dA): A_bar = g A^-T; the sign is piecewise constant.
  Shape picked_start(static_cast<size_t>(cotangent.ndim()), 0), picked_stop = cotangent.shape();
  picked_start.back() = 1;
  Array g = slice(cotangent, picked_start, picked_stop);  // [..., 1]
  Array inverse_transposed = solve_system(swap_last(inputs[0]), identity_like(inputs[0]), node.where);
  return {mul(expand_dims(g, -1), inverse_transposed)};
}

Array slogdet_jvp(const Node& node, std::span<const Array> inputs, const Array&, std::span<const Array> tangents) {
  Array change = trace(solve_system(inputs[0], tangents[0], node.where), 0, -2, -1);  // [...]
  return stack({zeros_like(change), change}, -1);
}

}  // namespace

void register_linalg_rules(RuleTable& table) {
  auto row = [&](Primitive op, PrimitiveRules rules) {
    rules.batch = &batch_matrices;  // the primitives take leading batch dimensions
    rules.fusion = Fusion::kernel;
    rules.cost = 16;
    rules.no_native_lowering = lapack_waiver;
    table[static_cast<size_t>(op)] = rules;
  };
  row(Primitive::cholesky,
      {.infer = &infer_cholesky, .evaluate = &evaluate_cholesky, .vjp = &cholesky_vjp, .jvp = &cholesky_jvp});
  row(Primitive::triangular_solve, {.infer = &infer_system,
                                    .evaluate = &evaluate_triangular_solve,
                                    .describe = &describe_triangular_solve,
                                    .vjp = &triangular_vjp,
                                    .jvp = &triangular_jvp});
  row(Primitive::solve, {.infer = &infer_system, .evaluate = &evaluate_solve, .vjp = &solve_vjp, .jvp = &solve_jvp});
  row(Primitive::slogdet,
      {.infer = &infer_slogdet, .evaluate = &evaluate_slogdet, .vjp = &slogdet_vjp, .jvp = &slogdet_jvp});
  register_linalg_decomposition_rules(table);
}

}  // namespace ops

namespace linalg {

namespace {

// A vector right-hand side [..., n] as a column [..., n, 1] (NumPy's solve).
bool is_vector_rhs(const Array& a, const Array& b) { return b.ndim() == a.ndim() - 1; }

}  // namespace

Array cholesky(const Array& a, Location where) { return detail::apply(ops::Primitive::cholesky, {a}, {}, where); }

Array triangular_solve(const Array& a, const Array& b, bool lower, bool transpose_a, bool unit_diagonal,
                       Location where) {
  bool vector = is_vector_rhs(a, b);
  Array rhs = vector ? expand_dims(b, -1, where) : b;
  Array x = ops::triangular(a, rhs, lower, transpose_a, unit_diagonal, where);
  return vector ? squeeze(x, -1, where) : x;
}

Array solve(const Array& a, const Array& b, Location where) {
  bool vector = is_vector_rhs(a, b);
  Array rhs = vector ? expand_dims(b, -1, where) : b;
  Array x = ops::solve_system(a, rhs, where);
  return vector ? squeeze(x, -1, where) : x;
}

Array inv(const Array& a, Location where) {
  const detail::AbstractValue& type = detail::impl_of(a, "inv", where).type;
  ops::check_square("inv", type, where);
  return ops::solve_system(a, ops::identity_like(a), where);
}

std::pair<Array, Array> slogdet(const Array& a, Location where) {
  Array parts = detail::apply(ops::Primitive::slogdet, {a}, {}, where);
  std::vector<Array> split_parts = unstack(parts, -1, where);
  return {split_parts[0], split_parts[1]};
}

Array det(const Array& a, Location where) {
  detail::OperationScope at("det", where);
  auto [sign, log_magnitude] = slogdet(a, where);
  return sign * exp(log_magnitude);
}

}  // namespace linalg

}  // namespace kiln
