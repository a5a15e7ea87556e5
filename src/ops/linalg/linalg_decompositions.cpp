// The linalg family's decompositions: qr (geqrf + orgqr), svd (gesdd) and
// eigh (syevd) on the last two axes, batched over the others. The IR's nodes
// have one result each, so each primitive packs its results (Q and R; U, S
// and Vh; eigenvalues and eigenvectors) one after the other along one last
// axis, and the public builders slice them apart; the derivative rules read
// and write that packed form. Derivatives are JAX's jvp rules, and their
// transposes written out as the vjp rules.
#include <lapacke.h>

#include <string>

#include "core/error_format.h"
#include "kiln/linalg.h"
#include "ops/common/apply.h"
#include "ops/common/batching.h"
#include "ops/linalg/linalg.h"

namespace kiln {
namespace ops {
namespace {

struct MatrixExtents {
  Shape batch;
  int64_t m = 0, n = 0, k = 0;  // rows, columns, min(rows, columns)
};

MatrixExtents extents_of(const Shape& shape) {
  MatrixExtents e;
  e.batch.assign(shape.begin(), shape.end() - 2);
  e.m = shape[shape.size() - 2];
  e.n = shape.back();
  e.k = std::min(e.m, e.n);
  return e;
}

AbstractValue packed_type(const AbstractValue& input, int64_t elements) {
  AbstractValue result = input;
  result.shape.resize(result.shape.size() - 2);
  result.shape.push_back(elements);
  return result;
}

template <class T>
void set_identity(T* matrix, int64_t n) {
  std::fill(matrix, matrix + n * n, T(0));
  for (int64_t i = 0; i < n; ++i) matrix[i * n + i] = T(1);
}

// ---- qr: [Q | R] ----------------------------------------------------------------

bool complete(const Node& node) { return node.attrs.ints.at(0) != 0; }

/// Block sizes of [Q (m x q_columns) | R (q_columns x n)].
struct QrBlocks {
  MatrixExtents e;
  int64_t q_columns = 0;
  std::vector<int64_t> sizes() const { return {e.m * q_columns, q_columns * e.n}; }
};

QrBlocks qr_blocks(const Shape& input, bool is_complete) {
  QrBlocks blocks{extents_of(input)};
  blocks.q_columns = is_complete ? blocks.e.m : blocks.e.k;
  return blocks;
}

AbstractValue infer_qr(const Node& node, std::span<const AbstractValue* const> inputs) {
  check_matrices("qr", *inputs[0], node.where);
  auto sizes = qr_blocks(inputs[0]->shape, complete(node)).sizes();
  return packed_type(*inputs[0], sizes[0] + sizes[1]);
}

Array evaluate_qr(const Node& node, std::span<const Array> inputs) {
  const AbstractValue& type = detail::impl(inputs[0])->type;
  QrBlocks blocks = qr_blocks(type.shape, complete(node));
  int64_t m = blocks.e.m, n = blocks.e.n, k = blocks.e.k;
  int64_t q_columns = blocks.q_columns, width = std::max<int64_t>({n, q_columns, 1});
  Array result = detail::allocate(packed_type(type, blocks.sizes()[0] + blocks.sizes()[1]));
  auto run = [&]<class T>(T* out, auto geqrf, auto orgqr) {
    // Householder reflectors need a's rows, not its columns: LAPACKE's
    // row-major interface transposes, as the factorization must.
    std::vector<T> work(static_cast<size_t>(m * width)), tau(static_cast<size_t>(std::max<int64_t>(k, 1)));
    each_matrix(type, [&](int64_t index) {
      const T* a = detail::impl(inputs[0])->data<T>() + index * m * n;
      T* q = out + index * (m * q_columns + q_columns * n);
      T* r = q + m * q_columns;
      std::fill(r, r + q_columns * n, T(0));
      if (k == 0) {
        if (q_columns == m) set_identity(q, m);
        return;
      }
      for (int64_t i = 0; i < m; ++i) std::copy(a + i * n, a + i * n + n, work.data() + i * width);
      if (geqrf(LAPACK_ROW_MAJOR, m, n, work.data(), width, tau.data()) != 0) {
        fill_nan(q, m * q_columns + q_columns * n);
        return;
      }
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = i; j < n; ++j) r[i * n + j] = work[static_cast<size_t>(i * width + j)];
      if (orgqr(LAPACK_ROW_MAJOR, m, q_columns, k, work.data(), width, tau.data()) != 0) {
        fill_nan(q, m * q_columns + q_columns * n);
        return;
      }
      for (int64_t i = 0; i < m; ++i)
        std::copy(work.data() + i * width, work.data() + i * width + q_columns, q + i * q_columns);
    });
  };
  if (type.dtype == DType::f64) run(detail::impl(result)->mutable_data<double>(), &LAPACKE_dgeqrf, &LAPACKE_dorgqr);
  else run(detail::impl(result)->mutable_data<float>(), &LAPACKE_sgeqrf, &LAPACKE_sorgqr);
  return result;
}

std::string describe_qr(const Node& node) { return complete(node) ? "complete" : "reduced"; }

void check_qr_differentiable(const Node& node, const MatrixExtents& e) {
  if (complete(node) && e.m > e.n)
    detail::raise("qr",
                  "has a derivative for mode \"reduced\" (or m <= n), got mode \"complete\" on [..., " +
                      std::to_string(e.m) + ", " + std::to_string(e.n) +
                      "] matrices: Q's last m - n columns are not unique",
                  node.where, "differentiate qr(a, \"reduced\")");
}

Array split_columns(const Array& x, int64_t begin, int64_t end) {
  std::vector<int64_t> start(static_cast<size_t>(x.ndim()), 0), stop = x.shape();
  start.back() = begin;
  stop.back() = end;
  return slice(x, start, stop);
}

/// JAX's jvp of a = Q R for m >= n: X = dA R^-1, C = Q^T X, Omega the
/// skew-symmetric part of C's strict lower triangle; dQ = Q (Omega - C) + X,
/// dR = (C - Omega) R.
std::pair<Array, Array> qr_tall_jvp(const Array& q, const Array& r, const Array& a_dot, Location where) {
  Array x = swap_last(triangular(r, swap_last(a_dot), false, true, false, where));
  Array c = matmul(swap_last(q), x);
  Array lower = tril(c, -1);
  Array omega = lower - swap_last(lower);
  return {matmul(q, omega - c) + x, matmul(c - omega, r)};
}

/// The transpose of qr_tall_jvp: with N = gR R^T - Q^T gQ,
/// gA = (gQ + Q (triu(N) + tril(N^T, -1))) R^-T.
Array qr_tall_vjp(const Array& q, const Array& r, const Array& q_bar, const Array& r_bar, Location where) {
  Array middle = matmul(r_bar, swap_last(r)) - matmul(swap_last(q), q_bar);
  Array x_bar = q_bar + matmul(q, triu(middle) + tril(swap_last(middle), -1));
  return swap_last(triangular(r, swap_last(x_bar), false, false, false, where));
}

// For m < n, a = [a1 | a2] with a1 square: Q R1 = a1 and R2 = Q^T a2
// (PyTorch's extension of JAX's rule, which stops at m >= n).

Array qr_jvp(const Node& node, std::span<const Array> inputs, const Array& output, std::span<const Array> tangents) {
  QrBlocks blocks = qr_blocks(inputs[0].shape(), complete(node));
  const MatrixExtents& e = blocks.e;
  check_qr_differentiable(node, e);
  Array q = unpack_block(output, blocks.sizes(), 0, {e.m, e.k});
  Array r = unpack_block(output, blocks.sizes(), 1, {e.k, e.n});
  if (e.m >= e.n) {
    auto [q_dot, r_dot] = qr_tall_jvp(q, r, tangents[0], node.where);
    return pack_blocks({q_dot, r_dot}, inputs[0].ndim() - 2);
  }
  Array a2 = split_columns(inputs[0], e.m, e.n), a2_dot = split_columns(tangents[0], e.m, e.n);
  auto [q_dot, r1_dot] = qr_tall_jvp(q, split_columns(r, 0, e.m), split_columns(tangents[0], 0, e.m), node.where);
  Array r2_dot = matmul(swap_last(q_dot), a2) + matmul(swap_last(q), a2_dot);
  return pack_blocks({q_dot, concatenate({r1_dot, r2_dot}, -1)}, inputs[0].ndim() - 2);
}

std::vector<Array> qr_vjp(const Node& node, std::span<const Array> inputs, const Array& output,
                          const Array& cotangent) {
  QrBlocks blocks = qr_blocks(inputs[0].shape(), complete(node));
  const MatrixExtents& e = blocks.e;
  check_qr_differentiable(node, e);
  Array q = unpack_block(output, blocks.sizes(), 0, {e.m, e.k});
  Array r = unpack_block(output, blocks.sizes(), 1, {e.k, e.n});
  Array q_bar = unpack_block(cotangent, blocks.sizes(), 0, {e.m, e.k});
  Array r_bar = unpack_block(cotangent, blocks.sizes(), 1, {e.k, e.n});
  if (e.m >= e.n) return {qr_tall_vjp(q, r, q_bar, r_bar, node.where)};
  Array a2 = split_columns(inputs[0], e.m, e.n), r2_bar = split_columns(r_bar, e.m, e.n);
  Array a1_bar = qr_tall_vjp(q, split_columns(r, 0, e.m), q_bar + matmul(a2, swap_last(r2_bar)),
                             split_columns(r_bar, 0, e.m), node.where);
  return {concatenate({a1_bar, matmul(q, r2_bar)}, -1)};
}

// ---- svd: [U | S | Vh], or S alone ------------------------------------------------

bool full_matrices(const Node& node) { return node.attrs.ints.at(0) != 0; }
bool compute_uv(const Node& node) { return node.attrs.ints.at(1) != 0; }

/// Block sizes of [U (m x u_columns) | S (k) | Vh (vh_rows x n)], or [S].
struct SvdBlocks {
  MatrixExtents e;
  bool vectors = true;
  int64_t u_columns = 0, vh_rows = 0;
  std::vector<int64_t> sizes() const {
    if (!vectors) return {e.k};
    return {e.m * u_columns, e.k, vh_rows * e.n};
  }
};

SvdBlocks svd_blocks(const Shape& input, bool full, bool vectors) {
  SvdBlocks blocks{extents_of(input), vectors};
  blocks.u_columns = full ? blocks.e.m : blocks.e.k;
  blocks.vh_rows = full ? blocks.e.n : blocks.e.k;
  return blocks;
}

SvdBlocks svd_blocks(const Node& node, const Shape& input) {
  return svd_blocks(input, full_matrices(node), compute_uv(node));
}

AbstractValue infer_svd(const Node& node, std::span<const AbstractValue* const> inputs) {
  check_matrices("svd", *inputs[0], node.where);
  int64_t elements = 0;
  for (int64_t size : svd_blocks(node, inputs[0]->shape).sizes()) elements += size;
  return packed_type(*inputs[0], elements);
}

Array evaluate_svd(const Node& node, std::span<const Array> inputs) {
  const AbstractValue& type = detail::impl(inputs[0])->type;
  SvdBlocks blocks = svd_blocks(node, type.shape);
  int64_t m = blocks.e.m, n = blocks.e.n, k = blocks.e.k;
  int64_t u_size = blocks.vectors ? m * blocks.u_columns : 0, vh_size = blocks.vectors ? blocks.vh_rows * n : 0;
  int64_t packed = u_size + k + vh_size;
  Array result = detail::allocate(packed_type(type, packed));
  char job = !blocks.vectors ? 'N' : full_matrices(node) ? 'A' : 'S';
  auto run = [&]<class T>(T* out, auto gesdd) {
    std::vector<T> work(static_cast<size_t>(m * n));
    each_matrix(type, [&](int64_t index) {
      const T* a = detail::impl(inputs[0])->data<T>() + index * m * n;
      T* u = out + index * packed;
      T* s = u + u_size;
      T* vh = s + k;
      if (k == 0) {
        std::fill(u, u + packed, T(0));
        if (blocks.vectors && blocks.u_columns == m) set_identity(u, m);
        if (blocks.vectors && blocks.vh_rows == n) set_identity(vh, n);
        return;
      }
      std::copy(a, a + m * n, work.data());
      // Row-major a is column-major a^T = V S U^T: LAPACK's left vectors of
      // a^T, stored column-major, are Vh row-major, and its right ones U.
      lapack_int info =
          gesdd(LAPACK_COL_MAJOR, job, n, m, work.data(), n, s, vh, n, u, std::max<int64_t>(blocks.u_columns, 1));
      if (info != 0) fill_nan(u, packed);
    });
  };
  if (type.dtype == DType::f64) run(detail::impl(result)->mutable_data<double>(), &LAPACKE_dgesdd);
  else run(detail::impl(result)->mutable_data<float>(), &LAPACKE_sgesdd);
  return result;
}

std::string describe_svd(const Node& node) {
  return std::string(full_matrices(node) ? "full_matrices" : "reduced") + (compute_uv(node) ? "" : " values only");
}

Array apply_svd(const Array& a, bool full, bool vectors, Location where) {
  ir::Attributes attrs;
  attrs.ints = {full ? 1 : 0, vectors ? 1 : 0};
  return detail::apply(Primitive::svd, {a}, std::move(attrs), where);
}

/// The reduced factors U [m, k], s [k], V [n, k] of a's decomposition.
struct ReducedSvd {
  Array u, s, v;
};

ReducedSvd reduced_svd(const Node& node, const Array& a, const Array& output) {
  bool reuse = compute_uv(node) && !full_matrices(node);
  SvdBlocks blocks = svd_blocks(a.shape(), false, true);
  Array packed = reuse ? output : apply_svd(a, false, true, node.where);
  const MatrixExtents& e = blocks.e;
  return {unpack_block(packed, blocks.sizes(), 0, {e.m, e.k}), unpack_block(packed, blocks.sizes(), 1, {e.k}),
          swap_last(unpack_block(packed, blocks.sizes(), 2, {e.k, e.n}))};
}

void check_svd_differentiable(const Node& node, const MatrixExtents& e) {
  if (compute_uv(node) && full_matrices(node) && e.m != e.n)
    detail::raise("svd",
                  "has a derivative for full_matrices=false (or square matrices), got full_matrices=true on [..., " +
                      std::to_string(e.m) + ", " + std::to_string(e.n) +
                      "] matrices: the singular vectors past min(m, n) are not unique",
                  node.where, "differentiate svd(a, /*full_matrices=*/false)");
}

/// F[i, j] = 1 / (s_j^2 - s_i^2) off the diagonal, 0 on it.
Array spectral_gaps(const Array& s_row, const Array& s_column, const Array& identity) {
  return reciprocal((s_row + s_column) * (s_row - s_column) + identity) - identity;
}

Array svd_jvp(const Node& node, std::span<const Array> inputs, const Array& output, std::span<const Array> tangents) {
  SvdBlocks blocks = svd_blocks(node, inputs[0].shape());
  const MatrixExtents& e = blocks.e;
  check_svd_differentiable(node, e);
  auto [u, s, v] = reduced_svd(node, inputs[0], output);
  const Array& a_dot = tangents[0];
  Array s_matrix = matmul(matmul(swap_last(u), a_dot), v);
  Array s_dot = diagonal(s_matrix, 0, -2, -1);
  if (!blocks.vectors) return s_dot;
  Array s_row = expand_dims(s, -2), s_column = expand_dims(s, -1);
  Array gaps = spectral_gaps(s_row, s_column, identity_like(s_matrix));
  Array right_scaled = s_matrix * s_row, left_scaled = s_column * s_matrix;
  Array u_dot = matmul(u, gaps * (right_scaled + swap_last(right_scaled)));
  Array v_dot = matmul(v, gaps * (left_scaled + swap_last(left_scaled)));
  if (e.m > e.k) {
    Array a_dot_v = matmul(a_dot, v);
    u_dot = u_dot + (a_dot_v - matmul(u, matmul(swap_last(u), a_dot_v))) / s_row;
  }
  if (e.n > e.k) {
    Array a_dot_u = matmul(swap_last(a_dot), u);
    v_dot = v_dot + (a_dot_u - matmul(v, matmul(swap_last(v), a_dot_u))) / s_row;
  }
  return pack_blocks({u_dot, s_dot, swap_last(v_dot)}, inputs[0].ndim() - 2);
}

// The transpose of svd_jvp: with J = F o (U^T gU), K = F o (V^T gV),
// gA = U (diag(gs) + (J + J^T) S + S (K + K^T)) V^T, plus the parts of gU
// and gV outside U's and V's spans when a is not square.
std::vector<Array> svd_vjp(const Node& node, std::span<const Array> inputs, const Array& output,
                           const Array& cotangent) {
  SvdBlocks blocks = svd_blocks(node, inputs[0].shape());
  const MatrixExtents& e = blocks.e;
  check_svd_differentiable(node, e);
  auto [u, s, v] = reduced_svd(node, inputs[0], output);
  Array s_row = expand_dims(s, -2), s_column = expand_dims(s, -1);
  Array s_bar = blocks.vectors ? unpack_block(cotangent, blocks.sizes(), 1, {e.k}) : cotangent;
  if (!blocks.vectors) return {matmul(u * expand_dims(s_bar, -2), swap_last(v))};
  Array u_bar = unpack_block(cotangent, blocks.sizes(), 0, {e.m, e.k});
  Array v_bar = swap_last(unpack_block(cotangent, blocks.sizes(), 2, {e.k, e.n}));
  Array u_projected = matmul(swap_last(u), u_bar), v_projected = matmul(swap_last(v), v_bar);
  Array identity = identity_like(u_projected);
  Array gaps = spectral_gaps(s_row, s_column, identity);
  Array u_part = gaps * u_projected, v_part = gaps * v_projected;
  Array middle = identity * expand_dims(s_bar, -2) + (u_part + swap_last(u_part)) * s_row +
                 s_column * (v_part + swap_last(v_part));
  Array a_bar = matmul(matmul(u, middle), swap_last(v));
  if (e.m > e.k) a_bar = a_bar + matmul((u_bar - matmul(u, matmul(swap_last(u), u_bar))) / s_row, swap_last(v));
  if (e.n > e.k) a_bar = a_bar + matmul(u, swap_last((v_bar - matmul(v, matmul(swap_last(v), v_bar))) / s_row));
  return {a_bar};
}

// ---- eigh: [eigenvalues | eigenvectors as columns] ---------------------------------

bool reads_lower(const Node& node) { return node.attrs.ints.at(0) != 0; }

AbstractValue infer_eigh(const Node& node, std::span<const AbstractValue* const> inputs) {
  check_square("eigh", *inputs[0], node.where);
  int64_t n = columns(*inputs[0]);
  return packed_type(*inputs[0], n + n * n);
}

Array evaluate_eigh(const Node& node, std::span<const Array> inputs) {
  const AbstractValue& type = detail::impl(inputs[0])->type;
  int64_t n = columns(type), packed = n + n * n;
  Array result = detail::allocate(packed_type(type, packed));
  // Row-major lower is column-major upper: LAPACK reads the named triangle
  // where it lies, and writes the eigenvectors as rows, transposed after.
  char triangle = reads_lower(node) ? 'U' : 'L';
  auto run = [&]<class T>(T* out, auto syevd) {
    each_matrix(type, [&](int64_t index) {
      const T* a = detail::impl(inputs[0])->data<T>() + index * n * n;
      T* w = out + index * packed;
      T* vectors = w + n;
      if (n == 0) return;
      std::copy(a, a + n * n, vectors);
      if (syevd(LAPACK_COL_MAJOR, 'V', triangle, n, vectors, n, w) != 0) return fill_nan(w, packed);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = i + 1; j < n; ++j) std::swap(vectors[i * n + j], vectors[j * n + i]);
    });
  };
  if (type.dtype == DType::f64) run(detail::impl(result)->mutable_data<double>(), &LAPACKE_dsyevd);
  else run(detail::impl(result)->mutable_data<float>(), &LAPACKE_ssyevd);
  return result;
}

std::string describe_eigh(const Node& node) { return reads_lower(node) ? "lower" : "upper"; }

/// The symmetric matrix the primitive sees in x: its read triangle mirrored.
Array symmetric_from_triangle(const Node& node, const Array& x) {
  return reads_lower(node) ? tril(x) + swap_last(tril(x, -1)) : triu(x) + swap_last(triu(x, 1));
}

struct EighParts {
  Array w, v, gaps;  // gaps[i, j] = 1 / (w_j - w_i) off the diagonal, 0 on it
};

EighParts eigh_parts(const Array& output, int64_t n) {
  std::vector<int64_t> sizes{n, n * n};
  Array w = unpack_block(output, sizes, 0, {n}), v = unpack_block(output, sizes, 1, {n, n});
  Array identity = identity_like(v);
  return {w, v, reciprocal(identity + expand_dims(w, -2) - expand_dims(w, -1)) - identity};
}

// JAX's jvp: with M = V^T dA V, dw = diag(M) and dV = V (F o M).
Array eigh_jvp(const Node& node, std::span<const Array> inputs, const Array& output, std::span<const Array> tangents) {
  auto [w, v, gaps] = eigh_parts(output, inputs[0].shape().back());
  Array projected = matmul(matmul(swap_last(v), symmetric_from_triangle(node, tangents[0])), v);
  return pack_blocks({diagonal(projected, 0, -2, -1), matmul(v, gaps * projected)}, inputs[0].ndim() - 2);
}

// The transpose: G = V (diag(gw) + F o (V^T gV)) V^T on the symmetric
// matrix, folded back onto the triangle the primitive read.
std::vector<Array> eigh_vjp(const Node& node, std::span<const Array> inputs, const Array& output,
                            const Array& cotangent) {
  int64_t n = inputs[0].shape().back();
  auto [w, v, gaps] = eigh_parts(output, n);
  std::vector<int64_t> sizes{n, n * n};
  Array w_bar = unpack_block(cotangent, sizes, 0, {n}), v_bar = unpack_block(cotangent, sizes, 1, {n, n});
  Array middle = identity_like(v) * expand_dims(w_bar, -2) + gaps * matmul(swap_last(v), v_bar);
  Array g = matmul(matmul(v, middle), swap_last(v));
  return {reads_lower(node) ? tril(g) + tril(swap_last(g), -1) : triu(g) + triu(swap_last(g), 1)};
}

}  // namespace

void register_linalg_decomposition_rules(RuleTable& table) {
  auto row = [&](Primitive op, PrimitiveRules rules) {
    rules.batch = &batch_matrices;
    rules.fusion = Fusion::kernel;
    rules.cost = 16;
    rules.no_native_lowering = lapack_waiver;
    table[static_cast<size_t>(op)] = rules;
  };
  row(Primitive::qr,
      {.infer = &infer_qr, .evaluate = &evaluate_qr, .describe = &describe_qr, .vjp = &qr_vjp, .jvp = &qr_jvp});
  row(Primitive::svd,
      {.infer = &infer_svd, .evaluate = &evaluate_svd, .describe = &describe_svd, .vjp = &svd_vjp, .jvp = &svd_jvp});
  row(Primitive::eigh, {.infer = &infer_eigh,
                        .evaluate = &evaluate_eigh,
                        .describe = &describe_eigh,
                        .vjp = &eigh_vjp,
                        .jvp = &eigh_jvp});
}

}  // namespace ops

namespace linalg {

QR qr(const Array& a, std::string_view mode, Location where) {
  if (mode != "reduced" && mode != "complete")
    detail::raise("qr", "takes mode \"reduced\" or \"complete\", got \"" + std::string(mode) + "\"", where,
                  "pass \"reduced\" for Q [..., m, k] and R [..., k, n], \"complete\" for Q [..., m, m]");
  bool is_complete = mode == "complete";
  ir::Attributes attrs;
  attrs.ints = {is_complete ? 1 : 0};
  Array packed = detail::apply(ops::Primitive::qr, {a}, std::move(attrs), where);
  auto blocks = ops::qr_blocks(a.shape(), is_complete);
  const ops::MatrixExtents& e = blocks.e;
  return {ops::unpack_block(packed, blocks.sizes(), 0, {e.m, blocks.q_columns}),
          ops::unpack_block(packed, blocks.sizes(), 1, {blocks.q_columns, e.n})};
}

SVD svd(const Array& a, bool full_matrices, bool compute_uv, Location where) {
  Array packed = ops::apply_svd(a, full_matrices, compute_uv, where);
  auto blocks = ops::svd_blocks(a.shape(), full_matrices, compute_uv);
  const ops::MatrixExtents& e = blocks.e;
  if (!compute_uv) return {Array(), packed, Array()};
  return {ops::unpack_block(packed, blocks.sizes(), 0, {e.m, blocks.u_columns}),
          ops::unpack_block(packed, blocks.sizes(), 1, {e.k}),
          ops::unpack_block(packed, blocks.sizes(), 2, {blocks.vh_rows, e.n})};
}

Array svdvals(const Array& a, Location where) { return ops::apply_svd(a, false, false, where); }

Eigh eigh(const Array& a, bool lower, Location where) {
  ir::Attributes attrs;
  attrs.ints = {lower ? 1 : 0};
  Array packed = detail::apply(ops::Primitive::eigh, {a}, std::move(attrs), where);
  int64_t n = a.shape().back();
  return {ops::unpack_block(packed, {n, n * n}, 0, {n}), ops::unpack_block(packed, {n, n * n}, 1, {n, n})};
}

Array eigvalsh(const Array& a, bool lower, Location where) { return eigh(a, lower, where).eigenvalues; }

}  // namespace linalg

}  // namespace kiln
