// qr, svd and eigh against NumPy on batched f32 and f64 matrices (square,
// tall, wide, and a batch of none): what is unique is compared directly (R's
// and S's magnitudes, eigenvalues, |Q|, |U|, |V|), the rest through the
// invariants (reconstruction, orthonormal columns, R upper triangular); the
// same traced, native and interpreted; derivatives against finite
// differences and PyTorch's autograd; errors.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include "backend/interp/interpreter.h"
#include "support/errors.h"
#include "support/gradient_check.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::all_close;
using testing::NumpyOracle;
using testing::RandomArrays;

Array swap_last(const Array& x) { return swapaxes(x, -1, -2); }

Shape with_matrix(Shape batch, int64_t m, int64_t n) {
  batch.insert(batch.end(), {m, n});
  return batch;
}

/// Q^T Q for the columns of q: the identity when they are orthonormal.
Array gram(const Array& q) { return matmul(swap_last(q), q); }

Array identity_like(const Array& square) {
  return broadcast_to(eye(square.shape(-1), std::nullopt, 0, square.dtype()), square.shape());
}

Array columns_upto(const Array& x, int64_t count) {
  return slice(x, std::vector<int64_t>(static_cast<size_t>(x.ndim()), 0), [&] {
    Shape stop = x.shape();
    stop.back() = count;
    return stop;
  }());
}

Array rows_upto(const Array& x, int64_t count) { return swap_last(columns_upto(swap_last(x), count)); }

struct Tolerance {
  double rtol, atol;
};

Tolerance tolerance_for(DType dtype) { return dtype == DType::f32 ? Tolerance{2e-4, 2e-5} : Tolerance{1e-10, 1e-12}; }

const std::vector<std::pair<int64_t, int64_t>> matrix_sizes = {{4, 4}, {5, 3}, {3, 5}, {1, 1}, {6, 2}};
const std::vector<Shape> batches = {Shape{}, Shape{3}, Shape{2, 2}, Shape{0}};

TEST(LinalgDecompositions, QrMatchesNumpyAndItsInvariants) {
  RandomArrays random(91);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (DType dtype : {DType::f32, DType::f64}) {
    auto [rtol, atol] = tolerance_for(dtype);
    for (const Shape& batch : batches) {
      for (auto [m, n] : matrix_sizes) {
        Array a = random.uniform(with_matrix(batch, m, n), dtype, -1, 1);
        for (std::string mode : {"reduced", "complete"}) {
          std::string context = "qr " + mode + " " + std::string(dtype_name(dtype)) + shape_string(a.shape());
          auto [q, r] = linalg::qr(a, mode);
          int64_t k = mode == "complete" ? m : std::min(m, n);
          EXPECT_EQ(q.shape(), with_matrix(batch, m, k)) << context;
          EXPECT_EQ(r.shape(), with_matrix(batch, k, n)) << context;
          EXPECT_TRUE(all_close(matmul(q, r), a, rtol, atol * 10, context + " Q R = a"));
          EXPECT_TRUE(all_close(gram(q), identity_like(gram(q)), rtol, atol * 10, context + " Q^T Q = I"));
          EXPECT_TRUE(all_close(triu(r), r, 0, 0, context + " R upper triangular"));
          // Unique up to the signs of Q's columns and R's rows (the same flip).
          std::string call = "np.linalg.qr(a, mode='" + mode + "')";
          cases.push_back({abs(r), oracle.add("np.abs(" + call + "[1])", {a}), context + " |R|", rtol});
          if (mode == "reduced" || m <= n)
            cases.push_back({abs(q), oracle.add("np.abs(" + call + "[0])", {a}), context + " |Q|", rtol});
        }
      }
    }
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(LinalgDecompositions, SvdMatchesNumpyAndItsInvariants) {
  RandomArrays random(92);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (DType dtype : {DType::f32, DType::f64}) {
    auto [rtol, atol] = tolerance_for(dtype);
    for (const Shape& batch : batches) {
      for (auto [m, n] : matrix_sizes) {
        Array a = random.uniform(with_matrix(batch, m, n), dtype, -1, 1);
        int64_t k = std::min(m, n);
        for (bool full : {false, true}) {
          std::string context = std::string(full ? "svd full " : "svd reduced ") + std::string(dtype_name(dtype)) +
                                shape_string(a.shape());
          auto [u, s, vh] = linalg::svd(a, full);
          EXPECT_EQ(u.shape(), with_matrix(batch, m, full ? m : k)) << context;
          EXPECT_EQ(vh.shape(), with_matrix(batch, full ? n : k, n)) << context;
          Array u_k = columns_upto(u, k), vh_k = rows_upto(vh, k);
          EXPECT_TRUE(all_close(matmul(u_k * expand_dims(s, -2), vh_k), a, rtol, atol * 10, context + " U S Vh = a"));
          EXPECT_TRUE(all_close(gram(u), identity_like(gram(u)), rtol, atol * 10, context + " U^T U = I"));
          Array v = swap_last(vh);
          EXPECT_TRUE(all_close(gram(v), identity_like(gram(v)), rtol, atol * 10, context + " V^T V = I"));
          std::string call = "np.linalg.svd(a, full_matrices=" + std::string(full ? "True" : "False") + ")";
          cases.push_back({s, oracle.add(call + "[1]", {a}), context + " S", rtol});
          // Singular vectors past k are not unique; the first k are, up to sign.
          cases.push_back({abs(u_k), oracle.add("np.abs(" + call + "[0][..., :" + std::to_string(k) + "])", {a}),
                           context + " |U|", rtol * 10});
          cases.push_back({abs(vh_k), oracle.add("np.abs(" + call + "[2][..., :" + std::to_string(k) + ", :])", {a}),
                           context + " |Vh|", rtol * 10});
        }
        cases.push_back({linalg::svdvals(a), oracle.add("np.linalg.svd(a, compute_uv=False)", {a}),
                         "svdvals " + shape_string(a.shape()), rtol});
        EXPECT_FALSE(linalg::svd(a, true, false).u.defined());
      }
    }
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(LinalgDecompositions, EighMatchesNumpyAndReadsOneTriangle) {
  RandomArrays random(93);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (DType dtype : {DType::f32, DType::f64}) {
    auto [rtol, atol] = tolerance_for(dtype);
    for (const Shape& batch : batches) {
      for (int64_t n : {1, 3, 6}) {
        // Not symmetric: only the named triangle may be read.
        Array a = random.uniform(with_matrix(batch, n, n), dtype, -1, 1);
        for (bool lower : {true, false}) {
          std::string context = std::string(lower ? "eigh lower " : "eigh upper ") + std::string(dtype_name(dtype)) +
                                shape_string(a.shape());
          auto [w, v] = linalg::eigh(a, lower);
          Array symmetric = lower ? tril(a) + swap_last(tril(a, -1)) : triu(a) + swap_last(triu(a, 1));
          EXPECT_TRUE(all_close(matmul(v * expand_dims(w, -2), swap_last(v)), symmetric, rtol, atol * 10,
                                context + " V diag(w) V^T = a"));
          EXPECT_TRUE(all_close(gram(v), identity_like(gram(v)), rtol, atol * 10, context + " V^T V = I"));
          std::string call = std::string("np.linalg.eigh(a, UPLO='") + (lower ? "L" : "U") + "')";
          cases.push_back({w, oracle.add(call + "[0]", {a}), context + " eigenvalues", rtol});
          cases.push_back({abs(v), oracle.add("np.abs(" + call + "[1])", {a}), context + " |V|", rtol * 10});
          cases.push_back({linalg::eigvalsh(a, lower), oracle.add(call + "[0]", {a}), context + " eigvalsh", rtol});
        }
      }
    }
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

/// Losses whose value does not depend on the signs LAPACK picks for the
/// singular vectors, eigenvectors and Householder reflections.
Array qr_loss(const Array& a, const Array& weights, std::string_view mode = "reduced") {
  auto [q, r] = linalg::qr(a, mode);
  return sum(square(q) * columns_upto(weights, q.shape(-1))) + sum(square(r)) * 0.5;
}

Array svd_loss(const Array& a, const Array& weights) {
  auto [u, s, vh] = linalg::svd(a, false);
  return sum(square(u) * columns_upto(weights, u.shape(-1))) + sum(s * s) + sum(square(vh)) * 0.25 +
         sum(linalg::svdvals(a));
}

Array eigh_loss(const Array& a, const Array& weights, bool lower) {
  auto [w, v] = linalg::eigh(a, lower);
  return sum(square(v) * weights) + sum(w * w);
}

TEST(LinalgDecompositions, TracedEqualsEagerOnBothBackends) {
  RandomArrays random(94);
  Array a = random.uniform({2, 5, 3}, DType::f64, -1, 1), wide = random.uniform({2, 3, 5}, DType::f64, -1, 1);
  Array square_a = random.uniform({2, 4, 4}, DType::f64, -1, 1);
  auto decompositions = [](const Array& tall, const Array& flat, const Array& square_m) {
    auto [q, r] = linalg::qr(tall, "complete");
    auto [q_wide, r_wide] = linalg::qr(flat);
    auto [u, s, vh] = linalg::svd(tall);
    auto [w, v] = linalg::eigh(square_m, false);
    return concatenate({ravel(q), ravel(r), ravel(q_wide), ravel(r_wide), ravel(u), ravel(s), ravel(vh),
                        ravel(linalg::svdvals(flat)), ravel(w), ravel(v)});
  };
  Array eager = testing::eager_and_traced("decompositions", decompositions, a, wide, square_a);
  Array native = jit(decompositions)(a, wide, square_a);
  EXPECT_TRUE(all_close(native, eager, testing::native_rtol(DType::f64), 1e-300, "decompositions under jit"));
  Array weights = random.uniform({2, 5, 5}, DType::f64);
  auto gradients = [](const Array& tall, const Array& square_m, const Array& w) {
    Array g_qr = grad([&](const Array& x) { return qr_loss(x, w); })(tall);
    Array g_svd = grad([&](const Array& x) { return svd_loss(x, w); })(tall);
    Array g_eigh = grad([&](const Array& x) { return eigh_loss(x, columns_upto(rows_upto(w, 4), 4), true); })(square_m);
    return concatenate({ravel(g_qr), ravel(g_svd), ravel(g_eigh)});
  };
  // The derivative graphs sum in other orders eagerly, natively and in the
  // interpreter: equal to rounding, not bit for bit.
  Array eager_gradients = gradients(a, square_a, weights);
  Array native_gradients = jit(gradients)(a, square_a, weights);
  Array interpreted_gradients =
      detail::interpret(make_graph("gradients", gradients, a, square_a, weights), {a, square_a, weights}, {}).at(0);
  EXPECT_TRUE(all_close(native_gradients, eager_gradients, 1e-10, 1e-12, "gradients under jit"));
  EXPECT_TRUE(all_close(interpreted_gradients, eager_gradients, 1e-10, 1e-12, "gradients interpreted"));
}

TEST(LinalgDecompositions, DerivativesAgreeWithFiniteDifferences) {
  RandomArrays random(95);
  Array weights = random.uniform({2, 6, 6}, DType::f64);
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{4, 3}, {3, 3}, {3, 5}}) {
    Array a = random.uniform({2, m, n}, DType::f64, -1, 1);
    Array w = rows_upto(columns_upto(weights, std::max(m, n)), m);
    std::string context = "[2," + std::to_string(m) + "," + std::to_string(n) + "]";
    testing::ArrayFunction qr_fn = [&](const std::vector<Array>& in) { return qr_loss(in[0], w); };
    EXPECT_TRUE(testing::check_derivatives(qr_fn, {a})) << "qr " << context;
    testing::ArrayFunction svd_fn = [&](const std::vector<Array>& in) { return svd_loss(in[0], w); };
    EXPECT_TRUE(testing::check_derivatives(svd_fn, {a})) << "svd " << context;
  }
  Array square_a = random.uniform({2, 4, 4}, DType::f64, -1, 1);
  testing::ArrayFunction complete_fn = [&](const std::vector<Array>& in) {
    return qr_loss(in[0], rows_upto(columns_upto(weights, 4), 4), "complete");
  };
  EXPECT_TRUE(testing::check_derivatives(complete_fn, {square_a})) << "qr complete, square";
  testing::ArrayFunction full_fn = [&](const std::vector<Array>& in) {
    auto [u, s, vh] = linalg::svd(in[0], true);
    return sum(square(u) * rows_upto(columns_upto(weights, 4), 4)) + sum(square(vh)) + sum(s);
  };
  EXPECT_TRUE(testing::check_derivatives(full_fn, {square_a})) << "svd full_matrices, square";
  for (bool lower : {true, false}) {
    // Not symmetric: the derivative is zero on the triangle eigh does not read.
    testing::ArrayFunction eigh_fn = [&](const std::vector<Array>& in) {
      return eigh_loss(in[0], rows_upto(columns_upto(weights, 4), 4), lower);
    };
    EXPECT_TRUE(testing::check_derivatives(eigh_fn, {square_a})) << "eigh lower=" << lower;
  }
}

std::string torch_input(const std::string& name) {
  return "__import__('torch').from_numpy(" + name + ").requires_grad_()";
}

/// Python: the gradient of `loss` (an expression in the tensor t and the
/// NumPy weights b) at a, by torch's autograd.
std::string torch_gradient(const std::string& loss) {
  return "(lambda t, torch=__import__('torch'): (" + loss + ").backward() or t.grad.numpy())(" + torch_input("a") + ")";
}

TEST(LinalgDecompositions, GradientsMatchPyTorch) {
  RandomArrays random(96);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  const std::string weights = "torch.from_numpy(b)";
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{5, 3}, {4, 4}, {3, 5}}) {
    Array a = random.uniform({3, m, n}, DType::f64, -1, 1);
    int64_t k = std::min(m, n);
    Array w = random.uniform({3, m, k}, DType::f64);
    std::string context = shape_string(a.shape());
    Array qr_gradient = grad([&](const Array& x) { return qr_loss(x, w); })(a);
    cases.push_back({qr_gradient,
                     oracle.add(torch_gradient("(lambda q, r: (q * q * " + weights +
                                               ").sum() + (r * r).sum() * 0.5)(*torch.linalg.qr(t))"),
                                {a, w}),
                     "qr gradient " + context, 1e-8});
    Array svd_gradient = grad([&](const Array& x) { return svd_loss(x, w); })(a);
    cases.push_back({svd_gradient,
                     oracle.add(torch_gradient("(lambda u, s, vh: (u * u * " + weights +
                                               ").sum() + (s * s).sum() + (vh * vh).sum() * 0.25)(*torch.linalg.svd("
                                               "t, full_matrices=False)) + torch.linalg.svdvals(t).sum()"),
                                {a, w}),
                     "svd gradient " + context, 1e-8});
  }
  Array square_a = random.uniform({3, 4, 4}, DType::f64, -1, 1), w = random.uniform({3, 4, 4}, DType::f64);
  for (bool lower : {true, false}) {
    Array eigh_gradient = grad([&](const Array& x) { return eigh_loss(x, w, lower); })(square_a);
    // torch.linalg.eigh reads one triangle too; mirror it explicitly so that
    // autograd sees which entries the result depends on.
    std::string mirrored = lower ? "torch.tril(t) + torch.tril(t, -1).mT" : "torch.triu(t) + torch.triu(t, 1).mT";
    cases.push_back({eigh_gradient,
                     oracle.add(torch_gradient("(lambda w, v: (v * v * " + weights +
                                               ").sum() + (w * w).sum())(*torch.linalg.eigh(" + mirrored + "))"),
                                {square_a, w}),
                     std::string("eigh gradient lower=") + (lower ? "true" : "false"), 1e-8});
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(LinalgDecompositions, ErrorsNameTheShapes) {
  const int rank_line = __LINE__ + 1;
  auto vector = [] { linalg::qr(ones({4}, DType::f64)); };
  testing::expect_error(rank_line, vector, {"[qr]", "f64[4]", "two axes"});
  const int integer_line = __LINE__ + 1;
  auto integers = [] { linalg::svd(ones({2, 3}, DType::i32)); };
  testing::expect_error(integer_line, integers, {"[svd]", "i32[2,3]", "astype"});
  const int square_line = __LINE__ + 1;
  auto wide = [] { linalg::eigh(ones({2, 3}, DType::f64)); };
  testing::expect_error(square_line, wide, {"[eigh]", "square", "f64[2,3]"});
  const int mode_line = __LINE__ + 1;
  auto mode = [] { linalg::qr(ones({2, 2}, DType::f64), "raw"); };
  testing::expect_error(mode_line, mode, {"[qr]", "\"raw\"", "\"complete\""});
  const int complete_line = __LINE__ + 1;
  auto complete_q = [](const Array& a) { return sum(linalg::qr(a, "complete").q); };
  auto complete = [&] { grad(complete_q)(ones({3, 2}, DType::f64)); };
  testing::expect_error(complete_line, complete, {"[qr]", "\"complete\"", "[..., 3, 2]", "\"reduced\""});
  const int full_line = __LINE__ + 1;
  auto full = [] { grad([](const Array& a) { return sum(linalg::svd(a).u); })(ones({3, 2}, DType::f64)); };
  testing::expect_error(full_line, full, {"[svd]", "full_matrices=true", "[..., 3, 2]", "full_matrices=false"});
}

}  // namespace
}  // namespace kiln
