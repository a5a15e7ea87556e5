// Movement ops (reshape, transpose, broadcast_to, expand_dims, squeeze,
// slice, concatenate, stack, pad, flip) against NumPy over random shapes and
// every dtype, traced against eager, and every user error with its message.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "ir/graph.h"
#include "ops/common/apply.h"
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

std::string py_tuple(const std::vector<int64_t>& values) {
  std::string text = "(";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? "," : "") + std::to_string(values[i]);
  return text + (values.size() == 1 ? ",)" : ")");
}

std::string describe(const Array& x) { return std::string(dtype_name(x.dtype())) + shape_string(x.shape()); }

// Movement never computes, so every dtype must match NumPy exactly.
TEST(MovementOracle, Reshape) {
  RandomArrays rng(101);
  NumpyOracle oracle;
  std::vector<OracleCase> cases;
  for (int i = 0; i < 80; ++i) {
    DType dtype = all_dtypes[i % 5];
    Shape shape = rng.shape(0, 4, 4);
    Shape target = shape;
    switch (rng.integer(0, 5)) {
      case 0: std::reverse(target.begin(), target.end()); break;
      case 1:
        if (target.size() >= 2) {
          size_t a = static_cast<size_t>(rng.integer(0, static_cast<int64_t>(target.size()) - 2));
          target[a] *= target[a + 1];
          target.erase(target.begin() + static_cast<std::ptrdiff_t>(a) + 1);
        }
        break;
      case 2: target.insert(target.begin() + rng.integer(0, static_cast<int64_t>(target.size())), 1); break;
      case 3: target = {shape_size(shape)}; break;
      case 4: {
        // -1 is well defined only while the other dimensions have elements.
        if (target.empty()) break;
        size_t a = static_cast<size_t>(rng.integer(0, static_cast<int64_t>(target.size()) - 1));
        Shape others = target;
        others.erase(others.begin() + static_cast<std::ptrdiff_t>(a));
        if (shape_size(others) != 0) target[a] = -1;
        break;
      }
      default:
        target = {};  // 0-d only when there is one element
        if (shape_size(shape) != 1) target = {1, shape_size(shape)};
    }
    Array x = rng.uniform(shape, dtype);
    std::string context = "reshape(" + describe(x) + ", " + shape_string(target) + ")";
    Array y = eager_and_traced(
        context, [&](const Array& v) { return reshape(v, target); }, x);
    cases.push_back({y, oracle.add("np.reshape(a, " + py_tuple(target) + ")", {x}), context});
  }
  oracle.run();
  expect_cases_match(oracle, cases);
}

TEST(MovementOracle, Transpose) {
  RandomArrays rng(102);
  NumpyOracle oracle;
  std::vector<OracleCase> cases;
  for (int i = 0; i < 80; ++i) {
    DType dtype = all_dtypes[i % 5];
    Shape shape = rng.shape(0, 5, 4);
    std::vector<int64_t> perm(shape.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng.engine());
    for (int64_t& axis : perm)
      if (rng.integer(0, 2) == 0) axis -= static_cast<int64_t>(shape.size());
    bool reverse_all = rng.integer(0, 3) == 0;
    if (reverse_all) perm.clear();
    Array x = rng.uniform(shape, dtype);
    std::string context = "transpose(" + describe(x) + ", " + py_tuple(perm) + ")";
    Array y = eager_and_traced(
        context, [&](const Array& v) { return transpose(v, perm); }, x);
    std::string expression = reverse_all ? "np.transpose(a)" : "np.transpose(a, " + py_tuple(perm) + ")";
    cases.push_back({y, oracle.add(expression, {x}), context});
  }
  oracle.run();
  expect_cases_match(oracle, cases);
}

TEST(MovementOracle, BroadcastTo) {
  RandomArrays rng(103);
  NumpyOracle oracle;
  std::vector<OracleCase> cases;
  for (int i = 0; i < 60; ++i) {
    DType dtype = all_dtypes[i % 5];
    Shape target = rng.shape(0, 4, 4);
    Array x = rng.uniform(rng.broadcastable(target), dtype);
    std::string context = "broadcast_to(" + describe(x) + ", " + shape_string(target) + ")";
    Array y = eager_and_traced(
        context, [&](const Array& v) { return broadcast_to(v, target); }, x);
    cases.push_back({y, oracle.add("np.broadcast_to(a, " + py_tuple(target) + ")", {x}), context});
  }
  oracle.run();
  expect_cases_match(oracle, cases);
}

TEST(MovementOracle, ExpandDims) {
  RandomArrays rng(104);
  NumpyOracle oracle;
  std::vector<OracleCase> cases;
  for (int i = 0; i < 80; ++i) {
    DType dtype = all_dtypes[i % 5];
    Shape shape = rng.shape(0, 3, 4);
    int64_t added = rng.integer(1, 3);
    int64_t out_rank = static_cast<int64_t>(shape.size()) + added;
    std::vector<int64_t> positions(static_cast<size_t>(out_rank));
    std::iota(positions.begin(), positions.end(), 0);
    std::shuffle(positions.begin(), positions.end(), rng.engine());
    std::vector<int64_t> axes(positions.begin(), positions.begin() + added);
    for (int64_t& axis : axes)
      if (rng.integer(0, 1) == 0) axis -= out_rank;  // negative axes count from the end of the result
    Array x = rng.uniform(shape, dtype);
    std::string context = "expand_dims(" + describe(x) + ", " + py_tuple(axes) + ")";
    Array y = eager_and_traced(
        context, [&](const Array& v) { return expand_dims(v, axes); }, x);
    cases.push_back({y, oracle.add("np.expand_dims(a, " + py_tuple(axes) + ")", {x}), context});
  }
  oracle.run();
  expect_cases_match(oracle, cases);
}

TEST(MovementOracle, Squeeze) {
  RandomArrays rng(105);
  NumpyOracle oracle;
  std::vector<OracleCase> cases;
  for (int i = 0; i < 80; ++i) {
    DType dtype = all_dtypes[i % 5];
    Shape shape = rng.shape(0, 5, 3);
    for (int64_t& extent : shape)
      if (rng.integer(0, 1) == 0) extent = 1;
    std::vector<int64_t> axes;
    for (size_t a = 0; a < shape.size(); ++a)
      if (shape[a] == 1 && rng.integer(0, 1) == 0)
        axes.push_back(rng.integer(0, 1) ? static_cast<int64_t>(a)
                                         : static_cast<int64_t>(a) - static_cast<int64_t>(shape.size()));
    bool all = rng.integer(0, 2) == 0;
    Array x = rng.uniform(shape, dtype);
    std::string context = "squeeze(" + describe(x) + ", " + (all ? std::string("all") : py_tuple(axes)) + ")";
    Array y = eager_and_traced(
        context, [&](const Array& v) { return all ? squeeze(v) : squeeze(v, axes); }, x);
    std::string expression = all ? "np.squeeze(a)" : "np.squeeze(a, axis=" + py_tuple(axes) + ")";
    cases.push_back({y, oracle.add(expression, {x}), context});
  }
  oracle.run();
  expect_cases_match(oracle, cases);
}

TEST(MovementOracle, Slice) {
  RandomArrays rng(106);
  NumpyOracle oracle;
  std::vector<OracleCase> cases;
  for (int i = 0; i < 120; ++i) {
    DType dtype = all_dtypes[i % 5];
    Shape shape = rng.shape(0, 4, 6);
    int64_t rank = static_cast<int64_t>(shape.size());
    // Each list may stop early: the remaining axes take their defaults.
    std::vector<int64_t> start, stop, step;
    int64_t n_start = rng.integer(0, rank), n_stop = rng.integer(0, rank), n_step = rng.integer(0, rank);
    // Bounds reach past either end, where NumPy clamps.
    for (int64_t a = 0; a < n_start; ++a) start.push_back(rng.integer(-shape[a] - 3, shape[a] + 3));
    for (int64_t a = 0; a < n_stop; ++a) stop.push_back(rng.integer(-shape[a] - 3, shape[a] + 3));
    for (int64_t a = 0; a < n_step; ++a) step.push_back(rng.integer(1, 3));
    std::string index;
    for (int64_t a = 0; a < std::max({n_start, n_stop, n_step}); ++a) {
      auto part = [&](const std::vector<int64_t>& v) {
        return a < static_cast<int64_t>(v.size()) ? std::to_string(v[a]) : "";
      };
      index += (a ? "," : "") + part(start) + ":" + part(stop) + ":" + part(step);
    }
    Array x = rng.uniform(shape, dtype);
    std::string context =
        "slice(" + describe(x) + ", " + py_tuple(start) + ", " + py_tuple(stop) + ", " + py_tuple(step) + ")";
    Array y = eager_and_traced(
        context, [&](const Array& v) { return slice(v, start, stop, step); }, x);
    cases.push_back({y, oracle.add("a[" + (index.empty() ? "()" : index) + "]", {x}), context});
  }
  oracle.run();
  expect_cases_match(oracle, cases);
}

/// kiln's (JAX's) promotion among strong dtypes is the order bool < i32 < i64 < f32 < f64.
DType promoted(const std::vector<Array>& xs) {
  DType result = xs.at(0).dtype();
  for (const Array& x : xs) result = std::max(result, x.dtype());
  return result;
}

std::string py_names(size_t count) {
  std::string text = "(";
  for (size_t i = 0; i < count; ++i) text += std::string(i ? "," : "") + static_cast<char>('a' + i);
  return text + (count == 1 ? ",)" : ")");
}

TEST(MovementOracle, Concatenate) {
  RandomArrays rng(107);
  NumpyOracle oracle;
  std::vector<OracleCase> cases;
  for (int i = 0; i < 80; ++i) {
    Shape shape = rng.shape(1, 4, 4);
    int64_t rank = static_cast<int64_t>(shape.size());
    int64_t axis = rng.integer(-rank, rank - 1);
    size_t normalized = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    bool mixed = i % 2 == 1;  // half the cases promote between dtypes
    std::vector<Array> xs;
    for (int64_t n = rng.integer(1, 4); n-- > 0;) {
      shape[normalized] = rng.integer(0, 3);
      xs.push_back(rng.uniform(shape, mixed ? all_dtypes[rng.integer(0, 4)] : all_dtypes[(i / 2) % 5]));
    }
    std::string context = "concatenate(";
    for (const Array& x : xs) context += describe(x) + " ";
    context += "axis " + std::to_string(axis) + ")";
    Array y = eager_and_traced(
        context, [&](const std::vector<Array>& v) { return concatenate(v, axis); }, xs);
    EXPECT_EQ(y.dtype(), promoted(xs)) << context;
    std::string expression = "np.concatenate(" + py_names(xs.size()) + ", axis=" + std::to_string(axis) + ").astype(" +
                             numpy_dtype(promoted(xs)) + ")";
    cases.push_back({y, oracle.add(expression, xs), context});
  }
  oracle.run();
  expect_cases_match(oracle, cases);
}

TEST(MovementOracle, Stack) {
  RandomArrays rng(108);
  NumpyOracle oracle;
  std::vector<OracleCase> cases;
  for (int i = 0; i < 80; ++i) {
    Shape shape = rng.shape(0, 3, 4);
    int64_t out_rank = static_cast<int64_t>(shape.size()) + 1;
    int64_t axis = rng.integer(-out_rank, out_rank - 1);
    bool mixed = i % 2 == 1;
    std::vector<Array> xs;
    for (int64_t n = rng.integer(1, 4); n-- > 0;)
      xs.push_back(rng.uniform(shape, mixed ? all_dtypes[rng.integer(0, 4)] : all_dtypes[(i / 2) % 5]));
    std::string context =
        "stack(" + std::to_string(xs.size()) + " x " + describe(xs[0]) + ", axis " + std::to_string(axis) + ")";
    Array y = eager_and_traced(
        context, [&](const std::vector<Array>& v) { return stack(v, axis); }, xs);
    EXPECT_EQ(y.dtype(), promoted(xs)) << context;
    std::string expression = "np.stack(" + py_names(xs.size()) + ", axis=" + std::to_string(axis) + ").astype(" +
                             numpy_dtype(promoted(xs)) + ")";
    cases.push_back({y, oracle.add(expression, xs), context});
  }
  oracle.run();
  expect_cases_match(oracle, cases);
}

TEST(MovementOracle, Pad) {
  RandomArrays rng(109);
  NumpyOracle oracle;
  std::vector<OracleCase> cases;
  for (int i = 0; i < 80; ++i) {
    DType dtype = all_dtypes[i % 5];
    Shape shape = rng.shape(0, 4, 3);
    std::vector<int64_t> lo, hi;
    std::string widths;
    for (size_t a = 0; a < shape.size(); ++a) {
      lo.push_back(rng.integer(0, 2));
      hi.push_back(rng.integer(0, 2));
      widths += "(" + std::to_string(lo.back()) + "," + std::to_string(hi.back()) + "),";
    }
    // A fill value of the array's kind; a float fill of an integer array truncates, as NumPy casts it.
    Scalar value;
    std::string literal;
    if (dtype == bool_) {
      value = true;
      literal = "True";
    } else if (rng.integer(0, 1) == 0) {
      value = rng.integer(-5, 5);
      literal = std::to_string(value.as_int());
    } else {
      value = 0.5 + static_cast<double>(rng.integer(-5, 5));
      literal = std::to_string(value.as_double());
    }
    Array x = rng.uniform(shape, dtype);
    std::string context = "pad(" + describe(x) + ", " + py_tuple(lo) + ", " + py_tuple(hi) + ", " + literal + ")";
    Array y = eager_and_traced(
        context, [&](const Array& v) { return pad(v, lo, hi, value); }, x);
    std::string expression = shape.empty() ? "a" : "np.pad(a, (" + widths + "), constant_values=" + literal + ")";
    cases.push_back({y, oracle.add(expression, {x}), context});
  }
  oracle.run();
  expect_cases_match(oracle, cases);
}

TEST(MovementOracle, Flip) {
  RandomArrays rng(110);
  NumpyOracle oracle;
  std::vector<OracleCase> cases;
  for (int i = 0; i < 80; ++i) {
    DType dtype = all_dtypes[i % 5];
    Shape shape = rng.shape(0, 4, 4);
    int64_t rank = static_cast<int64_t>(shape.size());
    std::vector<int64_t> axes;
    for (int64_t a = 0; a < rank; ++a)
      if (rng.integer(0, 1) == 0) axes.push_back(rng.integer(0, 1) ? a : a - rank);
    std::shuffle(axes.begin(), axes.end(), rng.engine());
    bool all = rng.integer(0, 2) == 0;
    Array x = rng.uniform(shape, dtype);
    std::string context = "flip(" + describe(x) + ", " + (all ? std::string("all") : py_tuple(axes)) + ")";
    Array y = eager_and_traced(
        context, [&](const Array& v) { return all ? flip(v) : flip(v, axes); }, x);
    std::string expression = all ? "np.flip(a)" : "np.flip(a, axis=" + py_tuple(axes) + ")";
    cases.push_back({y, oracle.add(expression, {x}), context});
  }
  oracle.run();
  expect_cases_match(oracle, cases);
}

// ---- Exact small cases ------------------------------------------------------------

TEST(Movement, SmallExamples) {
  Array x = array({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(reshape(x, {3, -1}).shape(), (Shape{3, 2}));
  EXPECT_EQ(transpose(x).to_vector<int32_t>(), (std::vector<int32_t>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(slice(x, {0, -2}, {2, 3}).to_vector<int32_t>(), (std::vector<int32_t>{2, 3, 5, 6}));
  EXPECT_EQ(slice(x, {0, 2}, {2, 1}).shape(), (Shape{2, 0}));  // start past stop: empty, as in NumPy
  EXPECT_EQ(slice(x, {}, {}, {1, 2}).to_vector<int32_t>(), (std::vector<int32_t>{1, 3, 4, 6}));
  EXPECT_EQ(flip(x, 1).to_vector<int32_t>(), (std::vector<int32_t>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(pad(array({1, 2}), {1}, {2}, 9).to_vector<int32_t>(), (std::vector<int32_t>{9, 1, 2, 9, 9}));
  EXPECT_EQ(pad(array({1.5f}), {1}, {0}, 2.25).to_vector<float>(), (std::vector<float>{2.25f, 1.5f}));
  EXPECT_EQ(concatenate({x, x}, 1).shape(), (Shape{2, 6}));
  EXPECT_EQ(stack({array({1, 2}), array({3, 4})}, -1).to_vector<int32_t>(), (std::vector<int32_t>{1, 3, 2, 4}));
  EXPECT_EQ(stack({scalar(1.0f), scalar(2.0f)}).shape(), (Shape{2}));
  EXPECT_EQ(expand_dims(scalar(3), -1).shape(), (Shape{1}));
  EXPECT_EQ(squeeze(zeros({1, 0, 1})).shape(), (Shape{0}));
  EXPECT_EQ(reshape(zeros({0, 3}), {3, 0, 5}).shape(), (Shape{3, 0, 5}));
}

TEST(Movement, KeepsWeakTypeAndPromotesConcatenate) {
  Array weak = expand_dims(-Operand(2.0), 0);  // a C++ number stays weakly typed
  ASSERT_TRUE(weak.weak_type());
  EXPECT_TRUE(reshape(weak, {1, 1}).weak_type());
  EXPECT_TRUE(flip(pad(weak, {1}, {1}, 0)).weak_type());
  // A weak f32 meets a strong f64: f64; meets i32: f32 (JAX's lattice).
  EXPECT_EQ(concatenate({array({1.0, 2.0}), weak}).dtype(), f64);
  Array mixed = concatenate({array({1, 2}), weak});
  EXPECT_EQ(mixed.dtype(), f32);
  EXPECT_EQ(mixed.to_vector<float>(), (std::vector<float>{1, 2, -2}));
  EXPECT_EQ(concatenate({array({true}), array({int64_t{5}})}).dtype(), i64);
}

TEST(Movement, TrivialCasesRecordNoNode) {
  Array x = zeros({2, 1, 3});
  auto nodes = [&](auto fn) { return make_graph("trivial", fn, x).num_nodes(); };
  EXPECT_EQ(nodes([](const Array& v) { return reshape(v, {2, 1, 3}); }), 1u);
  EXPECT_EQ(nodes([](const Array& v) { return reshape(v, {2, -1, 3}); }), 1u);
  EXPECT_EQ(nodes([](const Array& v) { return transpose(v, {0, 1, 2}); }), 1u);
  EXPECT_EQ(nodes([](const Array& v) { return transpose(v, {-3, 1, -1}); }), 1u);
  EXPECT_EQ(nodes([](const Array& v) { return squeeze(v, std::vector<int64_t>{}); }), 1u);
  // A whole slice stays a node while tracing (at other sizes of a dynamic
  // dimension it is not whole); simplify removes it.
  EXPECT_EQ(nodes([](const Array& v) { return slice(v, {0, 0}, {2, 1}, {1, 5}); }), 2u);
  EXPECT_EQ(nodes([](const Array& v) { return pad(v, {0, 0, 0}, {0, 0, 0}); }), 3u);  // and its fill value
  EXPECT_EQ(nodes([](const Array& v) { return flip(v, std::vector<int64_t>{}); }), 1u);
  EXPECT_EQ(nodes([](const Array& v) { return concatenate({v}, 2); }), 1u);
  EXPECT_EQ(nodes([](const Array& v) { return broadcast_to(v, {2, 1, 3}); }), 1u);
  // Non-trivial ones record exactly one node per primitive.
  EXPECT_EQ(nodes([](const Array& v) { return squeeze(v); }), 2u);
  EXPECT_EQ(nodes([](const Array& v) { return flip(v); }), 2u);
  EXPECT_EQ(nodes([](const Array& v) { return pad(v, {0, 1, 0}, {0, 0, 0}, 1.0); }), 3u);  // + the fill literal
}

TEST(Movement, PrintedIrDescribesAttributes) {
  Array x = zeros({2, 3});
  Graph graph = make_graph(
      "attributes",
      [](const Array& v) {
        Array t = transpose(reshape(v, {3, 2}));
        Array s = slice(t, {0, 1}, {2, 3}, {1, 2});
        Array p = pad(flip(s, 0), {1, 0}, {0, 2}, 7);
        return concatenate({p, p}, 1);
      },
      x);
  std::string text = graph.to_string();
  for (const char* expected :
       {"reshape[shape=[3,2]]", "transpose[perm=[1,0]]", "slice[start=[0,1] stop=[2,3] step=[1,2]]",
        "reverse[axes=[0]]", "pad[lo=[1,0] hi=[0,2]]", "concatenate[axis=1]"})
    EXPECT_NE(text.find(expected), std::string::npos) << "missing " << expected << " in\n" << text;
  transform::verify(detail::ir_of(graph));
}

// ---- Errors -------------------------------------------------------------------------

// Keep each use on one line: __LINE__ must be the line of the failing call.
// clang-format off
#define EXPECT_KILN_ERROR(statement, op, ...) \
  testing::expect_error(__LINE__, [&] { (void)(statement); }, {"[" op "]", __VA_ARGS__})

TEST(MovementErrors, Reshape) {
  Array x = zeros({2, 3});
  EXPECT_KILN_ERROR(reshape(x, {4, 2}), "reshape", "f32[2,3]", "[4,2]", "6 elements");
  EXPECT_KILN_ERROR(reshape(x, {-1, -1}), "reshape", "f32[2,3]", "[-1,-1]", "only one");
  EXPECT_KILN_ERROR(reshape(x, {-2, -3}), "reshape", "f32[2,3]", "[-2,-3]");
  EXPECT_KILN_ERROR(reshape(x, {4, -1}), "reshape", "f32[2,3]", "[4,-1]");
  EXPECT_KILN_ERROR(reshape(zeros({0, 3}), {0, -1}), "reshape", "f32[0,3]", "[0,-1]", "ambiguous");
  EXPECT_KILN_ERROR(reshape(x, {int64_t{1} << 62, 8, 1}), "reshape", "f32[2,3]");  // product overflows
  EXPECT_KILN_ERROR(reshape(Array(), {1}), "reshape", "empty");
}

TEST(MovementErrors, Transpose) {
  Array x = zeros({2, 3, 4}, i32);
  EXPECT_KILN_ERROR(transpose(x, {0, 0, 1}), "transpose", "[0,0,1]", "i32[2,3,4]", "permutation");
  EXPECT_KILN_ERROR(transpose(x, {1, 0}), "transpose", "[1,0]", "i32[2,3,4]");
  EXPECT_KILN_ERROR(transpose(x, {0, 1, 3}), "transpose", "[0,1,3]", "i32[2,3,4]");
  EXPECT_KILN_ERROR(transpose(x, {0, 1, -4}), "transpose", "[0,1,-4]", "i32[2,3,4]");
}

TEST(MovementErrors, BroadcastTo) {
  EXPECT_KILN_ERROR(broadcast_to(zeros({3}), {4}), "broadcast_to", "f32[3]", "[4]");
  EXPECT_KILN_ERROR(broadcast_to(zeros({2, 3}), {3}), "broadcast_to", "f32[2,3]", "[3]");
  EXPECT_KILN_ERROR(broadcast_to(zeros({3}), {int64_t{1} << 40, int64_t{1} << 40, 3}), "broadcast_to", "f32[3]");
}

TEST(MovementErrors, ExpandDimsAndSqueeze) {
  Array x = zeros({2, 1}, i64);
  EXPECT_KILN_ERROR(expand_dims(x, 3), "expand_dims", "axis 3", "i64[2,1]");
  EXPECT_KILN_ERROR(expand_dims(x, -4), "expand_dims", "axis -4", "i64[2,1]");
  EXPECT_KILN_ERROR(expand_dims(x, {0, -4}), "expand_dims", "repeated", "i64[2,1]");
  EXPECT_KILN_ERROR(expand_dims(x, Axes::all()), "expand_dims", "i64[2,1]");
  EXPECT_KILN_ERROR(squeeze(x, 0), "squeeze", "axis 0", "i64[2,1]", "extent is 2");
  EXPECT_KILN_ERROR(squeeze(x, 2), "squeeze", "axis 2", "[2,1]");
  EXPECT_KILN_ERROR(squeeze(x, {1, -1}), "squeeze", "repeated", "[2,1]");
}

TEST(MovementErrors, Slice) {
  Array x = zeros({4, 5}, f64);
  EXPECT_KILN_ERROR(slice(x, {0, 0, 0}, {}), "slice", "start", "[0,0,0]", "f64[4,5]", "more entries");
  EXPECT_KILN_ERROR(slice(x, {}, {1, 1, 1}), "slice", "stop", "f64[4,5]", "more entries");
  EXPECT_KILN_ERROR(slice(x, {}, {}, {1, 0}), "slice", "step 0", "axis 1", "f64[4,5]", "flip");
  EXPECT_KILN_ERROR(slice(x, {}, {}, {-1}), "slice", "step -1", "axis 0", "f64[4,5]", "flip");
  EXPECT_KILN_ERROR(slice(scalar(1.0), {0}, {1}), "slice", "f64[]", "more entries");
}

// Bounds past either end clamp, as NumPy's x[5:], x[:, -6:] and x[:200] do.
TEST(Movement, SliceClampsBoundsPastTheEnds) {
  Array x = reshape(arange(0, 20, 1, f64), {4, 5});
  EXPECT_EQ(slice(x, {5}, {}).shape(), (Shape{0, 5}));
  EXPECT_EQ(slice(x, {0, -6}, {}).to_vector<double>(), x.to_vector<double>());
  EXPECT_EQ(slice(x, {}, {200, 6}).to_vector<double>(), x.to_vector<double>());
  EXPECT_EQ(slice(x, {-200}, {2}).to_vector<double>(), slice(x, {0}, {2}).to_vector<double>());
  auto traced = jit([](const Array& v) { return slice(v, {1}, {200}); });
  EXPECT_EQ(traced(x).to_vector<double>(), slice(x, {1}, {4}).to_vector<double>());
}

TEST(MovementErrors, Concatenate) {
  Array a = zeros({2, 3});
  EXPECT_KILN_ERROR(concatenate({}), "concatenate", "empty list");
  EXPECT_KILN_ERROR(concatenate({a, zeros({3}, i32)}), "concatenate", "same rank", "f32[2,3], i32[3]");
  EXPECT_KILN_ERROR(concatenate({a, zeros({2, 4}), zeros({3, 3})}, 1), "concatenate", "f32[2,3], f32[2,4], f32[3,3]");
  EXPECT_KILN_ERROR(concatenate({a, zeros({2, 4})}), "concatenate", "axis 0", "f32[2,3], f32[2,4]");
  EXPECT_KILN_ERROR(concatenate({scalar(1.0f), scalar(2.0f)}), "concatenate", "0-d", "f32[], f32[]", "stack");
  EXPECT_KILN_ERROR(concatenate({a, a}, 2), "concatenate", "axis 2", "[2,3]");
  EXPECT_KILN_ERROR(concatenate({a, Array()}), "concatenate", "empty");
}

TEST(MovementErrors, Stack) {
  EXPECT_KILN_ERROR(stack({}), "stack", "empty list");
  EXPECT_KILN_ERROR(stack({zeros({2}), zeros({3}, i32), zeros({2})}), "stack", "same shape", "f32[2], i32[3], f32[2]");
  EXPECT_KILN_ERROR(stack({zeros({2}), zeros({2})}, 2), "stack", "axis 2", "f32[2], f32[2]", "result rank 2");
  EXPECT_KILN_ERROR(stack({zeros({2}), zeros({2})}, -3), "stack", "axis -3", "f32[2]");
}

TEST(MovementErrors, Pad) {
  Array x = zeros({2, 3}, bool_);
  EXPECT_KILN_ERROR(pad(x, {1}, {1, 1}), "pad", "bool[2,3]", "lo=[1]", "hi=[1,1]");
  EXPECT_KILN_ERROR(pad(x, {1, 1, 1}, {1, 1, 1}), "pad", "bool[2,3]", "lo=[1,1,1]");
  EXPECT_KILN_ERROR(pad(x, {0, -1}, {0, 0}), "pad", "negative", "lo=[0,-1]", "bool[2,3]", "slice");
  EXPECT_KILN_ERROR(pad(x, {0, 0}, {-2, 0}), "pad", "negative", "hi=[-2,0]", "bool[2,3]");
  EXPECT_KILN_ERROR(pad(x, {0, 0}, {0, std::numeric_limits<int64_t>::max()}), "pad", "bool[2,3]", "more elements");
  EXPECT_KILN_ERROR(pad(x, {int64_t{1} << 40, 0}, {0, int64_t{1} << 40}), "pad", "bool[2,3]", "more elements");
}

TEST(MovementErrors, Flip) {
  Array x = zeros({2, 3});
  EXPECT_KILN_ERROR(flip(x, 2), "flip", "axis 2", "[2,3]");
  EXPECT_KILN_ERROR(flip(x, {0, -2}), "flip", "repeated", "[2,3]");
  EXPECT_KILN_ERROR(flip(scalar(1), 0), "flip", "axis 0", "[]");
}

TEST(MovementErrors, InsideATraceNameTheUserLine) {
  Array x = zeros({2, 3});
  EXPECT_KILN_ERROR(make_graph("f", [](const Array& v) { return reshape(v, {5}); }, x), "reshape", "f32[2,3]", "[5]");
  EXPECT_KILN_ERROR(make_graph("f", [](const Array& v) { return slice(v, {0}, {}, {0}); }, x), "slice", "step 0");
}

// clang-format on

// The primitives check their canonical attributes too (graphs may be built
// by transforms, not only by the builders above).
TEST(MovementErrors, PrimitivesRejectNonCanonicalAttributes) {
  using ir::Primitive;
  Array x = zeros({2, 3});
  auto apply_ints = [&](Primitive op, std::vector<Array> inputs, std::vector<int64_t> ints) {
    ir::Attributes attrs;
    attrs.ints = std::move(ints);
    return detail::apply(op, inputs, std::move(attrs), Location::current());
  };
  EXPECT_THROW(apply_ints(Primitive::transpose, {x}, {0}), Error);
  EXPECT_THROW(apply_ints(Primitive::slice, {x}, {0, 2, 2, 1, 1, 1}), Error);  // start past stop
  EXPECT_THROW(apply_ints(Primitive::slice, {x}, {-1, 0, 2, 3, 1, 1}), Error);
  EXPECT_THROW(apply_ints(Primitive::slice, {x}, {0, 0, 2, 3, 1, 0}), Error);
  EXPECT_THROW(apply_ints(Primitive::slice, {x}, {0, 0, 2}), Error);
  EXPECT_THROW(apply_ints(Primitive::concatenate, {}, {0}), Error);
  EXPECT_THROW(apply_ints(Primitive::concatenate, {x, zeros({2, 3}, f64)}, {0}), Error);
  EXPECT_THROW(apply_ints(Primitive::concatenate, {x, x}, {2}), Error);
  EXPECT_THROW(apply_ints(Primitive::pad, {x, scalar(1.0)}, {0, 0, 0, 0}), Error);  // value dtype differs
  EXPECT_THROW(apply_ints(Primitive::pad, {x, zeros({1})}, {0, 0, 0, 0}), Error);   // value not 0-d
  EXPECT_THROW(apply_ints(Primitive::pad, {x, scalar(1.0f)}, {0, 0, -1, 0}), Error);
  EXPECT_THROW(apply_ints(Primitive::pad, {x}, {0, 0, 0, 0}), Error);
  EXPECT_THROW(apply_ints(Primitive::reverse, {x}, {1, 0}), Error);
  EXPECT_THROW(apply_ints(Primitive::reverse, {x}, {2}), Error);
  ir::Attributes shape;
  shape.shape = {7};
  EXPECT_THROW(detail::apply(Primitive::reshape, {x}, shape, Location::current()), Error);
  shape.shape = {-2, -3};
  EXPECT_THROW(detail::apply(Primitive::reshape, {x}, shape, Location::current()), Error);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

TEST(PadToBucket, PadsToTheNextBucket) {
  Array x = ones({3, 5});
  EXPECT_EQ(pad_to_bucket(x, 1).shape(), (Shape{3, 8}));
  EXPECT_EQ(pad_to_bucket(x, 0).shape(), (Shape{4, 5}));
  EXPECT_EQ(pad_to_bucket(x, -1, {4, 16, 32}).shape(), (Shape{3, 16}));
  Array padded = pad_to_bucket(x, 1, {6}, -1.0f);
  EXPECT_EQ(padded.to_vector<float>()[5], -1.0f);
  EXPECT_EQ(padded.to_vector<float>()[4], 1.0f);
  EXPECT_THROW(pad_to_bucket(x, 1, {2, 4}), Error);
  // Lengths 5..8 share one jitted shape.
  auto f = jit([](const Array& v) { return sum(v); });
  for (int64_t n = 5; n <= 8; ++n) f(pad_to_bucket(ones({n}), 0));
  EXPECT_EQ(f.stats().compiles, 1);
}

}  // namespace
}  // namespace kiln
