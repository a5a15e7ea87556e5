// sort, argsort (stable), top_k, partition/argpartition, median, quantile,
// diagonal, trace and diag against NumPy: every dtype, random shapes with
// zero-size dims, every axis, ties, NaN, infinities and signed zeros; the
// same under jit; derivatives against finite differences; errors.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <limits>

#include "support/errors.h"
#include "support/gradient_check.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::all_close;
using testing::all_dtypes;
using testing::NumpyOracle;
using testing::RandomArrays;

// Few distinct values (ties) and, for floats, NaN, infinities and both zeros.
Array sortable(RandomArrays& random, const Shape& shape, DType dtype) {
  Array x = astype(random.uniform(shape, DType::i32, -3, 4), dtype);
  if (!is_floating(dtype)) return x;
  std::vector<double> values = x.to_vector<double>();
  for (double& v : values) {
    int64_t pick = random.integer(0, 9);
    if (pick == 0) v = std::numeric_limits<double>::quiet_NaN();
    if (pick == 1) v = random.integer(0, 1) ? std::numeric_limits<double>::infinity() : -1e300;
    if (pick == 2) v = -0.0;
    if (pick == 3) v += 0.25;
  }
  return astype(array(values, shape), dtype);
}

// NumPy has no descending sort: the stable order of (NaN first, then -value).
std::string descending_order(const std::string& axis) {
  return "(np.zeros(a.shape, np.int32) if a.size == 0 else np.apply_along_axis(lambda r: "
         "np.array(sorted(range(len(r)), "
         "key=lambda i: (0, 0.0) if r[i] != r[i] else (1, -float(r[i]))), dtype=np.int32), " +
         axis + ", a))";
}

TEST(Sort, SortAndArgsortMatchNumpy) {
  RandomArrays random(41);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (DType dtype : all_dtypes) {
    for (int trial = 0; trial < 12; ++trial) {
      Shape shape = random.shape(1, 3, 6);
      Array x = sortable(random, shape, dtype);
      int64_t rank = x.ndim(), axis = random.integer(-rank, rank - 1);
      std::string python = std::to_string(axis),
                  context = std::string(dtype_name(dtype)) + shape_string(shape) + " axis " + python;
      cases.push_back({sort(x, axis), oracle.add("np.sort(a, axis=" + python + ")", {x}), "sort " + context, 0});
      cases.push_back({argsort(x, axis),
                       oracle.add("np.argsort(a, axis=" + python + ", kind='stable').astype(np.int32)", {x}),
                       "argsort " + context, 0});
      std::string order = descending_order(python);
      cases.push_back({argsort(x, axis, true), oracle.add(order, {x}), "argsort descending " + context, 0});
      cases.push_back({sort(x, axis, true), oracle.add("np.take_along_axis(a, " + order + ", " + python + ")", {x}),
                       "sort descending " + context, 0});
      auto traced = jit([axis](const Array& v) { return sort(v, axis, true); });
      cases.push_back({traced(x), oracle.add("np.take_along_axis(a, " + order + ", " + python + ")", {x}),
                       "sort descending under jit " + context, 0});
    }
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(Sort, TopKAndPartition) {
  RandomArrays random(42);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (DType dtype : {DType::f32, DType::f64, DType::i32, DType::i64}) {
    for (int trial = 0; trial < 10; ++trial) {
      Shape shape = random.shape(1, 3, 7, false);
      Array x = sortable(random, shape, dtype);
      int64_t k = random.integer(0, shape.back());
      std::string context = std::string(dtype_name(dtype)) + shape_string(shape) + " k=" + std::to_string(k);
      auto [values, indices] = top_k(x, k);
      std::string first_k = descending_order("-1") + "[..., :" + std::to_string(k) + "]";
      cases.push_back({indices, oracle.add(first_k, {x}), "top_k indices " + context, 0});
      cases.push_back({values, oracle.add("np.take_along_axis(a, " + first_k + ", -1)", {x}), "top_k " + context, 0});
      // Partition: the kth element in its sorted place, nothing larger before
      // it, nothing smaller after it (NaN counts as largest), a permutation.
      int64_t kth = random.integer(-shape.back(), shape.back() - 1);
      int64_t place = kth < 0 ? kth + shape.back() : kth;
      Array parted = partition(x, kth);
      Shape start(shape.size(), 0), stop = shape;
      start.back() = place;
      stop.back() = place + 1;
      cases.push_back(
          {slice(parted, start, stop),
           oracle.add("np.sort(a, axis=-1)[..., " + std::to_string(place) + ":" + std::to_string(place + 1) + "]", {x}),
           "partition's kth " + context, 0});
      cases.push_back(
          {sort(parted), oracle.add("np.sort(a, axis=-1)", {x}), "partition is a permutation " + context, 0});
      if (is_floating(dtype)) continue;  // integers: check the order around kth exactly
      Array pivot = slice(parted, start, stop);
      Shape before_stop = shape;
      before_stop.back() = place;
      EXPECT_TRUE(
          all(less_equal(slice(parted, std::vector<int64_t>(shape.size(), 0), before_stop), pivot)).item<bool>())
          << context;
      start.back() = place;
      EXPECT_TRUE(all(greater_equal(slice(parted, start, shape), pivot)).item<bool>()) << context;
      EXPECT_TRUE(all_close(take_along_axis(x, argpartition(x, kth), -1), parted, 0, 0, "argpartition " + context));
    }
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(Sort, MedianAndQuantileMatchNumpy) {
  RandomArrays random(43);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (DType dtype : all_dtypes) {
    for (int trial = 0; trial < 10; ++trial) {
      Shape shape = random.shape(0, 3, 5, false);
      Array x = dtype == DType::bool_ || !is_floating(dtype) ? sortable(random, shape, dtype)
                                                             : random.uniform(shape, dtype, -5, 5);
      if (is_floating(dtype) && random.integer(0, 3) == 0) x = sortable(random, shape, dtype);  // NaN lines too
      int64_t rank = x.ndim();
      Axes axes = Axes::all();
      std::string python = "None";
      if (rank > 0 && random.integer(0, 1)) {
        int64_t axis = random.integer(-rank, rank - 1);
        axes = Axes(axis);
        python = std::to_string(axis);
      }
      bool keepdims = random.integer(0, 1);
      double q = static_cast<double>(random.integer(0, 8)) / 8;
      DType result = is_floating(dtype) ? dtype : DType::f32;
      std::string cast = "a.astype(" + testing::numpy_dtype(result) + ")";
      std::string tail = ", axis=" + python + ", keepdims=" + (keepdims ? "True" : "False") + ")";
      std::string context = std::string(dtype_name(dtype)) + shape_string(shape) + " axis " + python;
      double rtol = result == DType::f32 ? 1e-6 : 1e-14;
      cases.push_back(
          {median(x, axes, keepdims), oracle.add("np.median(" + cast + tail, {x}), "median " + context, rtol});
      cases.push_back({quantile(x, q, axes, keepdims),
                       oracle.add("np.asarray(np.quantile(" + cast + ", " + std::to_string(q) + tail + ").astype(" +
                                      testing::numpy_dtype(result) + ")",
                                  {x}),
                       "quantile " + std::to_string(q) + " " + context, rtol});
    }
  }
  Array x = random.uniform({4, 5}, DType::f64);
  cases.push_back({quantile(x, {0.1, 0.5, 0.9}, Axes(1)), oracle.add("np.quantile(a, [0.1, 0.5, 0.9], axis=1)", {x}),
                   "quantile of three q", 1e-14});
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(Sort, DiagonalTraceAndDiagMatchNumpy) {
  RandomArrays random(44);
  NumpyOracle oracle;
  std::vector<testing::OracleCase> cases;
  for (DType dtype : all_dtypes) {
    for (int trial = 0; trial < 8; ++trial) {
      Shape shape = random.shape(2, 4, 4);
      Array x = random.uniform(shape, dtype);
      int64_t rank = x.ndim(), offset = random.integer(-3, 3);
      int64_t axis1 = random.integer(-rank, rank - 1), axis2 = random.integer(-rank, rank - 1);
      if ((axis1 + rank) % rank == (axis2 + rank) % rank) axis2 = (axis1 + rank + 1) % rank;
      std::string args = std::to_string(offset) + ", " + std::to_string(axis1) + ", " + std::to_string(axis2);
      std::string context = std::string(dtype_name(dtype)) + shape_string(shape) + " (" + args + ")";
      cases.push_back({diagonal(x, offset, axis1, axis2), oracle.add("np.diagonal(a, " + args + ")", {x}),
                       "diagonal " + context, 0});
      if (dtype != DType::bool_)
        cases.push_back({trace(x, offset, axis1, axis2),
                         oracle.add("np.asarray(np.trace(a, " + args + ")).astype(a.dtype)", {x}), "trace " + context,
                         testing::default_rtol(dtype)});
    }
    Array v = random.uniform({random.integer(0, 4)}, dtype);
    int64_t k = random.integer(-2, 2);
    cases.push_back({diag(v, k), oracle.add("np.diag(a, " + std::to_string(k) + ")", {v}), "diag of a vector", 0});
    Array m = random.uniform({3, 4}, dtype);
    cases.push_back({diag(m, k), oracle.add("np.diag(a, " + std::to_string(k) + ")", {m}), "diag of a matrix", 0});
  }
  oracle.run();
  testing::expect_cases_match(oracle, cases);
}

TEST(Sort, TracedEqualsEagerAndDerivatives) {
  RandomArrays random(45);
  // Distinct values: sorting is differentiable away from ties.
  Array x = random.uniform({3, 6}, DType::f64);
  auto fn = [](const Array& v) {
    Array weights = reshape(arange(1, 19, 1, DType::f64), {3, 6});
    Array ranked = sort(v, 0) * weights + sort(v, -1, true) * weights + partition(v, 2) * weights;
    auto [values, indices] = top_k(v, 2);
    return sum(ranked) + sum(values * values) + sum(median(v, 1) * 3.0) + sum(quantile(v, 0.3, 0)) + trace(v) +
           sum(diag(diagonal(v, 1)) * 2.0);
  };
  testing::eager_and_traced("sorting composites", fn, x);
  EXPECT_TRUE(testing::check_derivatives([&](const std::vector<Array>& in) { return fn(in[0]); }, {x}));
}

TEST(Sort, ErrorsNameTheOperationAndTheFix) {
  const int scalar_line = __LINE__ + 1;
  auto scalar = [] { sort(ones({})); };
  testing::expect_error(scalar_line, scalar, {"[sort]", "at least one dimension", "f32[]"});
  const int k_line = __LINE__ + 1;
  auto too_many = [] { top_k(ones({2, 3}), 4); };
  testing::expect_error(k_line, too_many, {"[top_k]", "k=4", "[0, 3]", "f32[2,3]"});
  const int kth_line = __LINE__ + 1;
  auto far = [] { partition(ones({5}), 5); };
  testing::expect_error(kth_line, far, {"[argpartition]", "kth=5", "f32[5]"});
  const int q_line = __LINE__ + 1;
  auto percent = [] { quantile(ones({5}), 50.0); };
  testing::expect_error(q_line, percent, {"[quantile]", "outside [0, 1]", "percentiles"});
  const int same_line = __LINE__ + 1;
  auto same_axes = [] { diagonal(ones({2, 2}), 0, 1, -1); };
  testing::expect_error(same_line, same_axes, {"[diagonal]", "both 1", "f32[2,2]"});
  const int diag_line = __LINE__ + 1;
  auto cube = [] { diag(ones({2, 2, 2})); };
  testing::expect_error(diag_line, cube, {"[diag]", "f32[2,2,2]", "diagonal"});
}

}  // namespace
}  // namespace kiln
