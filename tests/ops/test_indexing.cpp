// Indexing ops (take, take_along_axis, scatter_add, dynamic_slice,
// dynamic_update_slice, one_hot) against NumPy over random shapes, every
// dtype and zero-size dimensions, traced against eager, and every user error
// with its message.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <functional>
#include <limits>

#include "backend/interp/interpreter.h"
#include "ir/graph.h"
#include "support/errors.h"
#include "support/numpy_oracle.h"
#include "transform/verify.h"

namespace kiln {
namespace {

using testing::all_close;
using testing::all_dtypes;
using testing::eager_and_traced;
using testing::expect_cases_match;
using testing::numpy_dtype;
using testing::NumpyOracle;
using testing::OracleCase;
using testing::RandomArrays;

constexpr DType index_dtypes[] = {i32, i64};

std::string describe(const Array& x) { return std::string(dtype_name(x.dtype())) + shape_string(x.shape()); }

/// Random indices in [-extent - 3, extent + 3): negative and out of range too.
Array random_indices(RandomArrays& random, Shape shape, DType dtype, int64_t extent) {
  return random.uniform(std::move(shape), dtype, static_cast<double>(-extent - 3), static_cast<double>(extent + 3));
}

/// NumPy's equivalent of kiln's index rule: wrap negatives once, then clamp.
std::string normalized(const std::string& name, int64_t extent) {
  std::string n = std::to_string(extent);
  return "np.clip(np.where(" + name + " < 0, " + name + " + " + n + ", " + name + "), 0, " + n + " - 1)";
}

using testing::expect_error;

TEST(Indexing, TakeMatchesNumpy) {
  RandomArrays random(11);
  NumpyOracle oracle;
  std::vector<OracleCase> cases;
  for (int trial = 0; trial < 150; ++trial) {
    DType dtype = all_dtypes[trial % 5];
    DType index_dtype = index_dtypes[(trial / 5) % 2];
    Shape shape = random.shape(0, 4);
    Shape index_shape = random.shape(0, 2);
    bool flattened = shape.empty() || random.integer(0, 3) == 0;
    int64_t axis =
        flattened ? 0 : random.integer(-static_cast<int64_t>(shape.size()), static_cast<int64_t>(shape.size()) - 1);
    int64_t positive_axis = axis < 0 ? axis + static_cast<int64_t>(shape.size()) : axis;
    int64_t extent = flattened ? shape_size(shape) : shape[static_cast<size_t>(positive_axis)];
    Array x = random.uniform(shape, dtype);
    Array indices = random_indices(random, index_shape, index_dtype, extent);
    std::string context =
        "take(" + describe(x) + ", " + describe(indices) + (flattened ? "" : ", axis=" + std::to_string(axis)) + ")";
    std::optional<int64_t> axis_argument = flattened ? std::nullopt : std::optional<int64_t>(axis);
    if (extent == 0 && indices.size() > 0) {
      EXPECT_THROW(take(x, indices, axis_argument), Error) << context;
      continue;
    }
    Array actual = eager_and_traced(
        context, [&](const Array& a, const Array& b) { return take(a, b, axis_argument); }, x, indices);
    std::string axis_text = flattened ? "None" : std::to_string(axis);
    // NumPy cannot clip into an empty axis even for empty indices; kiln's
    // result is then empty and only its shape is compared.
    std::string index_text = extent == 0 ? "b" : normalized("b", extent);
    cases.push_back(
        {actual, oracle.add("np.take(a, " + index_text + ", axis=" + axis_text + ")", {x, indices}), context});
  }
  oracle.run();
  expect_cases_match(oracle, cases);
}

TEST(Indexing, TakeOfScalarsAndInRangeIndices) {
  Array x = array({10, 20, 30, 40, 50, 60}, {2, 3});
  EXPECT_EQ(take(x, array({2, 0}), 1).to_vector<int32_t>(), (std::vector<int32_t>{30, 10, 60, 40}));
  EXPECT_EQ(take(x, array({-1, 5, 99, -99})).to_vector<int32_t>(), (std::vector<int32_t>{60, 60, 60, 10}));
  Array row = take(x, scalar(1), 0);
  EXPECT_EQ(row.shape(), (Shape{3}));
  EXPECT_EQ(row.to_vector<int32_t>(), (std::vector<int32_t>{40, 50, 60}));
  Array from_scalar = take(scalar(7.5f), array({0, 0, 3}));
  EXPECT_EQ(from_scalar.dtype(), f32);
  EXPECT_EQ(from_scalar.to_vector<float>(), (std::vector<float>{7.5f, 7.5f, 7.5f}));
  // Extreme indices clamp without overflow.
  Array extremes =
      array(std::vector<int64_t>{std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()});
  EXPECT_EQ(take(x, extremes).to_vector<int32_t>(), (std::vector<int32_t>{10, 60}));
}

TEST(Indexing, TakeAlongAxisMatchesNumpy) {
  RandomArrays random(12);
  NumpyOracle oracle;
  std::vector<OracleCase> cases;
  for (int trial = 0; trial < 120; ++trial) {
    DType dtype = all_dtypes[trial % 5];
    DType index_dtype = index_dtypes[(trial / 5) % 2];
    Shape shape = random.shape(1, 3);
    auto rank = static_cast<int64_t>(shape.size());
    int64_t axis = random.integer(-rank, rank - 1);
    auto positive_axis = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    // Other axes equal, or 1 on either side (they broadcast, as in NumPy).
    Shape index_shape = shape;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (d == positive_axis) index_shape[d] = random.integer(0, 4);
      else if (random.integer(0, 3) == 0) index_shape[d] = 1;
    }
    if (random.integer(0, 3) == 0) {
      size_t d = static_cast<size_t>(random.integer(0, rank - 1));
      if (d != positive_axis) {
        shape[d] = 1;
        index_shape[d] = random.integer(0, 3);
      }
    }
    int64_t extent = shape[positive_axis];
    Array x = random.uniform(shape, dtype);
    Array indices = random_indices(random, index_shape, index_dtype, extent);
    std::string context =
        "take_along_axis(" + describe(x) + ", " + describe(indices) + ", " + std::to_string(axis) + ")";
    Shape result_shape = index_shape;
    for (size_t d = 0; d < shape.size(); ++d)
      if (d != positive_axis) result_shape[d] = shape[d] == 1 ? index_shape[d] : shape[d];
    if (extent == 0 && shape_size(result_shape) > 0) {
      EXPECT_THROW(take_along_axis(x, indices, axis), Error) << context;
      continue;
    }
    Array actual = eager_and_traced(
        context, [&](const Array& a, const Array& b) { return take_along_axis(a, b, axis); }, x, indices);
    EXPECT_EQ(actual.shape(), result_shape) << context;
    if (extent == 0) continue;  // empty result; NumPy cannot clip into an empty axis
    cases.push_back(
        {actual,
         oracle.add("np.take_along_axis(a, " + normalized("b", extent) + ", axis=" + std::to_string(axis) + ")",
                    {x, indices}),
         context});
  }
  oracle.run();
  expect_cases_match(oracle, cases);
}

TEST(Indexing, ScatterAddMatchesNumpy) {
  RandomArrays random(13);
  NumpyOracle oracle;
  std::vector<OracleCase> cases;
  for (int trial = 0; trial < 120; ++trial) {
    DType dtype = all_dtypes[trial % 5];
    DType index_dtype = index_dtypes[(trial / 5) % 2];
    Shape shape = random.shape(1, 3);
    auto rank = static_cast<int64_t>(shape.size());
    int64_t axis = random.integer(-rank, rank - 1);
    auto positive_axis = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    int64_t extent = shape[positive_axis];
    Shape index_shape = random.shape(0, 2);
    Array x = random.uniform(shape, dtype);
    // Few distinct indices, so repeats accumulate.
    Array indices = random_indices(random, index_shape, index_dtype, extent);
    Shape update_shape(shape.begin(), shape.begin() + static_cast<int64_t>(positive_axis));
    update_shape.insert(update_shape.end(), index_shape.begin(), index_shape.end());
    update_shape.insert(update_shape.end(), shape.begin() + static_cast<int64_t>(positive_axis) + 1, shape.end());
    Array updates = random.uniform(update_shape, dtype);
    std::string context = "scatter_add(" + describe(x) + ", " + describe(indices) + ", " + describe(updates) + ", " +
                          std::to_string(axis) + ")";
    if (extent == 0 && indices.size() > 0) {
      EXPECT_THROW(scatter_add(x, indices, updates, axis), Error) << context;
      continue;
    }
    Array actual = eager_and_traced(
        context, [&](const Array& a, const Array& b, const Array& c) { return scatter_add(a, b, c, axis); }, x, indices,
        updates);
    if (extent == 0) {
      EXPECT_TRUE(all_close(actual, x, 0, 0, context));
      continue;
    }
    std::string target = "(slice(None),) * " + std::to_string(positive_axis) + " + (" + normalized("b", extent) + ",)";
    std::string expression = "(lambda r: (np.add.at(r, " + target + ", c), r)[1])(a.copy())";
    cases.push_back({actual, oracle.add(expression, {x, indices, updates}), context, testing::default_rtol(dtype)});
  }
  oracle.run();
  expect_cases_match(oracle, cases);
}

TEST(Indexing, ScatterAddAccumulatesAndWraps) {
  Array x = zeros({3}, i32);
  Array sum = scatter_add(x, array({0, 0, 2, -1}), array({5, 6, 1, 1}));
  EXPECT_EQ(sum.to_vector<int32_t>(), (std::vector<int32_t>{11, 0, 2}));
  Array big = full({1}, std::numeric_limits<int32_t>::max(), i32);
  EXPECT_EQ(scatter_add(big, array({0}), array({1})).to_vector<int32_t>()[0], std::numeric_limits<int32_t>::min());
  // The input is not modified.
  EXPECT_EQ(x.to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 0}));
}

/// kiln's start rule, written independently of the implementation.
int64_t clamp_start(int64_t start, int64_t extent, int64_t size) {
  if (start < 0) start += extent;
  return std::max<int64_t>(0, std::min(start, extent - size));
}

/// A start as a number or a 0-d array of either integer dtype.
Operand random_start(RandomArrays& random, int64_t value) {
  switch (random.integer(0, 2)) {
    case 0: return Operand(value);
    case 1: return Operand(scalar(static_cast<int32_t>(value)));
    default: return Operand(scalar(value));
  }
}

/// A random window of `shape`: its sizes, its starts (in range or not; as
/// numbers or 0-d arrays, and all as 0-d arrays for tracing) and NumPy's
/// index of the window kiln's start rule selects.
struct RandomWindow {
  Shape sizes;
  std::vector<int64_t> starts;
  std::vector<Operand> start_operands;
  std::vector<Array> start_arrays;
  std::string numpy_index = "(";
};

RandomWindow random_window(RandomArrays& random, const Shape& shape) {
  RandomWindow window;
  for (int64_t extent : shape) {
    int64_t size = random.integer(0, extent);
    int64_t start = random.integer(-extent - 3, extent + 3);
    window.sizes.push_back(size);
    window.starts.push_back(start);
    window.start_operands.push_back(random_start(random, start));
    window.start_arrays.push_back(scalar(start));
    int64_t clamped = clamp_start(start, extent, size);
    window.numpy_index += "slice(" + std::to_string(clamped) + ", " + std::to_string(clamped + size) + "),";
  }
  window.numpy_index += ")";
  return window;
}

TEST(Indexing, DynamicSliceMatchesNumpy) {
  RandomArrays random(14);
  NumpyOracle oracle;
  std::vector<OracleCase> cases;
  for (int trial = 0; trial < 120; ++trial) {
    DType dtype = all_dtypes[trial % 5];
    Array x = random.uniform(random.shape(0, 4), dtype);
    RandomWindow window = random_window(random, x.shape());
    std::string context =
        "dynamic_slice(" + describe(x) + ", " + shape_string(window.starts) + ", " + shape_string(window.sizes) + ")";
    Array actual = dynamic_slice(x, window.start_operands, window.sizes);
    // Traced with array starts: they are graph arguments, not literals.
    Array with_arrays = eager_and_traced(
        context,
        [&](const Array& a, const std::vector<Array>& s) {
          return dynamic_slice(a, std::vector<Operand>(s.begin(), s.end()), window.sizes);
        },
        x, window.start_arrays);
    EXPECT_TRUE(all_close(with_arrays, actual, 0, 0, context + " with array starts"));
    cases.push_back({actual, oracle.add("a[" + window.numpy_index + "]", {x}), context});
  }
  oracle.run();
  expect_cases_match(oracle, cases);
}

TEST(Indexing, DynamicUpdateSliceMatchesNumpy) {
  RandomArrays random(15);
  NumpyOracle oracle;
  std::vector<OracleCase> cases;
  for (int trial = 0; trial < 120; ++trial) {
    DType dtype = all_dtypes[trial % 5];
    Array x = random.uniform(random.shape(0, 4), dtype);
    RandomWindow window = random_window(random, x.shape());
    Array update = random.uniform(window.sizes, dtype);
    std::string context =
        "dynamic_update_slice(" + describe(x) + ", " + describe(update) + ", " + shape_string(window.starts) + ")";
    Array actual = dynamic_update_slice(x, update, window.start_operands);
    // Traced with array starts: they are graph arguments, not literals.
    Array with_arrays = eager_and_traced(
        context,
        [](const Array& a, const Array& u, const std::vector<Array>& s) {
          return dynamic_update_slice(a, u, std::vector<Operand>(s.begin(), s.end()));
        },
        x, update, window.start_arrays);
    EXPECT_TRUE(all_close(with_arrays, actual, 0, 0, context + " with array starts"));
    std::string expression = "(lambda r: (r.__setitem__(" + window.numpy_index + ", b), r)[1])(a.copy())";
    cases.push_back({actual, oracle.add(expression, {x, update}), context});
  }
  oracle.run();
  expect_cases_match(oracle, cases);
}

TEST(Indexing, OneHotMatchesNumpy) {
  RandomArrays random(16);
  NumpyOracle oracle;
  std::vector<OracleCase> cases;
  for (int trial = 0; trial < 40; ++trial) {
    DType dtype = all_dtypes[trial % 5];
    DType index_dtype = index_dtypes[(trial / 5) % 2];
    int64_t classes = random.integer(0, 5);
    Array indices = random_indices(random, random.shape(0, 3), index_dtype, classes);
    std::string context = "one_hot(" + describe(indices) + ", " + std::to_string(classes) + ")";
    Array actual = eager_and_traced(
        context, [&](const Array& a) { return one_hot(a, classes, dtype); }, indices);
    std::string expression =
        "(a[..., None] == np.arange(" + std::to_string(classes) + ")).astype(" + numpy_dtype(dtype) + ")";
    cases.push_back({actual, oracle.add(expression, {indices}), context});
  }
  oracle.run();
  expect_cases_match(oracle, cases);
}

TEST(Indexing, TracedGraphsKeepNumberStartsAsLiteralsAndPrintAttributes) {
  Array x = array({1, 2, 3, 4, 5, 6}, {2, 3});
  Array columns = array({2, 0});
  Array rows = array({1});
  auto fn = [&](const Array& a) {
    return std::vector<Array>{dynamic_slice(a, {1, -1}, {1, 2}), take(a, columns, 1),
                              dynamic_update_slice(a, full({1, 1}, 9), {0, 7}),
                              scatter_add(a, rows, full({1, 3}, 1), 0)};
  };
  Graph graph = make_graph("f", fn, x);
  transform::verify(detail::ir_of(graph));
  std::string text = graph.to_string();
  for (const char* part :
       {"dynamic_slice", "sizes=[1,2]", "take", "axis=1", "dynamic_update_slice", "scatter_add", "test_indexing.cpp:"})
    EXPECT_NE(text.find(part), std::string::npos) << part << " in\n" << text;
  // The index arrays read from outside are captured; number starts are literals.
  EXPECT_EQ(graph.num_captures(), 2u);
  std::vector<Array> traced = detail::interpret(graph, {x}, {columns, rows});
  std::vector<Array> eager = fn(x);
  EXPECT_EQ(eager[0].to_vector<int32_t>(), (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(eager[1].to_vector<int32_t>(), (std::vector<int32_t>{3, 1, 6, 4}));
  EXPECT_EQ(eager[2].to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 9, 4, 5, 6}));
  EXPECT_EQ(eager[3].to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3, 5, 6, 7}));
  for (size_t i = 0; i < eager.size(); ++i)
    EXPECT_EQ(traced[i].to_vector<int32_t>(), eager[i].to_vector<int32_t>()) << i;
}

// Each failing call sits on the line its error must name.
// clang-format off
TEST(Indexing, Errors) {
  Array x = zeros({2, 3});
  Array f = array({0.0f, 1.0f});
  Array i = array({0, 1});
  expect_error(__LINE__, [&] { take(x, f, 0); }, {"[take]", "f32[2]", "i32 or i64"});
  expect_error(__LINE__, [&] { take(x, i, 2); }, {"[take]", "axis 2", "[2,3]"});
  expect_error(__LINE__, [&] { take(zeros({0, 3}), i, 0); }, {"[take]", "f32[0,3]", "extent 0"});
  expect_error(__LINE__, [&] { take(zeros({0}), i); }, {"[take]", "f32[0]"});
  expect_error(__LINE__, [&] { take(x, Array(), 0); }, {"[take]"});
  expect_error(__LINE__, [&] { take_along_axis(x, array({0}), 0); }, {"[take_along_axis]", "i32[1]", "f32[2,3]", "rank"});
  expect_error(__LINE__, [&] { take_along_axis(x, zeros({2, 3}), 0);
               },
               {"[take_along_axis]", "f32[2,3]", "i32 or i64"});
  expect_error(__LINE__, [&] { take_along_axis(x, zeros({1, 2}, i32), 0);
               },
               {"[take_along_axis]", "broadcast", "i32[1,2]"});
  expect_error(__LINE__, [&] { take_along_axis(x, zeros({1, 1}, i32), -3); }, {"[take_along_axis]", "axis -3"});
  expect_error(__LINE__, [&] { take_along_axis(zeros({0, 2}), zeros({1, 2}, i32), 0);
               },
               {"[take_along_axis]", "extent 0"});
  expect_error(__LINE__, [&] { scatter_add(x, i, zeros({2, 2}), 0); }, {"[scatter_add]", "got f32[2,2]", "f32[2,3]"});
  expect_error(__LINE__, [&] { scatter_add(x, i, zeros({2, 2}, f64), 0); }, {"[scatter_add]", "f64[2,2]", "dtype"});
  expect_error(__LINE__, [&] { scatter_add(x, f, zeros({2, 3}), 0); }, {"[scatter_add]", "f32[2]", "i32 or i64"});
  expect_error(__LINE__, [&] { scatter_add(x, i, zeros({2, 3, 2}), 5); }, {"[scatter_add]", "axis 5"});
  expect_error(__LINE__, [&] { dynamic_slice(x, {0}, {1, 1}); }, {"[dynamic_slice]", "f32[2,3]", "one start per axis"});
  expect_error(__LINE__, [&] { dynamic_slice(x, {0, 0}, {1}); }, {"[dynamic_slice]", "sizes [1]"});
  expect_error(__LINE__, [&] { dynamic_slice(x, {0, 0}, {1, 4}); }, {"[dynamic_slice]", "f32[2,3]", "[1,4]"});
  expect_error(__LINE__, [&] { dynamic_slice(x, {0, 0}, {-1, 1}); }, {"[dynamic_slice]", "[-1,1]"});
  expect_error(__LINE__, [&] { dynamic_slice(x, {0, 1.5}, {1, 1}); }, {"[dynamic_slice]", "start 1", "integer"});
  expect_error(__LINE__, [&] { dynamic_slice(x, {0, scalar(1.0f)}, {1, 1}); }, {"[dynamic_slice]", "start 1", "f32[]"});
  expect_error(__LINE__, [&] { dynamic_slice(x, {0, i}, {1, 1}); }, {"[dynamic_slice]", "start 1", "i32[2]"});
  expect_error(__LINE__, [&] { dynamic_update_slice(x, zeros({3, 1}), {0, 0});
               },
               {"[dynamic_update_slice]", "f32[3,1]", "larger"});
  expect_error(__LINE__, [&] { dynamic_update_slice(x, zeros({1, 1}, f64), {0, 0});
               },
               {"[dynamic_update_slice]", "f64[1,1]", "dtype"});
  expect_error(__LINE__, [&] { dynamic_update_slice(x, zeros({1}), {0, 0});
               },
               {"[dynamic_update_slice]", "f32[1]", "rank"});
  expect_error(__LINE__, [&] { dynamic_update_slice(x, zeros({1, 1}), {0});
               },
               {"[dynamic_update_slice]", "one start per axis"});
  expect_error(__LINE__, [&] { one_hot(f, 3); }, {"[one_hot]", "f32[2]"});
  expect_error(__LINE__, [&] { one_hot(i, -1); }, {"[one_hot]", "num_classes"});
}

TEST(Indexing, ErrorsInsideATraceNameTheUserLine) {
  Array x = zeros({0, 3});
  expect_error(__LINE__, [&] { make_graph("f", [](const Array& a) { return take(a, array({1}), 0); }, x); }, {"[take]", "extent 0"});
}
// clang-format on

}  // namespace
}  // namespace kiln
