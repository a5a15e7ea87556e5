// Derivatives of the reduction primitives (reduce_sum, reduce_prod,
// reduce_max, reduce_min, argmax, argmin, cumsum) and matmul, and of the
// composites built on them (mean, logsumexp, softmax, log_softmax): vjp and
// jvp against finite differences, exact values where the derivative is
// known in closed form (zeros in prod, ties in max/min, Hessians of matmul),
// and NumPy closed forms for the softmax family at large inputs.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/common/apply.h"
#include "ops/common/rules.h"
#include "support/gradient_check.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::all_close;
using testing::ArrayFunction;
using testing::check_derivatives;
using testing::DerivativeTolerance;
using testing::NumpyOracle;
using testing::RandomArrays;

using Unary = std::function<Array(const Array&)>;
using Binary = std::function<Array(const Array&, const Array&)>;

struct Case {
  std::string name;
  ArrayFunction fn;
  std::vector<Array> inputs;
};

Case unary_case(std::string name, Unary fn, Array x) {
  return {std::move(name), [fn](const std::vector<Array>& in) { return fn(in[0]); }, {std::move(x)}};
}

Case binary_case(std::string name, Binary fn, Array a, Array b) {
  return {
      std::move(name), [fn](const std::vector<Array>& in) { return fn(in[0], in[1]); }, {std::move(a), std::move(b)}};
}

void check_all(const std::vector<Case>& cases, DerivativeTolerance tolerance = {}) {
  for (const Case& c : cases) EXPECT_TRUE(check_derivatives(c.fn, c.inputs, tolerance)) << c.name;
}

Array f64(const std::vector<double>& data, Shape shape) { return array(data, std::move(shape)); }

Array uniform(RandomArrays& random, Shape shape, double lo = -2, double hi = 2) {
  return random.uniform(std::move(shape), DType::f64, lo, hi);
}

/// Shuffled values at least 0.25 apart: no ties, so max/min are smooth.
Array distinct(Shape shape, uint64_t seed) {
  int64_t count = 1;
  for (int64_t e : shape) count *= e;
  std::vector<double> data(static_cast<size_t>(count));
  for (size_t i = 0; i < data.size(); ++i) data[i] = 0.25 * static_cast<double>(i) - 1.3;
  std::shuffle(data.begin(), data.end(), std::mt19937_64(seed));
  return f64(data, std::move(shape));
}

/// Magnitudes in [0.5, 1.5] with random signs, so products stay moderate.
Array moderate(RandomArrays& random, Shape shape) {
  Array magnitude = uniform(random, shape, 0.5, 1.5);
  Array sign = kiln::sign(uniform(random, shape, -1, 1));
  return magnitude * sign;
}

/// The cumsum primitive in either direction (the public cumsum runs forward only).
Array cumsum_primitive(const Array& x, int64_t axis, bool reverse) {
  ir::Attributes attrs;
  attrs.ints = {axis, reverse ? 1 : 0};
  return detail::apply(ir::Primitive::cumsum, {x}, std::move(attrs), Location::current());
}

std::vector<double> values(const Array& x) { return x.to_vector<double>(); }

/// The i-th basis vector of length n, to pick an element out by a dot product.
Array basis(int64_t n, int64_t i) {
  std::vector<double> data(static_cast<size_t>(n), 0.0);
  data[static_cast<size_t>(i)] = 1;
  return f64(data, {n});
}

void expect_values(const Array& actual, const std::vector<double>& expected, double tolerance,
                   const std::string& context) {
  std::vector<double> got = values(actual);
  ASSERT_EQ(got.size(), expected.size()) << context;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tolerance) << context << " element " << i;
}

using Reduce = std::function<Array(const Array&, Axes, bool)>;

struct Reduction {
  std::string label;
  Axes axes;
  bool keepdims = false;
};

const std::vector<Reduction> reductions = {
    {"all", Axes::all()},
    {"axis 0", 0},
    {"axis -1", -1},
    {"axes {0,2}", {0, 2}},
    {"axes {0,2} keepdims", {0, 2}, true},
    {"axes {1,2} keepdims", {1, 2}, true},
    {"all keepdims", Axes::all(), true},
};

/// A case per entry of `reductions`, applying `reduce` to `x`.
void add_reductions(std::vector<Case>& cases, const std::string& op, const Reduce& reduce, const Array& x) {
  for (const Reduction& r : reductions) {
    Unary fn = [=](const Array& a) { return reduce(a, r.axes, r.keepdims); };
    cases.push_back(unary_case(op + " " + r.label, fn, x));
  }
}

// ---- sum and mean -----------------------------------------------------------------

TEST(ReduceDerivatives, SumAndMean) {
  RandomArrays random(11);
  Array x = uniform(random, {2, 3, 4});
  Array row = uniform(random, {4}), column = uniform(random, {3, 1}), block = uniform(random, {2, 1, 4});
  std::vector<Case> cases;
  for (bool use_mean : {false, true}) {
    Reduce reduce = [use_mean](const Array& a, Axes axes, bool keepdims) {
      return use_mean ? mean(a, axes, keepdims) : sum(a, axes, keepdims);
    };
    std::string op = use_mean ? "mean" : "sum";
    add_reductions(cases, op, reduce, x);
    Unary whole = [=](const Array& a) { return reduce(a, Axes::all(), false); };
    cases.push_back(unary_case(op + " 0-d", whole, scalar(0.7)));
    // The reduced result broadcast against another operand, and an operand
    // broadcast before the reduction.
    Binary then_broadcast = [=](const Array& a, const Array& b) { return reduce(a, 1, false) * b; };
    cases.push_back(binary_case(op + " then broadcast", then_broadcast, x, row));
    Binary of_broadcast = [=](const Array& a, const Array& b) { return reduce(a * b, Axes({0, 1}), false); };
    cases.push_back(binary_case(op + " of broadcast product", of_broadcast, column, block));
  }
  check_all(cases);
}

TEST(ReduceDerivatives, SumCotangentIsBroadcast) {
  Array x = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  Array w = f64({10, 20}, {2});
  Array g = grad([&](const Array& a) { return sum(sum(a, 1) * w); })(x);
  EXPECT_EQ(g.shape(), (Shape{2, 3}));
  expect_values(g, {10, 10, 10, 20, 20, 20}, 0, "grad of sum along axis 1");
  Array m = grad([&](const Array& a) { return sum(mean(a, 0, true) * 3.0); })(x);
  expect_values(m, {1.5, 1.5, 1.5, 1.5, 1.5, 1.5}, 1e-15, "grad of mean along axis 0");
}

// ---- prod -------------------------------------------------------------------------

TEST(ReduceDerivatives, Prod) {
  RandomArrays random(12);
  Array x = moderate(random, {2, 3, 4});
  // One zero in one row and two zeros in another, along the last axis and
  // across axes {0, 2}.
  std::vector<double> data = values(x);
  data[1] = 0;             // row [0, 0, :] has one zero
  data[8] = data[10] = 0;  // row [0, 2, :] has two
  data[12 + 4 + 3] = 0;    // slice [:, 1, :] has one zero at [1, 1, 3]
  Array zeros_in = f64(data, {2, 3, 4});
  Reduce reduce = [](const Array& a, Axes axes, bool keepdims) { return prod(a, axes, keepdims); };
  std::vector<Case> cases;
  add_reductions(cases, "prod, no zeros,", reduce, x);
  add_reductions(cases, "prod, zeros,", reduce, zeros_in);
  Unary whole = [](const Array& a) { return prod(a); };
  // Lengths that are not powers of two, and length 1.
  cases.push_back(unary_case("prod length 5", whole, moderate(random, {5})));
  cases.push_back(unary_case("prod length 9", whole, moderate(random, {9})));
  Unary along_rows = [](const Array& a) { return prod(a, 1); };
  cases.push_back(unary_case("prod length 1", along_rows, moderate(random, {3, 1})));
  cases.push_back(unary_case("prod 0-d", whole, scalar(-1.25)));
  Binary of_broadcast = [](const Array& a, const Array& b) { return prod(a * b, 0); };
  cases.push_back(
      binary_case("prod of broadcast product", of_broadcast, moderate(random, {3}), moderate(random, {2, 1})));
  check_all(cases);
}

TEST(ReduceDerivatives, ProdIsExactWithZeros) {
  auto product_gradient = grad([](const Array& a) { return prod(a); });
  // One zero: the gradient there is the product of the others, zero elsewhere.
  expect_values(product_gradient(f64({2, 0, 3, 4}, {4})), {0, 24, 0, 0}, 0, "one zero");
  // Two zeros: every product of "the others" holds a zero.
  expect_values(product_gradient(f64({2, 0, 3, 0}, {4})), {0, 0, 0, 0}, 0, "two zeros");
  expect_values(product_gradient(f64({0, 0, 0}, {3})), {0, 0, 0}, 0, "all zeros");
  expect_values(product_gradient(f64({0, 7}, {2})), {7, 0}, 0, "zero first");
  Array rows = grad([](const Array& a) { return sum(prod(a, 1)); })(f64({1, 2, 0, 5, 0, 0}, {3, 2}));
  expect_values(rows, {2, 1, 5, 0, 0, 0}, 0, "per row");

  // Forward mode: the tangent of prod is sum_i t_i * (product of the others).
  Array x = f64({2, 0, 3, 4}, {4});
  auto [value, tangent] =
      jvp([](const Array& a) { return prod(a); }, std::tuple{x}, std::tuple{f64({1, 10, 100, 1000}, {4})});
  EXPECT_EQ(value.item<double>(), 0);
  EXPECT_EQ(tangent.item<double>(), 240);

  // Second derivatives: d2/dxi dxj prod = product of all but i and j, 0 on
  // the diagonal; with zeros, only the pairs covering every zero survive.
  auto hessian_row = [&](int64_t i) {
    return grad([&, i](const Array& a) { return sum(product_gradient(a) * basis(4, i)); });
  };
  expect_values(hessian_row(1)(x), {12, 0, 8, 6}, 0, "Hessian row at the zero");
  expect_values(hessian_row(0)(x), {0, 12, 0, 0}, 0, "Hessian row away from the zero");
  Array two_zeros = hessian_row(1)(f64({2, 0, 3, 0}, {4}));
  expect_values(two_zeros, {0, 0, 0, 6}, 0, "Hessian row with two zeros");
  // Finite differences of the gradient (prod is multilinear, so they are exact).
  EXPECT_TRUE(check_derivatives([&](const std::vector<Array>& in) { return product_gradient(in[0]); },
                                {f64({2, 0, 3, 4, -1.5}, {5})}));
  EXPECT_TRUE(check_derivatives([&](const std::vector<Array>& in) { return product_gradient(in[0]); },
                                {f64({0, 0.5, 3, 0, 1.25}, {5})}));
}

// ---- max and min ------------------------------------------------------------------

TEST(ReduceDerivatives, MaxMinDistinct) {
  Array x = distinct({2, 3, 4}, 5);
  Array column = distinct({3, 1}, 6), row = f64({0.0, 0.1, 0.2, 0.05}, {4});
  std::vector<Case> cases;
  for (bool use_max : {true, false}) {
    Reduce reduce = [use_max](const Array& a, Axes axes, bool keepdims) {
      return use_max ? max(a, axes, keepdims) : min(a, axes, keepdims);
    };
    std::string op = use_max ? "max" : "min";
    add_reductions(cases, op, reduce, x);
    Unary whole = [=](const Array& a) { return reduce(a, Axes::all(), false); };
    cases.push_back(unary_case(op + " 0-d", whole, scalar(0.3)));
    Binary of_broadcast = [=](const Array& a, const Array& b) { return reduce(a + b, 0, false); };
    cases.push_back(binary_case(op + " of broadcast sum", of_broadcast, column, row));
  }
  check_all(cases);
}

TEST(ReduceDerivatives, MaxMinTiesSplitEqually) {
  Array x = f64({1, 3, 3, 2, 2, 2}, {2, 3});
  Array g = grad([](const Array& a) { return sum(max(a, 1)); })(x);
  expect_values(g, {0, 0.5, 0.5, 1.0 / 3, 1.0 / 3, 1.0 / 3}, 1e-15, "max ties along axis 1");
  Array all = grad([](const Array& a) { return max(a); })(x);
  expect_values(all, {0, 0.5, 0.5, 0, 0, 0}, 1e-15, "max ties over all axes");
  Array low = grad([](const Array& a) { return sum(min(a, 0, true) * f64({1, 2, 4}, {3})); })(x);
  expect_values(low, {1, 0, 0, 0, 2, 4}, 1e-15, "min along axis 0, one per column");
  Array low_all = grad([](const Array& a) { return min(a); })(f64({1, 3, 1, 1, 2, 9}, {2, 3}));
  expect_values(low_all, {1.0 / 3, 0, 1.0 / 3, 1.0 / 3, 0, 0}, 1e-15, "min ties over all axes");
  Array axes = grad([](const Array& a) { return sum(max(a, {0, 2})); })(f64({5, 1, 3, 1, 5, 0, 3, 3}, {2, 2, 2}));
  expect_values(axes, {0.5, 0, 1.0 / 3, 0, 0.5, 0, 1.0 / 3, 1.0 / 3}, 1e-15, "max ties over axes {0,2}");

  // Forward mode averages the tangents of the tied positions.
  auto [value, tangent] =
      jvp([](const Array& a) { return max(a, 1); }, std::tuple{x}, std::tuple{f64({100, 1, 3, 6, 9, 12}, {2, 3})});
  expect_values(value, {3, 2}, 0, "max value");
  expect_values(tangent, {2, 9}, 1e-14, "max tangent with ties");
  EXPECT_TRUE(check_derivatives([](const std::vector<Array>& in) { return max(in[0], 1); }, {distinct({3, 4}, 9)}));
}

// ---- argmax, argmin ---------------------------------------------------------------

TEST(ReduceDerivatives, ArgmaxArgminHaveNoDerivative) {
  for (ir::Primitive op : {ir::Primitive::argmax, ir::Primitive::argmin}) {
    const ops::PrimitiveRules& rules = ops::rules(op);
    EXPECT_NE(rules.no_derivative, nullptr) << ir::primitive_name(op);
    EXPECT_EQ(rules.vjp, nullptr) << ir::primitive_name(op);
  }
  // An index used as a plain number is a constant of differentiation.
  Array x = f64({0.5, -1, 4, 2}, {4});
  auto f = [](const Array& a) { return sum(a) * astype(argmax(a), DType::f64) + astype(argmin(a), DType::f64); };
  expect_values(grad(f)(x), {2, 2, 2, 2}, 0, "argmax index as a factor");
}

// ---- cumsum -----------------------------------------------------------------------

TEST(ReduceDerivatives, CumsumBothDirections) {
  RandomArrays random(13);
  Array x = uniform(random, {2, 3, 4});
  std::vector<Case> cases;
  for (bool reverse : {false, true})
    for (int64_t axis : {0, 1, 2}) {
      std::string name = std::string(reverse ? "reverse" : "forward") + " cumsum axis " + std::to_string(axis);
      Unary fn = [=](const Array& a) { return cumsum_primitive(a, axis, reverse); };
      cases.push_back(unary_case(name, fn, x));
    }
  const std::vector<std::pair<std::string, Unary>> public_cumsum = {
      {"cumsum axis -1", [](const Array& a) { return cumsum(a, -1); }},
      {"cumsum flattened", [](const Array& a) { return cumsum(a); }},
  };
  for (const auto& [name, fn] : public_cumsum) cases.push_back(unary_case(name, fn, x));
  cases.push_back(unary_case("cumsum 0-d", public_cumsum[1].second, scalar(1.5)));
  cases.push_back(unary_case("cumsum 1-d", public_cumsum[0].second, uniform(random, {6})));
  Binary of_broadcast = [](const Array& a, const Array& b) { return cumsum(a * b, 1); };
  cases.push_back(
      binary_case("cumsum of broadcast product", of_broadcast, uniform(random, {3, 1}), uniform(random, {4})));
  check_all(cases);

  // The cotangent of a running sum is the running sum of the cotangent the other way.
  Array w = f64({1, 2, 3, 4}, {4});
  Array forward = grad([&](const Array& a) { return sum(cumsum(a) * w); })(f64({0, 0, 0, 0}, {4}));
  expect_values(forward, {10, 9, 7, 4}, 0, "forward cumsum");
  Array backward = grad([&](const Array& a) { return sum(cumsum_primitive(a, 0, true) * w); })(f64({0, 0, 0, 0}, {4}));
  expect_values(backward, {1, 3, 6, 10}, 0, "reverse cumsum");
}

// ---- logsumexp, softmax, log_softmax ----------------------------------------------

TEST(ReduceDerivatives, SoftmaxFamilyFiniteDifferences) {
  RandomArrays random(14);
  Array x = uniform(random, {2, 3, 4});
  // Values near 1000: exp overflows without the shift by the max.
  Array large = x + 1000.0;
  Array very_negative = x - 1000.0;
  const std::vector<std::pair<std::string, Unary>> functions = {
      {"logsumexp all", [](const Array& a) { return logsumexp(a); }},
      {"logsumexp axis 1", [](const Array& a) { return logsumexp(a, 1); }},
      {"logsumexp axes {0,2} keepdims",
       [](const Array& a) {
         return logsumexp(a, {0, 2}, true);
       }},
      {"softmax axis -1", [](const Array& a) { return softmax(a, -1); }},
      {"softmax axis 0", [](const Array& a) { return softmax(a, 0); }},
      {"log_softmax axis -1", [](const Array& a) { return log_softmax(a, -1); }},
      {"log_softmax axis 1", [](const Array& a) { return log_softmax(a, 1); }},
  };
  std::vector<Case> cases;
  for (const auto& [label, input] :
       {std::pair<std::string, Array>{"moderate", x}, {"large", large}, {"very negative", very_negative}})
    for (const auto& [name, fn] : functions) cases.push_back(unary_case(name + ", " + label, fn, input));
  cases.push_back(unary_case("logsumexp 0-d", functions[0].second, scalar(0.4)));
  cases.push_back(unary_case("softmax 1-d", functions[3].second, uniform(random, {5})));
  check_all(cases);
}

TEST(ReduceDerivatives, SoftmaxFamilyMatchesClosedForms) {
  RandomArrays random(15);
  NumpyOracle oracle;
  struct Check {
    std::string name;
    Array actual;
    int id;
    double rtol, atol;
  };
  std::vector<Check> checks;
  const std::string shift = "(a - a.max(axis=1, keepdims=True))";
  const std::string probabilities = "(np.exp(" + shift + ") / np.exp(" + shift + ").sum(axis=1, keepdims=True))";
  for (DType dtype : {DType::f64, DType::f32}) {
    std::string cast = ".astype(" + testing::numpy_dtype(dtype) + ")";
    double rtol = dtype == DType::f64 ? 1e-12 : 2e-5, atol = dtype == DType::f64 ? 1e-14 : 1e-6;
    for (double offset : {0.0, 90.0, 1000.0, -1000.0}) {
      // In f32, exp(90) is already beyond the largest float.
      Array x = astype(uniform(random, {3, 5}, -3, 3) + offset, dtype);
      Array c = astype(uniform(random, {3, 5}), dtype);
      Array c_row = astype(uniform(random, {3}), dtype);
      std::string p = "(lambda a: " + probabilities + ")(a.astype(np.float64))";
      std::string label = std::string(dtype_name(dtype)) + " offset " + std::to_string(offset);
      auto pullback_of = [&](const auto& fn, const Array& cotangent) {
        auto [value, pull] = vjp(fn, x);
        return std::get<0>(pull(cotangent));
      };
      checks.push_back({"logsumexp " + label, pullback_of([](const Array& a) { return logsumexp(a, 1); }, c_row),
                        oracle.add("(b.astype(np.float64)[:, None] * " + p + ")" + cast, {x, c_row}), rtol, atol});
      checks.push_back({"softmax " + label, pullback_of([](const Array& a) { return softmax(a, 1); }, c),
                        oracle.add("(lambda s, c: s * (c - (c * s).sum(axis=1, keepdims=True)))(" + p +
                                       ", b.astype(np.float64))" + cast,
                                   {x, c}),
                        rtol, atol});
      checks.push_back(
          {"log_softmax " + label, pullback_of([](const Array& a) { return log_softmax(a, 1); }, c),
           oracle.add("(lambda s, c: c - s * c.sum(axis=1, keepdims=True))(" + p + ", b.astype(np.float64))" + cast,
                      {x, c}),
           rtol, atol});
    }
  }
  oracle.run();
  for (const Check& check : checks) {
    ASSERT_TRUE(oracle.result(check.id).has_value()) << check.name << ": " << oracle.error(check.id);
    EXPECT_TRUE(all_close(check.actual, oracle.expected(check.id), check.rtol, check.atol, check.name));
  }

  // A -inf entry has probability 0 and gets no gradient; the rest are finite.
  Array with_minus_inf = f64({0.5, -INFINITY, 1.5}, {3});
  Array g = grad([](const Array& a) { return logsumexp(a); })(with_minus_inf);
  double e = std::exp(1.0);
  expect_values(g, {1 / (1 + e), 0, e / (1 + e)}, 1e-15, "logsumexp with -inf");
}

// ---- matmul -----------------------------------------------------------------------

TEST(MatmulDerivatives, Shapes) {
  RandomArrays random(16);
  auto product = [](const Array& a, const Array& b) { return matmul(a, b); };
  std::vector<Case> cases;
  auto add_case = [&](const std::string& name, Shape a, Shape b) {
    cases.push_back(binary_case(name, product, uniform(random, std::move(a)), uniform(random, std::move(b))));
  };
  add_case("2-d", {3, 4}, {4, 2});
  add_case("2-d square", {3, 3}, {3, 3});
  add_case("batched", {2, 3, 4}, {2, 4, 5});
  add_case("broadcast batch dims", {2, 1, 3, 4}, {3, 4, 2});
  add_case("broadcast batch of a matrix", {3, 2}, {2, 2, 4});
  add_case("vector @ matrix", {4}, {4, 3});
  add_case("matrix @ vector", {3, 4}, {4});
  add_case("vector @ vector", {4}, {4});
  add_case("vector @ batched", {4}, {2, 4, 3});
  add_case("batched @ vector", {2, 3, 4}, {4});
  add_case("outer dims 1", {1, 4}, {4, 1});
  Binary sum_of_squares = [](const Array& a, const Array& b) { return sum(square(matmul(a, b)), 0); };
  cases.push_back(
      binary_case("matmul then sum of squares", sum_of_squares, uniform(random, {3, 4}), uniform(random, {4, 2})));
  Unary gram = [](const Array& a) { return matmul(transpose(a), a); };
  cases.push_back(unary_case("x^T x", gram, uniform(random, {3, 2})));
  check_all(cases);
}

TEST(MatmulDerivatives, HessianOfSumOfSquares) {
  // f(x) = sum((A x)^2): gradient 2 A^T A x, Hessian 2 A^T A.
  RandomArrays random(17);
  const int64_t rows = 3, columns = 4;
  Array a = uniform(random, {rows, columns});
  Array x = uniform(random, {columns});
  Array v = uniform(random, {columns});
  std::vector<double> matrix = values(a), point = values(x), direction = values(v);
  auto hessian = [&](size_t i, size_t j) {
    double total = 0;
    for (size_t r = 0; r < static_cast<size_t>(rows); ++r)
      total += 2 * matrix[r * columns + i] * matrix[r * columns + j];
    return total;
  };
  auto f = [a](const Array& y) { return sum(square(matmul(a, y))); };
  auto gradient = grad(f);

  std::vector<double> expected_gradient(columns, 0), expected_hv(columns, 0);
  for (size_t i = 0; i < static_cast<size_t>(columns); ++i)
    for (size_t j = 0; j < static_cast<size_t>(columns); ++j) {
      expected_gradient[i] += hessian(i, j) * point[j];
      expected_hv[i] += hessian(i, j) * direction[j];
    }
  expect_values(gradient(x), expected_gradient, 1e-12, "gradient");

  // Reverse over reverse: grad of <grad f(x), v>.
  Array hv = grad([&](const Array& y) { return sum(gradient(y) * v); })(x);
  expect_values(hv, expected_hv, 1e-12, "Hessian-vector, grad of grad");
  // Forward over reverse.
  auto [g, forward_hv] = jvp([&](const Array& y) { return gradient(y); }, std::tuple{x}, std::tuple{v});
  expect_values(g, expected_gradient, 1e-12, "gradient from jvp");
  expect_values(forward_hv, expected_hv, 1e-12, "Hessian-vector, jvp of grad");
  // The whole Hessian, one row per basis vector.
  for (size_t i = 0; i < static_cast<size_t>(columns); ++i) {
    Array e = basis(columns, static_cast<int64_t>(i));
    Array row = grad([&](const Array& y) { return sum(gradient(y) * e); })(x);
    std::vector<double> expected(columns);
    for (size_t j = 0; j < static_cast<size_t>(columns); ++j) expected[j] = hessian(i, j);
    expect_values(row, expected, 1e-12, "Hessian row " + std::to_string(i));
  }
  // Finite differences of the gradient, with a matrix argument too.
  EXPECT_TRUE(check_derivatives(
      [](const std::vector<Array>& in) {
        return grad([&](const Array& y) { return sum(square(matmul(in[0], y))); })(in[1]);
      },
      {a, x}));
}

// ---- zero-size, 0-d, f32 and jit --------------------------------------------------

TEST(ReduceDerivatives, ZeroSizeAndZeroD) {
  auto [total, g_sum] = value_and_grad([](const Array& a) { return sum(a); })(zeros({0, 3}, DType::f64));
  EXPECT_EQ(total.item<double>(), 0);
  EXPECT_EQ(g_sum.shape(), (Shape{0, 3}));
  Array g_prod = grad([](const Array& a) { return sum(prod(a, 1)); })(zeros({2, 0}, DType::f64));
  EXPECT_EQ(g_prod.shape(), (Shape{2, 0}));
  Array g_max = grad([](const Array& a) { return sum(max(a, 1)); })(zeros({0, 3}, DType::f64));
  EXPECT_EQ(g_max.shape(), (Shape{0, 3}));
  Array g_cumsum = grad([](const Array& a) { return sum(cumsum(a, 0)); })(zeros({0, 2}, DType::f64));
  EXPECT_EQ(g_cumsum.shape(), (Shape{0, 2}));
  auto [product, g_matmul] = value_and_grad([](const Array& a, const Array& b) { return sum(matmul(a, b)); }, {0, 1})(
      zeros({2, 0}, DType::f64), ones({0, 3}, DType::f64));
  EXPECT_EQ(product.item<double>(), 0);
  EXPECT_EQ(std::get<0>(g_matmul).shape(), (Shape{2, 0}));
  EXPECT_EQ(std::get<1>(g_matmul).shape(), (Shape{0, 3}));

  for (const auto& [name, fn] :
       std::vector<std::pair<std::string, Unary>>{{"sum", [](const Array& a) { return sum(a); }},
                                                  {"prod", [](const Array& a) { return prod(a); }},
                                                  {"max", [](const Array& a) { return max(a); }},
                                                  {"min", [](const Array& a) { return min(a); }},
                                                  {"mean", [](const Array& a) { return mean(a); }},
                                                  {"logsumexp", [](const Array& a) { return logsumexp(a); }},
                                                  {"cumsum", [](const Array& a) { return sum(cumsum(a)); }}}) {
    Array g = grad(fn)(scalar(2.5));
    EXPECT_EQ(g.shape(), Shape{}) << name;
    EXPECT_EQ(g.dtype(), DType::f64) << name;
    EXPECT_EQ(g.item<double>(), 1.0) << name;
  }
}

// A loss touching every rule of this file.
Array mixed_loss(const Array& x, const Array& w) {
  Array logits = matmul(x, w);  // [4, 3]
  Array term = -mean(log_softmax(logits, -1)) + sum(softmax(logits, 0) * logits) * 0.1;
  term = term + logsumexp(logits) * 0.5 + mean(max(x, 1)) - sum(min(w, 0)) * 0.2;
  term = term + sum(cumsum(x, 1) * x) * 0.05 + sum(prod(w, 1) * astype(basis(5, 0), w.dtype())) +
         sum(sum(x, 0, true) * 0.3);
  return term;
}

TEST(ReduceDerivatives, ValueAndGradF32JitAndEager) {
  Array x = distinct({4, 5}, 21) * 0.5;
  Array w = distinct({5, 3}, 22) * 0.4;
  auto loss_and_gradients = value_and_grad(&mixed_loss, {0, 1});
  auto [value, gradients] = loss_and_gradients(x, w);
  auto [value32, gradients32] = loss_and_gradients(astype(x, DType::f32), astype(w, DType::f32));
  EXPECT_EQ(value32.dtype(), DType::f32);
  EXPECT_EQ(std::get<0>(gradients32).dtype(), DType::f32);
  EXPECT_TRUE(all_close(value32, astype(value, DType::f32), 1e-5, 1e-5, "f32 value"));
  EXPECT_TRUE(all_close(std::get<0>(gradients32), astype(std::get<0>(gradients), DType::f32), 1e-4, 1e-5, "f32 dx"));
  EXPECT_TRUE(all_close(std::get<1>(gradients32), astype(std::get<1>(gradients), DType::f32), 1e-4, 1e-5, "f32 dw"));

  // Under an enclosing jit, the same graph becomes part of one trace.
  auto jitted = jit([&](const Array& a, const Array& b) { return loss_and_gradients(a, b); });
  auto [jit_value, jit_gradients] = jitted(x, w);
  EXPECT_TRUE(all_close(jit_value, value, 1e-12, 1e-13, "jit value"));
  EXPECT_TRUE(all_close(std::get<0>(jit_gradients), std::get<0>(gradients), 1e-12, 1e-13, "jit dx"));
  EXPECT_TRUE(all_close(std::get<1>(jit_gradients), std::get<1>(gradients), 1e-12, 1e-13, "jit dw"));

  EXPECT_TRUE(check_derivatives([](const std::vector<Array>& in) { return mixed_loss(in[0], in[1]); }, {x, w}));
}

}  // namespace
}  // namespace kiln
