// Reductions against NumPy: sum, prod, max, min, mean, argmax, argmin,
// cumsum, logsumexp, softmax, log_softmax over every dtype, random shapes
// (0-d, zero-size dims), axis lists (negative, unordered, empty, all) and
// keepdims; the same ops inside a trace; and the errors users meet.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "backend/interp/interpreter.h"
#include "ir/graph.h"
#include "ops/common/apply.h"
#include "support/errors.h"
#include "support/numpy_oracle.h"
#include "transform/verify.h"

namespace kiln {
namespace {

using testing::all_close;
using testing::all_dtypes;
using testing::native_rtol;
using testing::numpy_dtype;
using testing::NumpyOracle;
using testing::RandomArrays;

using testing::expect_error;

/// A random axes argument and its Python spelling.
struct AxesCase {
  Axes axes;
  std::string python;
  std::vector<int64_t> normalized;  // sorted, non-negative
};

AxesCase random_axes(RandomArrays& random, int64_t rank) {
  AxesCase result;
  int64_t mode = random.integer(0, 5);
  if (mode == 0 || rank == 0) {
    if (random.integer(0, 1) == 0 || rank > 0) {
      for (int64_t a = 0; a < rank; ++a) result.normalized.push_back(a);
      return {Axes::all(), "None", result.normalized};
    }
    return {Axes(std::vector<int64_t>{}), "()", {}};
  }
  if (mode == 1) {
    int64_t axis = random.integer(-rank, rank - 1);
    return {Axes(axis), std::to_string(axis), {axis < 0 ? axis + rank : axis}};
  }
  std::vector<int64_t> list;
  for (int64_t a = 0; a < rank; ++a)
    if (random.integer(0, 1)) list.push_back(random.integer(0, 1) ? a : a - rank);
  std::shuffle(list.begin(), list.end(), random.engine());
  std::string python = "(";
  for (int64_t axis : list) {
    python += std::to_string(axis) + ",";
    result.normalized.push_back(axis < 0 ? axis + rank : axis);
  }
  std::sort(result.normalized.begin(), result.normalized.end());
  return {Axes(list), python + ")", result.normalized};
}

/// Floats get some NaNs and infinities now and then.
Array with_specials(RandomArrays& random, const Array& x) {
  if (!is_floating(x.dtype()) || random.integer(0, 2) != 0) return x;
  std::vector<double> values = x.to_vector<double>();
  for (double& v : values) {
    int64_t pick = random.integer(0, 19);
    if (pick == 0) v = std::numeric_limits<double>::quiet_NaN();
    if (pick == 1) v = std::numeric_limits<double>::infinity();
    if (pick == 2) v = -std::numeric_limits<double>::infinity();
  }
  return astype(array(values, x.shape()), x.dtype());
}

std::string python_bool(bool value) { return value ? "True" : "False"; }

/// kiln's dtype for sum, prod and cumsum (JAX's rule).
DType accumulation_dtype(DType dtype) { return dtype == DType::bool_ ? DType::i32 : dtype; }
DType floating_dtype(DType dtype) { return is_floating(dtype) ? dtype : DType::f32; }

/// `a` as NumPy should compute for kiln's result dtype: f32 in f64 (kiln
/// accumulates f32 in double), integers in the result dtype.
std::string operand_as(DType result) {
  if (result == DType::f32) return "a.astype(np.float64)";
  return "a.astype(" + numpy_dtype(result) + ")";
}

struct Pending {
  int id;
  Array actual;
  DType dtype;
  std::string context;
  double atol;
};

void check_all(NumpyOracle& oracle, const std::vector<Pending>& cases) {
  oracle.run();
  for (const Pending& c : cases) {
    std::optional<Array> expected = oracle.result(c.id);
    ASSERT_TRUE(expected) << c.context << ": NumPy failed:\n" << oracle.error(c.id);
    EXPECT_EQ(c.actual.dtype(), c.dtype) << c.context;
    EXPECT_TRUE(all_close(c.actual, *expected, testing::default_rtol(c.dtype), c.atol, c.context));
  }
}

double float_atol(DType dtype) { return dtype == DType::f32 ? 1e-6 : dtype == DType::f64 ? 1e-12 : 0; }

TEST(ReduceOracle, SumProdMaxMinMean) {
  RandomArrays random(11);
  NumpyOracle oracle;
  std::vector<Pending> cases;
  std::vector<std::pair<int, std::string>> numpy_errors;
  for (DType dtype : all_dtypes) {
    for (int trial = 0; trial < 30; ++trial) {
      Shape shape = random.shape(0, 4, 4);
      Array x = with_specials(random, random.uniform(shape, dtype));
      // prod of many factors stays in range with factors near 1.
      Array factors = is_floating(dtype) ? random.uniform(shape, dtype, 0.5, 1.5) : x;
      AxesCase axes = random_axes(random, x.ndim());
      bool keepdims = random.integer(0, 1);
      std::string tail = ", axis=" + axes.python + ", keepdims=" + python_bool(keepdims) + ")";
      std::string context = std::string(dtype_name(dtype)) + shape_string(shape) + " axis=" + axes.python +
                            " keepdims=" + python_bool(keepdims);

      DType sum_dtype = accumulation_dtype(dtype);
      std::string cast = ".astype(" + numpy_dtype(sum_dtype) + ")";
      cases.push_back({oracle.add("np.sum(" + operand_as(sum_dtype) + tail + cast, {x}), sum(x, axes.axes, keepdims),
                       sum_dtype, "sum " + context, float_atol(dtype) * 10});
      cases.push_back({oracle.add("np.prod(" + operand_as(sum_dtype) + tail + cast, {factors}),
                       prod(factors, axes.axes, keepdims), sum_dtype, "prod " + context, float_atol(dtype)});
      DType mean_dtype = floating_dtype(dtype);
      // sum / count rather than np.mean, which warns about empty slices.
      int64_t count = 1;
      for (int64_t axis : axes.normalized) count *= shape[static_cast<size_t>(axis)];
      cases.push_back({oracle.add("(np.sum(a.astype(np.float64)" + tail + " / " + std::to_string(count) + ").astype(" +
                                      numpy_dtype(mean_dtype) + ")",
                                  {x}),
                       mean(x, axes.axes, keepdims), mean_dtype, "mean " + context, float_atol(mean_dtype)});

      bool empty_reduction = false;
      for (int64_t axis : axes.normalized) empty_reduction |= shape[static_cast<size_t>(axis)] == 0;
      for (auto [name, fn] : {std::pair{"max", &kiln::max}, std::pair{"min", &kiln::min}}) {
        int id = oracle.add("np." + std::string(name) + "(a" + tail, {x});
        if (empty_reduction) {
          EXPECT_THROW(fn(x, axes.axes, keepdims, Location::current()), Error) << name << " " << context;
          numpy_errors.push_back({id, std::string(name) + " " + context});
        } else {
          cases.push_back({id, fn(x, axes.axes, keepdims, Location::current()), dtype, name + (" " + context), 0});
        }
      }
    }
  }
  check_all(oracle, cases);
  for (auto& [id, context] : numpy_errors)
    EXPECT_NE(oracle.error(id).find("zero-size array"), std::string::npos) << context << ": NumPy did not refuse";
}

TEST(ReduceOracle, SumOfFloat32MatchesNumpyFloat32) {
  // Against NumPy's own f32 arithmetic (pairwise sums), within f32 error.
  RandomArrays random(12);
  NumpyOracle oracle;
  std::vector<Pending> cases;
  for (int trial = 0; trial < 20; ++trial) {
    Shape shape = random.shape(1, 3, 40, false);
    Array x = random.uniform(shape, DType::f32);
    int64_t axis = random.integer(-x.ndim(), x.ndim() - 1);
    std::string context = "f32" + shape_string(shape) + " axis " + std::to_string(axis);
    cases.push_back({oracle.add("np.sum(a, axis=" + std::to_string(axis) + ")", {x}), sum(x, axis), DType::f32,
                     "sum " + context, 1e-4});
    cases.push_back({oracle.add("np.mean(a, axis=" + std::to_string(axis) + ")", {x}), mean(x, axis), DType::f32,
                     "mean " + context, 1e-5});
  }
  check_all(oracle, cases);
}

TEST(ReduceOracle, IntegerSumsWrapLikeNumpy) {
  Array big = array<int32_t>({2147483647, 1, 2147483647});
  EXPECT_EQ(sum(big).item<int32_t>(), -1);  // 2^32 - 1 wrapped
  Array big64 = array<int64_t>({9223372036854775807LL, 2});
  EXPECT_EQ(sum(big64).item<int64_t>(), static_cast<int64_t>(-9223372036854775807LL));
  EXPECT_EQ(prod(array<int32_t>({65536, 65536, 3})).item<int32_t>(), 0);
  EXPECT_EQ(sum(array<bool>({true, true, false})).dtype(), DType::i32);
  EXPECT_EQ(sum(array<bool>({true, true, false})).item<int32_t>(), 2);
}

TEST(ReduceOracle, EmptyAxisListIsIdentityWithDtypeRules) {
  Array flags = array<bool>({true, false}, {2, 1});
  Array total = sum(flags, Axes(std::vector<int64_t>{}));
  EXPECT_EQ(total.dtype(), DType::i32);
  EXPECT_EQ(total.shape(), (Shape{2, 1}));
  EXPECT_EQ(total.to_vector<int32_t>(), (std::vector<int32_t>{1, 0}));
  Array average = mean(array<int32_t>({3, 4}), Axes(std::vector<int64_t>{}), true);
  EXPECT_EQ(average.dtype(), DType::f32);
  EXPECT_EQ(average.to_vector<float>(), (std::vector<float>{3, 4}));
  Array zero_d = scalar(2.5f);
  EXPECT_EQ(sum(zero_d).shape(), Shape{});
  EXPECT_EQ(max(zero_d, Axes::all(), true).item<float>(), 2.5f);
}

TEST(ReduceOracle, MeanOfNothingIsNan) {
  Array empty = zeros({0, 3});
  Array result = mean(empty, 0);
  EXPECT_EQ(result.shape(), (Shape{3}));
  for (float v : result.to_vector<float>()) EXPECT_TRUE(std::isnan(v));
  EXPECT_TRUE(std::isnan(mean(zeros({0}, DType::i32)).item<float>()));
}

TEST(ReduceOracle, ArgmaxArgmin) {
  RandomArrays random(13);
  NumpyOracle oracle;
  std::vector<Pending> cases;
  std::vector<std::pair<int, std::string>> numpy_errors;
  for (DType dtype : all_dtypes) {
    for (int trial = 0; trial < 40; ++trial) {
      Shape shape = random.shape(0, 4, 4);
      Array x = with_specials(random, random.uniform(shape, dtype));
      std::optional<int64_t> axis;
      // A 0-d array takes axis 0 or -1, as in NumPy.
      if (random.integer(0, 2) != 0)
        axis = x.ndim() == 0 ? -random.integer(0, 1) : random.integer(-x.ndim(), x.ndim() - 1);
      bool keepdims = random.integer(0, 1);
      std::string python_axis = axis ? std::to_string(*axis) : "None";
      std::string context = std::string(dtype_name(dtype)) + shape_string(shape) + " axis=" + python_axis +
                            " keepdims=" + python_bool(keepdims);
      bool empty = x.size() == 0 &&
                   !(axis && x.ndim() > 0 && shape[static_cast<size_t>(*axis < 0 ? *axis + x.ndim() : *axis)] != 0);
      for (auto [name, fn] : {std::pair{"argmax", &kiln::argmax}, std::pair{"argmin", &kiln::argmin}}) {
        int id = oracle.add("np." + std::string(name) + "(a, axis=" + python_axis +
                                ", keepdims=" + python_bool(keepdims) + ").astype(np.int32)",
                            {x});
        if (empty) {
          EXPECT_THROW(fn(x, axis, keepdims, Location::current()), Error) << name << " " << context;
          numpy_errors.push_back({id, name + (" " + context)});
        } else {
          cases.push_back({id, fn(x, axis, keepdims, Location::current()), DType::i32, name + (" " + context), 0});
        }
      }
    }
  }
  check_all(oracle, cases);
  for (auto& [id, context] : numpy_errors)
    EXPECT_NE(oracle.error(id).find("empty sequence"), std::string::npos) << context << ": NumPy did not refuse";
}

TEST(ReduceOracle, ArgmaxFirstOccurrenceAndNan) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(argmax(array({1.0f, 3.0f, 3.0f})).item<int32_t>(), 1);
  EXPECT_EQ(argmin(array({2.0f, 1.0f, 1.0f})).item<int32_t>(), 1);
  EXPECT_EQ(argmax(array({1.0f, nan, 5.0f, nan})).item<int32_t>(), 1);
  EXPECT_EQ(argmin(array({1.0f, -5.0f, nan})).item<int32_t>(), 2);
  EXPECT_EQ(argmax(array<bool>({false, true, true})).item<int32_t>(), 1);
  EXPECT_EQ(argmax(array({1.0f, 2.0f, 3.0f, 0.0f}, {2, 2}), std::nullopt, true).shape(), (Shape{1, 1}));
}

TEST(ReduceOracle, Cumsum) {
  RandomArrays random(14);
  NumpyOracle oracle;
  std::vector<Pending> cases;
  for (DType dtype : all_dtypes) {
    for (int trial = 0; trial < 30; ++trial) {
      Shape shape = random.shape(0, 4, 4);
      Array x = with_specials(random, random.uniform(shape, dtype));
      std::optional<int64_t> axis;
      if (random.integer(0, 2) != 0)
        axis = x.ndim() == 0 ? -random.integer(0, 1) : random.integer(-x.ndim(), x.ndim() - 1);
      std::string python_axis = axis ? std::to_string(*axis) : "None";
      DType result_dtype = accumulation_dtype(dtype);
      std::string context = "cumsum " + std::string(dtype_name(dtype)) + shape_string(shape) + " axis=" + python_axis;
      cases.push_back({oracle.add("np.cumsum(" + operand_as(result_dtype) + ", axis=" + python_axis + ").astype(" +
                                      numpy_dtype(result_dtype) + ")",
                                  {x}),
                       cumsum(x, axis), result_dtype, context, float_atol(dtype) * 10});
      // The reverse form of the primitive (for derivatives), on a non-0-d array.
      if (x.ndim() > 0 && dtype != DType::bool_) {
        int64_t reverse_axis = random.integer(0, x.ndim() - 1);
        ir::Attributes attrs;
        attrs.ints = {reverse_axis, 1};
        Array reversed = detail::apply(ir::Primitive::cumsum, {x}, attrs, Location::current());
        std::string a = std::to_string(reverse_axis);
        cases.push_back({oracle.add("np.flip(np.cumsum(np.flip(" + operand_as(dtype) + ", " + a + "), " + a + "), " +
                                        a + ").astype(" + numpy_dtype(dtype) + ")",
                                    {x}),
                         reversed, dtype, "reverse " + context + " primitive axis " + a, float_atol(dtype) * 10});
      }
    }
  }
  check_all(oracle, cases);
}

TEST(ReduceOracle, Logsumexp) {
  RandomArrays random(15);
  NumpyOracle oracle;
  std::vector<Pending> cases;
  for (DType dtype : all_dtypes) {
    for (int trial = 0; trial < 30; ++trial) {
      Shape shape = random.shape(0, 4, 4);
      Array x = with_specials(random, random.uniform(shape, dtype));
      AxesCase axes = random_axes(random, x.ndim());
      bool keepdims = random.integer(0, 1);
      DType result_dtype = floating_dtype(dtype);
      std::string context = "logsumexp " + std::string(dtype_name(dtype)) + shape_string(shape) +
                            " axis=" + axes.python + " keepdims=" + python_bool(keepdims);
      // Naive in f64 is exact enough for these magnitudes; an empty axis gives log(0) = -inf.
      cases.push_back({oracle.add("np.log(np.sum(np.exp(a.astype(np.float64)), axis=" + axes.python + ", keepdims=" +
                                      python_bool(keepdims) + ")).astype(" + numpy_dtype(result_dtype) + ")",
                                  {x}),
                       logsumexp(x, axes.axes, keepdims), result_dtype, context, float_atol(result_dtype) * 10});
    }
  }
  check_all(oracle, cases);
}

TEST(ReduceOracle, LogsumexpIsStableAndHandlesInfiniteRows) {
  float inf = std::numeric_limits<float>::infinity();
  Array x = array({1000.0f, 1000.5f, 999.0f,  //
                   -inf, -inf, -inf,          //
                   inf, 1.0f, 2.0f,           //
                   -1000.0f, -1001.0f, -inf},
                  {4, 3});
  NumpyOracle oracle;
  int id = oracle.add(
      "(lambda m: np.log(np.sum(np.exp(a - m), axis=1)) + m[:, 0])"
      "(np.where(np.isfinite(np.max(a, axis=1, keepdims=True)), np.max(a, axis=1, keepdims=True), 0))",
      {astype(x, DType::f64)});
  oracle.run();
  Array result = logsumexp(x, 1);
  EXPECT_TRUE(all_close(result, oracle.expected(id), 1e-6, 0, "stable logsumexp"));
  std::vector<float> values = result.to_vector<float>();
  EXPECT_TRUE(std::isfinite(values[0]));
  EXPECT_EQ(values[1], -inf);
  EXPECT_EQ(values[2], inf);
  EXPECT_EQ(logsumexp(zeros({2, 0}), 1).to_vector<float>(), (std::vector<float>{-inf, -inf}));
}

TEST(ReduceOracle, SoftmaxAndLogSoftmax) {
  RandomArrays random(16);
  NumpyOracle oracle;
  std::vector<Pending> cases;
  for (DType dtype : all_dtypes) {
    for (int trial = 0; trial < 30; ++trial) {
      Shape shape = random.shape(1, 4, 4);
      // Large magnitudes: a naive exp would overflow f32.
      double scale = random.integer(0, 1) ? 1 : 40;
      Array x = random.uniform(shape, dtype, -3 * scale, 3 * scale);
      int64_t axis = random.integer(-x.ndim(), x.ndim() - 1);
      DType result_dtype = floating_dtype(dtype);
      std::string a = std::to_string(axis);
      std::string shifted =
          "(a.astype(np.float64) - np.max(a.astype(np.float64), axis=" + a + ", keepdims=True, initial=-np.inf))";
      std::string context = std::string(dtype_name(dtype)) + shape_string(shape) + " axis=" + a;
      std::string cast = ".astype(" + numpy_dtype(result_dtype) + ")";
      cases.push_back(
          {oracle.add(
               "(lambda s: np.exp(s) / np.sum(np.exp(s), axis=" + a + ", keepdims=True))(" + shifted + ")" + cast, {x}),
           softmax(x, axis), result_dtype, "softmax " + context, float_atol(result_dtype)});
      cases.push_back(
          {oracle.add(
               "(lambda s: s - np.log(np.sum(np.exp(s), axis=" + a + ", keepdims=True)))(" + shifted + ")" + cast, {x}),
           log_softmax(x, axis), result_dtype, "log_softmax " + context, float_atol(result_dtype) * 100});
    }
  }
  check_all(oracle, cases);
}

// ---- Inside a trace ----------------------------------------------------------------

std::vector<Array> every_reduction(const Array& x) {
  return {sum(x, {0, -1}),
          sum(x, Axes::all(), true),
          prod(x, 1),
          max(x, {-1}, true),
          min(x),
          mean(x, {1, 2}),
          argmax(x, 1),
          argmin(x, std::nullopt, true),
          cumsum(x, -2),
          cumsum(x),
          logsumexp(x, {0, 2}, true),
          softmax(x, 1),
          log_softmax(x)};
}

TEST(ReduceTrace, InterpretedGraphEqualsEager) {
  RandomArrays random(17);
  for (DType dtype : all_dtypes) {
    Array x = random.uniform({2, 3, 4}, dtype);
    Graph graph = make_graph("reductions", every_reduction, x);
    transform::verify(detail::ir_of(graph));
    std::vector<Array> traced = detail::interpret(graph, {x}, {});
    std::vector<Array> eager = every_reduction(x);
    ASSERT_EQ(traced.size(), eager.size());
    for (size_t i = 0; i < eager.size(); ++i) {
      EXPECT_EQ(traced[i].dtype(), eager[i].dtype()) << dtype_name(dtype) << " output " << i;
      // log_softmax subtracts values of a few units: its error is absolute.
      double rtol = native_rtol(eager[i].dtype());
      EXPECT_TRUE(all_close(traced[i], eager[i], rtol, 8 * rtol,
                            std::string(dtype_name(dtype)) + " output " + std::to_string(i)));
    }
  }
}

TEST(ReduceTrace, EveryNodeCarriesTheCallersLine) {
  Array x = array({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, {2, 3});
  using Outputs = std::vector<Array>;
  int line = __LINE__ + 2;
  auto fn = [](const Array& v) {
    return Outputs{logsumexp(v, 1, true), softmax(v, 0), log_softmax(v), mean(v, 0, true), argmax(v, {}, true)};
  };
  Graph graph = make_graph("composites", fn, x);
  std::string text = graph.to_string();
  for (const ir::Node& node : detail::ir_of(graph).nodes)
    if (node.op != ir::Primitive::input)
      EXPECT_EQ(node.where.line(), static_cast<uint_least32_t>(line)) << ir::primitive_name(node.op);
  EXPECT_NE(text.find("reduce_max[axes=[1]]"), std::string::npos) << text;
  EXPECT_NE(text.find("reduce_sum[axes=[0]]"), std::string::npos) << text;
  EXPECT_NE(text.find("argmax[axis=0]"), std::string::npos) << text;
  EXPECT_NE(text.find("stop_gradient"), std::string::npos) << text;
}

// ---- Errors ----------------------------------------------------------------------------

TEST(ReduceErrors, BadAndRepeatedAxes) {
  Array x = zeros({2, 3});
  expect_error(__LINE__, [&] { sum(x, 2); }, {"[sum]", "axis 2", "[2,3]"});
  expect_error(__LINE__, [&] { mean(x, {0, -3}); }, {"[mean]", "axis -3", "[2,3]"});
  expect_error(__LINE__, [&] { prod(x, {1, -1}); }, {"[prod]", "repeated axis", "[2,3]"});
  expect_error(__LINE__, [&] { max(x, {0, 0}); }, {"[max]", "repeated axis", "[2,3]"});
  expect_error(__LINE__, [&] { logsumexp(x, 5); }, {"[logsumexp]", "axis 5", "[2,3]"});
  expect_error(__LINE__, [&] { softmax(x, 2); }, {"[softmax]", "axis 2", "[2,3]"});
  expect_error(__LINE__, [&] { log_softmax(scalar(1.0f)); }, {"[log_softmax]", "axis -1", "[]"});
  expect_error(__LINE__, [&] { argmax(x, -3); }, {"[argmax]", "axis -3", "[2,3]"});
  expect_error(__LINE__, [&] { argmin(scalar(1), 1); }, {"[argmin]", "axis 1", "[]"});
  expect_error(__LINE__, [&] { cumsum(x, 2); }, {"[cumsum]", "axis 2", "[2,3]"});
  expect_error(__LINE__, [&] { min(scalar(1.0), 0); }, {"[min]", "axis 0", "[]"});
}

TEST(ReduceErrors, ZeroSizeReductionsWithoutIdentity) {
  Array x = zeros({0, 3});
  expect_error(__LINE__, [&] { max(x); }, {"[max]", "zero-size array", "maximum", "f32[0,3]"});
  expect_error(__LINE__, [&] { min(x, 0, true); }, {"[min]", "zero-size array", "minimum", "f32[0,3]"});
  expect_error(__LINE__, [&] { argmax(x); }, {"[argmax]", "empty sequence", "f32[0,3]"});
  expect_error(__LINE__, [&] { argmin(x, 0); }, {"[argmin]", "empty sequence", "axis 0", "f32[0,3]"});
  expect_error(__LINE__, [&] { argmax(zeros({3, 0}, DType::i32), -1); }, {"[argmax]", "i32[3,0]"});
  // Non-empty reduced axes of an empty array are fine, as in NumPy.
  EXPECT_EQ(max(x, 1).shape(), (Shape{0}));
  EXPECT_EQ(argmin(zeros({3, 0}), 0).shape(), (Shape{0}));
}

TEST(ReduceErrors, InsideATraceToo) {
  int line = __LINE__ + 1;
  auto fn = [](const Array& v) { return max(v, 0); };
  expect_error(line, [&] { make_graph("empty_max", fn, zeros({0, 2})); }, {"[max]"});
}

}  // namespace
}  // namespace kiln
