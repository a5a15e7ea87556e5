// cholesky, triangular_solve, solve, inv, det and slogdet against NumPy on
// batched f32 and f64 matrices, singular and indefinite ones included; the
// same under jit; derivatives against finite differences; errors.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include "support/errors.h"
#include "support/gradient_check.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::NumpyOracle;
using testing::RandomArrays;

Array swap_last(const Array& x) { return swapaxes(x, -1, -2); }

// Symmetric positive definite: a a^T + n I.
Array positive_definite(const Array& a) {
  int64_t n = a.shape(-1);
  return matmul(a, swap_last(a)) + eye(n, std::nullopt, 0, a.dtype()) * static_cast<double>(n);
}

TEST(Linalg, MatchesNumpyOnBatchedMatrices) {
  RandomArrays random(81);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (DType dtype : {DType::f32, DType::f64}) {
    double rtol = dtype == DType::f32 ? 2e-4 : 1e-10;
    for (Shape batch : {Shape{}, Shape{3}, Shape{2, 2}}) {
      for (int64_t n : {1, 3, 6}) {
        Shape square = batch, rhs = batch;
        square.insert(square.end(), {n, n});
        rhs.insert(rhs.end(), {n, 2});
        Array a = random.uniform(square, dtype, -1, 1), b = random.uniform(rhs, dtype);
        Array spd = positive_definite(a);
        std::string context = std::string(dtype_name(dtype)) + shape_string(square);
        std::string cast = ".astype(" + testing::numpy_dtype(dtype) + ")";
        cases.push_back(
            {linalg::cholesky(spd), oracle.add("np.linalg.cholesky(a)", {spd}), "cholesky " + context, rtol});
        cases.push_back(
            {linalg::solve(spd, b), oracle.add("np.linalg.solve(a, b)", {spd, b}), "solve " + context, rtol});
        cases.push_back({linalg::inv(spd), oracle.add("np.linalg.inv(a)", {spd}), "inv " + context, rtol});
        cases.push_back({linalg::det(a), oracle.add("np.linalg.det(a)", {a}), "det " + context, rtol * 10});
        auto [sign, log_magnitude] = linalg::slogdet(a);
        cases.push_back({sign, oracle.add("np.linalg.slogdet(a)[0]" + cast, {a}), "slogdet sign " + context, 0});
        cases.push_back(
            {log_magnitude, oracle.add("np.linalg.slogdet(a)[1]" + cast, {a}), "slogdet log " + context, rtol});
        Array l = linalg::cholesky(spd);
        cases.push_back({linalg::triangular_solve(l, b), oracle.add("np.linalg.solve(np.tril(a), b)", {l, b}),
                         "triangular_solve lower " + context, rtol});
        cases.push_back({linalg::triangular_solve(swap_last(l), b, false, true),
                         oracle.add("np.linalg.solve(np.swapaxes(np.triu(np.swapaxes(a, -1, -2)), -1, -2), b)", {l, b}),
                         "triangular_solve upper transposed " + context, rtol});
        // Only the named triangle is read; a unit diagonal is taken as ones.
        Array unit = l + swap_last(l);
        cases.push_back(
            {linalg::triangular_solve(unit, b, true, false, true),
             oracle.add("np.linalg.solve(np.tril(a, -1) + np.eye(a.shape[-1], dtype=a.dtype), b)", {unit, b}),
             "triangular_solve unit diagonal " + context, rtol});
        auto traced = jit([](const Array& m, const Array& v) { return linalg::solve(m, v); });
        cases.push_back(
            {traced(spd, b), oracle.add("np.linalg.solve(a, b)", {spd, b}), "solve under jit " + context, rtol});
      }
    }
  }
  Array v = random.uniform({4}, DType::f64);
  Array m = positive_definite(random.uniform({4, 4}, DType::f64));
  cases.push_back({linalg::solve(m, v), oracle.add("np.linalg.solve(a, b)", {m, v}), "solve with a vector", 1e-10});
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(Linalg, FailedFactorizationsGiveNan) {
  Array singular = array({1.0, 2.0, 2.0, 4.0}, {2, 2});
  EXPECT_TRUE(all(isnan(linalg::solve(singular, array({1.0, 1.0})))).item<bool>());
  auto [sign, log_magnitude] = linalg::slogdet(singular);
  EXPECT_EQ(sign.item<double>(), 0.0);
  EXPECT_EQ(log_magnitude.item<double>(), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(linalg::det(singular).item<double>(), 0.0);
  Array indefinite = array({1.0, 2.0, 2.0, 1.0}, {2, 2});
  EXPECT_TRUE(all(isnan(linalg::cholesky(indefinite))).item<bool>());
}

TEST(Linalg, DerivativesAgreeWithFiniteDifferences) {
  RandomArrays random(82);
  Array a = random.uniform({2, 3, 3}, DType::f64, -1, 1), b = random.uniform({2, 3, 2}, DType::f64);
  Array shift = eye(3, std::nullopt, 0, DType::f64) * 3.0;
  testing::ArrayFunction systems = [&](const std::vector<Array>& in) {
    Array m = in[0] + shift;
    return sum(linalg::solve(m, in[1]) * in[1]) + sum(linalg::inv(m)) + sum(linalg::slogdet(m).second) +
           sum(linalg::det(m)) + sum(linalg::triangular_solve(m, in[1], true) * 2.0) +
           sum(linalg::triangular_solve(m, in[1], false, true, true));
  };
  EXPECT_TRUE(testing::check_derivatives(systems, {a, b}));
  // cholesky's derivative assumes a symmetric input (JAX): differentiate
  // through a symmetric positive definite function of the input.
  testing::ArrayFunction factor = [](const std::vector<Array>& in) {
    return sum(square(linalg::cholesky(positive_definite(in[0]))));
  };
  EXPECT_TRUE(testing::check_derivatives(factor, {a}));
}

TEST(Linalg, ErrorsNameTheShapes) {
  const int square_line = __LINE__ + 1;
  auto wide = [] { linalg::cholesky(ones({2, 3}, DType::f64)); };
  testing::expect_error(square_line, wide, {"[cholesky]", "square f32 or f64", "f64[2,3]"});
  const int integer_line = __LINE__ + 1;
  auto integers = [] { linalg::inv(ones({2, 2}, DType::i32)); };
  testing::expect_error(integer_line, integers, {"[inv]", "i32[2,2]", "astype"});
  const int rhs_line = __LINE__ + 1;
  auto mismatch = [] { linalg::solve(ones({3, 3}, DType::f64), ones({2, 1}, DType::f64)); };
  testing::expect_error(rhs_line, mismatch, {"[solve]", "f64[3,3]", "f64[2,1]"});
}

}  // namespace
}  // namespace kiln
