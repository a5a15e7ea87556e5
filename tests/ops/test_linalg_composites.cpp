// norm, lstsq, pinv and matrix_rank against NumPy (every vector and matrix
// ord, axes in either order, keepdims, batched and rank-deficient systems);
// traced against eager; derivatives against finite differences and
// PyTorch's autograd; errors.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include "support/errors.h"
#include "support/gradient_check.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::NumpyOracle;
using testing::RandomArrays;

std::string python_ord(const linalg::NormOrder& ord) {
  if (ord.is_default()) return "None";
  if (ord.is(linalg::inf)) return "np.inf";
  if (ord.is(-linalg::inf)) return "-np.inf";
  std::string text = ord.to_string();
  return text.front() == '"' ? "'" + text.substr(1, text.size() - 2) + "'" : text;
}

std::string python_axes(const std::vector<int64_t>& axes) {
  if (axes.empty()) return "None";
  if (axes.size() == 1) return std::to_string(axes[0]);
  return "(" + std::to_string(axes[0]) + ", " + std::to_string(axes[1]) + ")";
}

TEST(LinalgComposites, NormMatchesNumpy) {
  RandomArrays random(101);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (DType dtype : {DType::f32, DType::f64}) {
    double rtol = dtype == DType::f32 ? 1e-5 : 1e-12;
    std::string cast = ".astype(" + testing::numpy_dtype(dtype) + ")";
    // Some exact zeros, for ord 0.
    auto draw = [&](Shape shape) {
      Array x = random.uniform(std::move(shape), dtype, -2, 2);
      return where(abs(x) < 0.3, 0.0, x);
    };
    struct VectorCase {
      Shape shape;
      std::vector<int64_t> axes;
    };
    for (const VectorCase& c : std::vector<VectorCase>{{{7}, {}}, {{3, 5}, {1}}, {{3, 5}, {0}}, {{2, 3, 4}, {-2}}}) {
      Array x = draw(c.shape);
      for (linalg::NormOrder ord :
           std::vector<linalg::NormOrder>{{}, 2, 1, linalg::inf, -linalg::inf, 0, 3, 0.5, -1.5}) {
        for (bool keepdims : {false, true}) {
          Axes axis = c.axes.empty() ? Axes::all() : Axes(c.axes);
          std::string context = "vector norm ord " + ord.to_string() + " of " + shape_string(c.shape) + " axes " +
                                python_axes(c.axes) + (keepdims ? " keepdims" : "");
          cases.push_back({linalg::norm(x, ord, axis, keepdims),
                           oracle.add("np.linalg.norm(a, ord=" + python_ord(ord) + ", axis=" + python_axes(c.axes) +
                                          ", keepdims=" + (keepdims ? "True" : "False") + ")" + cast,
                                      {x}),
                           context, rtol * 10});
        }
      }
    }
    struct MatrixCase {
      Shape shape;
      std::vector<int64_t> axes;
    };
    for (const MatrixCase& c : std::vector<MatrixCase>{
             {{4, 3}, {}}, {{2, 4, 3}, {1, 2}}, {{2, 4, 3}, {2, 1}}, {{3, 2, 5}, {0, 2}}, {{0, 3, 3}, {-2, -1}}}) {
      Array x = draw(c.shape);
      bool empty_batch = c.shape[0] == 0;
      for (linalg::NormOrder ord :
           std::vector<linalg::NormOrder>{{}, "fro", "nuc", 1, -1, 2, -2, linalg::inf, -linalg::inf}) {
        for (bool keepdims : {false, true}) {
          Axes axis = c.axes.empty() ? Axes::all() : Axes(c.axes);
          std::string context = "matrix norm ord " + ord.to_string() + " of " + shape_string(c.shape) + " axes " +
                                python_axes(c.axes) + (keepdims ? " keepdims" : "");
          Array actual = linalg::norm(x, ord, axis, keepdims);
          if (empty_batch && (ord.is(2) || ord.is(-2) || ord.is("nuc"))) continue;  // NumPy's svd of no matrices
          cases.push_back({actual,
                           oracle.add("np.linalg.norm(a, ord=" + python_ord(ord) + ", axis=" + python_axes(c.axes) +
                                          ", keepdims=" + (keepdims ? "True" : "False") + ")" + cast,
                                      {x}),
                           context, rtol * 10});
        }
      }
    }
    Array cube = draw({2, 3, 4});
    cases.push_back({linalg::norm(cube), oracle.add("np.linalg.norm(a)" + cast, {cube}), "flattened", rtol});
  }
  Array integers = array({3, -4, 0, 12}, {2, 2});
  cases.push_back({linalg::norm(integers), oracle.add("np.linalg.norm(a).astype(np.float32)", {integers}),
                   "integers in f32", 1e-6});
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

/// A tall matrix of rank 1 and a wide one of rank 2, batched with full-rank ones.
Array rank_deficient(DType dtype) {
  Array column = array({1.0, 2.0, 3.0, -1.0}, {4, 1});
  Array rank_one = matmul(column, array({1.0, -2.0, 0.5}, {1, 3}));
  return astype(stack({rank_one, rank_one * 2.0}), dtype);
}

TEST(LinalgComposites, LstsqPinvAndMatrixRankMatchNumpy) {
  RandomArrays random(102);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (DType dtype : {DType::f32, DType::f64}) {
    double rtol = dtype == DType::f32 ? 2e-3 : 1e-9;
    std::string cast = ".astype(" + testing::numpy_dtype(dtype) + ")";
    struct System {
      Shape a, b;
    };
    for (const System& c : std::vector<System>{{{6, 3}, {6, 2}},
                                               {{6, 3}, {6}},
                                               {{3, 5}, {3, 2}},
                                               {{4, 4}, {4, 1}},
                                               {{3, 6, 3}, {3, 6, 2}},
                                               {{2, 3, 5}, {2, 3}}}) {
      Array a = random.uniform(c.a, dtype, -1, 1), b = random.uniform(c.b, dtype, -1, 1);
      std::string context = "lstsq " + std::string(dtype_name(dtype)) + shape_string(c.a) + shape_string(c.b);
      linalg::Lstsq result = linalg::lstsq(a, b);
      // np.linalg.lstsq takes one system: loop over the batch in Python.
      bool batched = c.a.size() == 3;
      auto numpy = [&](int part) {
        std::string one = "np.linalg.lstsq(x, y, rcond=None)[" + std::to_string(part) + "]";
        std::string all =
            batched ? "np.stack([" + one + " for x, y in zip(a, b)])" : "(lambda x, y: " + one + ")(a, b)";
        return oracle.add("np.asarray(" + all + ")", {a, b});
      };
      cases.push_back({result.solution, numpy(0), context + " solution", rtol});
      if (c.a[c.a.size() - 2] > c.a.back())
        cases.push_back({result.residuals, numpy(1), context + " residuals", rtol * 10});
      else EXPECT_EQ(result.residuals.shape().back(), 0) << context;
      cases.push_back({result.rank, numpy(2), context + " rank", 0});
      cases.push_back({result.singular_values, numpy(3), context + " singular values", rtol});
      cases.push_back({linalg::pinv(a), oracle.add("np.linalg.pinv(a)", {a}), "pinv " + context, rtol});
    }
    Array deficient = rank_deficient(dtype);
    Array b = random.uniform({2, 4, 2}, dtype, -1, 1);
    linalg::Lstsq result = linalg::lstsq(deficient, b);
    cases.push_back(
        {result.solution,
         oracle.add("np.stack([np.linalg.lstsq(x, y, rcond=None)[0] for x, y in zip(a, b)])", {deficient, b}),
         "lstsq of rank 1, the least-norm solution", rtol});
    cases.push_back({result.rank, oracle.add("np.array([1, 1], dtype=np.int32)", {}), "lstsq rank 1", 0});
    cases.push_back({linalg::pinv(deficient), oracle.add("np.linalg.pinv(a)", {deficient}), "pinv of rank 1", rtol});
    Array mixed = concatenate({deficient, astype(random.uniform({1, 4, 3}, DType::f64), dtype)});
    cases.push_back({linalg::matrix_rank(mixed), oracle.add("np.linalg.matrix_rank(a)", {mixed}), "matrix_rank", 0});
    cases.push_back({linalg::matrix_rank(mixed, 1e9), oracle.add("np.linalg.matrix_rank(a, tol=1e9)", {mixed}),
                     "matrix_rank above every value", 0});
  }
  Array none = linalg::lstsq(zeros({0, 4, 3}, DType::f64), zeros({0, 4, 2}, DType::f64)).solution;
  EXPECT_EQ(none.shape(), (Shape{0, 3, 2}));
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(LinalgComposites, TracedEqualsEager) {
  RandomArrays random(103);
  Array a = random.uniform({2, 5, 3}, DType::f64, -1, 1), b = random.uniform({2, 5, 2}, DType::f64, -1, 1);
  auto composites = [](const Array& m, const Array& rhs) {
    linalg::Lstsq result = linalg::lstsq(m, rhs);
    return concatenate({ravel(result.solution), ravel(result.residuals), ravel(linalg::pinv(m)),
                        ravel(linalg::norm(m, "nuc", {1, 2})), ravel(linalg::norm(m, 3, 1)),
                        ravel(linalg::norm(m, -linalg::inf, {2, 1}, true))});
  };
  Array eager = testing::eager_and_traced("composites", composites, a, b);
  Array native = jit(composites)(a, b);
  EXPECT_TRUE(testing::all_close(native, eager, 1e-12, 1e-14, "composites under jit"));
}

TEST(LinalgComposites, DerivativesAgreeWithFiniteDifferences) {
  RandomArrays random(104);
  Array m = random.uniform({2, 4, 3}, DType::f64, -1, 1);
  Array v = random.uniform({5}, DType::f64, 0.5, 2);
  testing::ArrayFunction norms = [](const std::vector<Array>& in) {
    const Array& x = in[0];
    return linalg::norm(x) + sum(linalg::norm(x, "nuc", {1, 2})) + sum(linalg::norm(x, 2, {1, 2})) +
           sum(linalg::norm(x, -2, {2, 1})) + sum(linalg::norm(x, 1, {1, 2})) +
           sum(linalg::norm(x, linalg::inf, {1, 2})) + sum(linalg::norm(x, 3, 2)) + sum(linalg::norm(x, 1, 1)) +
           linalg::norm(in[1], linalg::inf) + linalg::norm(in[1], 0.5);
  };
  EXPECT_TRUE(testing::check_derivatives(norms, {m, v}));
  for (Shape shape : {Shape{2, 5, 3}, Shape{2, 3, 5}}) {
    Array a = random.uniform(shape, DType::f64, -1, 1), b = random.uniform({2, shape[1], 2}, DType::f64, -1, 1);
    Array w = random.uniform({2, shape[2], 2}, DType::f64);
    testing::ArrayFunction solution = [&](const std::vector<Array>& in) {
      return sum(linalg::lstsq(in[0], in[1]).solution * w) + sum(square(linalg::pinv(in[0])));
    };
    EXPECT_TRUE(testing::check_derivatives(solution, {a, b})) << shape_string(shape);
  }
}

std::string torch_gradient(const std::string& loss) {
  return "(lambda t, torch=__import__('torch'): (" + loss +
         ").backward() or t.grad.numpy())(__import__('torch').from_numpy(a).requires_grad_())";
}

TEST(LinalgComposites, GradientsMatchPyTorch) {
  RandomArrays random(105);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  Array x = random.uniform({3, 4, 5}, DType::f64, -1, 1);
  struct MatrixOrd {
    linalg::NormOrder ord;
    std::string torch_ord;
  };
  for (const MatrixOrd& c : std::vector<MatrixOrd>{
           {"fro", "'fro'"}, {"nuc", "'nuc'"}, {2, "2"}, {-2, "-2"}, {1, "1"}, {linalg::inf, "float('inf')"}}) {
    Array gradient = grad([&](const Array& t) { return sum(linalg::norm(t, c.ord, {1, 2})); })(x);
    cases.push_back({gradient,
                     oracle.add(torch_gradient("torch.linalg.matrix_norm(t, ord=" + c.torch_ord + ").sum()"), {x}),
                     "matrix norm " + c.ord.to_string(), 1e-9});
  }
  for (double p : {2.0, 1.0, 3.0, 0.5}) {
    Array gradient = grad([&](const Array& t) { return sum(linalg::norm(t, p, -1)); })(x);
    cases.push_back(
        {gradient,
         oracle.add(torch_gradient("torch.linalg.vector_norm(t, ord=" + std::to_string(p) + ", dim=-1).sum()"), {x}),
         "vector norm " + std::to_string(p), 1e-9});
  }
  for (Shape shape : {Shape{2, 6, 3}, Shape{2, 3, 6}}) {
    Array a = random.uniform(shape, DType::f64, -1, 1), b = random.uniform({2, shape[1], 2}, DType::f64, -1, 1);
    Array w = random.uniform({2, shape[2], 2}, DType::f64);
    Array gradient = grad([&](const Array& t) { return sum(linalg::lstsq(t, b).solution * w); })(a);
    cases.push_back(
        {gradient,
         oracle.add(torch_gradient("(torch.linalg.pinv(t) @ torch.from_numpy(b) * torch.from_numpy(c)).sum()"),
                    {a, b, w}),
         "lstsq solution " + shape_string(shape), 1e-8});
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(LinalgComposites, ErrorsNameTheShapes) {
  const int nuclear_line = __LINE__ + 1;
  auto nuclear = [] { linalg::norm(ones({3, 4}, DType::f64), "nuc", 1); };
  testing::expect_error(nuclear_line, nuclear, {"[norm]", "\"nuc\"", "f64[3,4]", "two axes"});
  const int matrix_ord_line = __LINE__ + 1;
  auto matrix_ord = [] { linalg::norm(ones({3, 4}, DType::f64), 3); };
  testing::expect_error(matrix_ord_line, matrix_ord, {"[norm]", "\"fro\"", "got 3"});
  const int rank_line = __LINE__ + 1;
  auto cube = [] { linalg::norm(ones({2, 3, 4}, DType::f64), 1); };
  testing::expect_error(rank_line, cube, {"[norm]", "f64[2,3,4]", "pass axis"});
  const int axes_line = __LINE__ + 1;
  auto same_axes = [] { linalg::norm(ones({3, 4}, DType::f64), {}, {1, 1}); };
  testing::expect_error(axes_line, same_axes, {"[norm]", "[1,1]", "f64[3,4]"});
  const int rows_line = __LINE__ + 1;
  auto rows = [] { linalg::lstsq(ones({4, 3}, DType::f64), ones({5, 2}, DType::f64)); };
  testing::expect_error(rows_line, rows, {"[lstsq]", "f64[4,3]", "f64[5,2]", "as many rows"});
  const int integer_line = __LINE__ + 1;
  auto integers = [] { linalg::pinv(ones({3, 3}, DType::i64)); };
  testing::expect_error(integer_line, integers, {"[pinv]", "i64[3,3]", "astype"});
  const int vector_line = __LINE__ + 1;
  auto vector = [] { linalg::matrix_rank(ones({3}, DType::f64)); };
  testing::expect_error(vector_line, vector, {"[matrix_rank]", "f64[3]", "two axes"});
}

}  // namespace
}  // namespace kiln
