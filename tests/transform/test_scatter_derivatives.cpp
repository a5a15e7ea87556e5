// Derivatives of gather, every scatter mode, multi-array indexing and x.at
// against central finite differences (repeated, negative and out-of-range
// indices included) and against PyTorch's gradients: scatter_reduce's amax
// and amin (ties shared evenly with x), advanced indexing, index_put_.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include "support/gradient_check.h"
#include "support/numpy_oracle.h"
#include "support/primitive.h"

namespace kiln {
namespace {

using testing::check_derivatives;
using testing::RandomArrays;

Array weights_like(const Array& x) {
  return reshape(arange(1, static_cast<double>(x.size()) + 1, 1, DType::f64), x.shape()) * 0.25;
}

TEST(ScatterDerivatives, GatherMatchesFiniteDifferences) {
  RandomArrays random(41);
  Array indices = array<int32_t>({0, 1, 2, 1, -1, 0, 5, -7, 2, 2}, {5, 2});  // repeats, negative, clamped
  testing::ArrayFunction fn = [=](const std::vector<Array>& in) {
    Array read = gather(in[0], indices);
    return sum(read * weights_like(read) * read);
  };
  EXPECT_TRUE(check_derivatives(fn, {random.uniform({3, 3, 2}, DType::f64)}));
}

TEST(ScatterDerivatives, EveryModeMatchesFiniteDifferencesInXAndUpdates) {
  RandomArrays random(42);
  // Repeated positions, one negative, one dropped (row 4 is past the axis).
  Array indices = array<int64_t>({1, 0, -2, 3, 4, 2, 1, 0, 0, 0}, {5, 2});
  for (int64_t mode = 0; mode < 5; ++mode) {
    testing::ArrayFunction fn = [=](const std::vector<Array>& in) {
      Array out = testing::primitive(ir::Primitive::scatter, {in[0], indices, in[1]}, {mode});
      return sum(out * weights_like(out) * out);
    };
    Array x = random.uniform({4, 3}, DType::f64, -2, 2);
    Array updates = random.uniform({5}, DType::f64, -2, 2);
    if (mode == 2) updates = updates * array({1.0, 0.0, 1.0, 0.0, 1.0});  // zeros among repeated factors
    EXPECT_TRUE(check_derivatives(fn, {x, updates})) << "mode " << mode;
  }
}

TEST(ScatterDerivatives, AssignSendsTheUpdateCotangentToTheWinnerOnly) {
  Array x = zeros({3}, DType::f64);
  Array indices = array<int32_t>({1, 1, 2, 7});
  auto loss = [&](const Array& updates) { return sum(scatter(x, indices, updates) * array({1.0, 2.0, 3.0})); };
  Array du = grad(loss)(array({5.0, 6.0, 7.0, 8.0}));
  EXPECT_EQ(du.to_vector<double>(), (std::vector<double>{0, 2, 3, 0}));
  auto by_x = [&](const Array& v) { return sum(scatter(v, indices, array({5.0, 6.0, 7.0, 8.0})) * 2.0); };
  EXPECT_EQ(grad(by_x)(x).to_vector<double>(), (std::vector<double>{2, 0, 0}));
}

TEST(ScatterDerivatives, MatchTorch) {
  testing::NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  const std::string torch = "__import__('torch')";
  auto tensor = [&](const std::string& name) { return torch + ".from_numpy(" + name + ")"; };
  auto grads_of = [&](const std::string& output) {
    return "(x := " + tensor("a") + ".requires_grad_(), s := " + tensor("c") + ".requires_grad_(), y := " + output +
           ", g := " + torch + ".autograd.grad((y * " + tensor("d") +
           ").sum(), [x, s]), np.concatenate([g[0].numpy().ravel(), g[1].numpy().ravel()]))[-1]";
  };
  // Ties between x and the updates, and among the updates.
  Array x = array({1.0, 5.0, 2.0, 4.0});
  Array indices = array<int64_t>({1, 1, 0, 2, 3, 3});
  Array updates = array({5.0, 5.0, 3.0, 1.0, 6.0, 6.0});
  Array weights = array({1.0, 2.0, 3.0, 4.0});
  auto both = [&](auto scatter_fn) {
    Array dx = grad([&](const Array& v) { return sum(scatter_fn(v, indices, updates, 0) * weights); })(x);
    Array du = grad([&](const Array& u) { return sum(scatter_fn(x, indices, u, 0) * weights); })(updates);
    return concatenate({dx, du});
  };
  for (const std::string reduce : {"amax", "amin"}) {
    Array actual = reduce == "amax" ? both([](auto&&... a) { return scatter_max(a...); })
                                    : both([](auto&&... a) { return scatter_min(a...); });
    std::string output = "x.scatter_reduce(0, " + tensor("b") + ", s, '" + reduce + "', include_self=True)";
    cases.push_back({actual, oracle.add(grads_of(output), {x, indices, updates, weights}), reduce, 1e-12});
  }
  // Advanced indexing with two arrays: repeated reads accumulate.
  RandomArrays random(43);
  Array table = random.uniform({4, 3, 2}, DType::f64);
  Array rows = array<int64_t>({0, 3, 3, -1}, {2, 2}), columns = array<int64_t>({2, 0});
  Array read_weights = random.uniform({2, 2, 2}, DType::f64);
  Array d_table = grad([&](const Array& t) { return sum(index(t, {rows, columns}) * read_weights); })(table);
  std::string read = "(x := " + tensor("a") + ".requires_grad_(), " + torch + ".autograd.grad((x[" + tensor("b") +
                     ", " + tensor("c") + "] * " + tensor("d") + ").sum(), [x])[0].numpy())[-1]";
  cases.push_back({d_table, oracle.add(read, {table, rows, columns, read_weights}), "x[rows, columns]", 1e-12});
  // index_put_ without accumulation, distinct positions.
  Array values = random.uniform({2, 2}, DType::f64);
  Array put_rows = array<int64_t>({0, 2}), put_columns = array<int64_t>({1, 1});
  auto put = [&](const Array& t, const Array& v) { return t.at({put_rows, put_columns}).set(v); };
  Array put_weights = random.uniform({4, 3, 2}, DType::f64);
  Array d_put =
      concatenate({reshape(grad([&](const Array& t) { return sum(put(t, values) * put_weights); })(table), {-1}),
                   reshape(grad([&](const Array& v) { return sum(put(table, v) * put_weights); })(values), {-1})});
  std::string output = "x.clone().index_put_((" + tensor("b") + ", " + tensor("e") + "), s)";
  std::string put_grads = "(x := " + tensor("a") + ".requires_grad_(), s := " + tensor("c") +
                          ".requires_grad_(), y := " + output + ", g := " + torch + ".autograd.grad((y * " +
                          tensor("d") +
                          ").sum(), [x, s]), np.concatenate([g[0].numpy().ravel(), g[1].numpy().ravel()]))[-1]";
  cases.push_back(
      {d_put, oracle.add(put_grads, {table, put_rows, values, put_weights, put_columns}), "index_put_", 1e-12});
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(ScatterDerivatives, AtUpdatesAndPutAlongAxisMatchFiniteDifferences) {
  RandomArrays random(44);
  Array rows = array<int32_t>({2, 0, 2, 9});  // a repeat and a dropped entry
  Array positions = array<int64_t>({1, -1, 0, 0, 5, 1}, {3, 2});
  testing::ArrayFunction fn = [=](const std::vector<Array>& in) {
    Array a = in[0].at({rows, Slice{1, std::nullopt, 1}}).add(in[1]);
    Array b = a.at({Slice{}, -1}).mul(2.5).at({rows}).max(in[2]);
    Array c = put_along_axis(b, positions, index(in[1], {0, 0}) * 3.0, 1);
    return sum(c * weights_like(c) * c);
  };
  EXPECT_TRUE(check_derivatives(fn, {random.uniform({3, 3}, DType::f64), random.uniform({4, 2}, DType::f64),
                                     random.uniform({4, 3}, DType::f64, 5, 6)}));
}

TEST(ScatterDerivatives, UnderJitMatchEager) {
  RandomArrays random(45);
  Array x = random.uniform({5, 3}, DType::f64), updates = random.uniform({4, 3}, DType::f64);
  Array indices = array<int32_t>({3, -1, 3, 0});
  auto loss = [=](const Array& v, const Array& u) {
    return sum(scatter_mul(v, indices, u) + scatter_min(v, indices, u) + sum(gather(v, reshape(indices, {4, 1}))));
  };
  Array eager = grad(loss)(x, updates);
  Array compiled = jit(grad(loss))(x, updates);
  EXPECT_TRUE(testing::all_close(compiled, eager, 1e-12, 1e-12, "grad under jit"));
}

}  // namespace
}  // namespace kiln
