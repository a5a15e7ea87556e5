// Derivatives of the indexing primitives (take, scatter_add, dynamic_slice,
// dynamic_update_slice) and the composites built on them (take_along_axis,
// one_hot): finite differences in both modes, exact transposes where indices
// repeat, wrap or clamp, integer operands that get no gradient, and the
// derivative graph under jit.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backend/interp/interpreter.h"
#include "ir/graph.h"
#include "support/gradient_check.h"
#include "support/numpy_oracle.h"
#include "transform/verify.h"

namespace kiln {
namespace {

using testing::all_close;
using testing::check_derivatives;
using Inputs = std::vector<Array>;

Array random_array(const Shape& shape, uint64_t seed, DType dtype = f64) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> normal;
  std::vector<double> data(static_cast<size_t>(shape_size(shape)));
  for (double& v : data) v = normal(engine);
  return astype(array(data, shape), dtype);
}

Array indices_of(const std::vector<int64_t>& values, const Shape& shape, DType dtype) {
  return astype(array(values, shape), dtype);
}

std::string describe(const Array& x) { return std::string(dtype_name(x.dtype())) + shape_string(x.shape()); }

/// The cotangent of input 0 of `fn` at `inputs` for the cotangent `seed`.
Array pull_back_first(const std::function<Array(const Inputs&)>& fn, const Inputs& inputs, const Array& seed,
                      size_t which = 0) {
  auto [value, pullback] = vjp(fn, inputs);
  auto [cotangents] = pullback(seed);
  return cotangents.at(which);
}

bool has_node(const Graph& graph, ir::Primitive op, int line) {
  for (const ir::Node& node : detail::ir_of(graph).nodes)
    if (node.op == op && static_cast<int>(node.where.line()) == line) return true;
  return false;
}

// ---- take -----------------------------------------------------------------------

TEST(IndexingDerivatives, TakeMatchesFiniteDifferences) {
  struct Case {
    Shape x;
    std::vector<int64_t> indices;
    Shape index_shape;
    std::optional<int64_t> axis;
    const char* what;
  };
  const Case cases[] = {
      {{5}, {0, 2, 2, 4, 2}, {5}, 0, "repeated indices"},
      {{3, 4}, {-1, -4, 0, -1}, {4}, 1, "negative indices"},
      {{3, 4}, {7, -9, 2, 100, -4}, {5}, 0, "clamped out-of-range indices"},
      {{2, 3, 4}, {1, 1, 0, 3}, {2, 2}, -1, "2-d indices on the last axis"},
      {{2, 3, 4}, {2, 0, 2}, {3}, 1, "middle axis"},
      {{2, 3}, {5, -1, 0, 5, 9}, {5}, std::nullopt, "flattened"},
      {{3}, {-1}, {}, 0, "0-d index"},
      {{3, 0}, {1, 1}, {2}, 0, "zero-size trailing axis"},
      {{0, 3}, {}, {0}, 0, "empty indices on an empty axis"},
  };
  uint64_t seed = 1;
  for (const Case& c : cases)
    for (DType index_dtype : {i32, i64}) {
      Inputs inputs{random_array(c.x, seed++), indices_of(c.indices, c.index_shape, index_dtype)};
      std::optional<int64_t> axis = c.axis;
      auto fn = [axis](const Inputs& in) { return take(in[0], in[1], axis); };
      EXPECT_TRUE(check_derivatives(fn, inputs)) << c.what << " with " << describe(inputs[1]);
    }
}

TEST(IndexingDerivatives, TakeTransposeAccumulatesRepeatedWrappedAndClampedIndices) {
  // Normalized: 0, 2, 2, 3 (clamped), 3 (-1 wraps), 0 (-5 wraps to -1, clamps to 0).
  for (DType index_dtype : {i32, i64}) {
    Inputs inputs{random_array({4}, 3), indices_of({0, 2, 2, 7, -1, -5}, {6}, index_dtype)};
    auto fn = [](const Inputs& in) { return take(in[0], in[1], 0); };
    Array seed = array<double>({1, 10, 100, 1000, 10000, 100000});
    Array dx = pull_back_first(fn, inputs, seed);
    EXPECT_EQ(dx.dtype(), f64);
    EXPECT_TRUE(all_close(dx, array<double>({100001, 0, 110, 11000}), 0, 0, describe(inputs[1])));
  }
}

TEST(IndexingDerivatives, TakeOfF32KeepsTheCotangentDtype) {
  Inputs inputs{random_array({3, 2}, 4, f32), indices_of({2, 2, 0}, {3}, i32)};
  auto fn = [](const Inputs& in) { return take(in[0], in[1], 0); };
  Array dx = pull_back_first(fn, inputs, ones({3, 2}, f32));
  EXPECT_EQ(dx.dtype(), f32);
  EXPECT_TRUE(all_close(dx, array<float>({1, 1, 0, 0, 2, 2}, {3, 2}), 0, 0));
  auto [value, tangent] = jvp(fn, std::tuple{inputs}, std::tuple{Inputs{ones({3, 2}, f32), Array()}});
  EXPECT_EQ(tangent.dtype(), f32);
  EXPECT_TRUE(all_close(tangent, ones({3, 2}, f32), 0, 0));
}

// ---- take_along_axis --------------------------------------------------------------

TEST(IndexingDerivatives, TakeAlongAxisMatchesFiniteDifferences) {
  struct Case {
    Shape x;
    std::vector<int64_t> indices;
    Shape index_shape;
    int64_t axis;
    const char* what;
  };
  const Case cases[] = {
      {{3, 4}, {0, 3, 3, 3, -1, 9}, {3, 2}, 1, "repeated, negative and clamped"},
      {{1, 4}, {0, 0, 3, -1, 9, 1}, {3, 2}, 1, "x broadcast along the other axis"},
      {{3, 4}, {2, 0, -1, 5}, {1, 4}, 0, "indices broadcast along the other axis"},
      {{2, 3, 2}, {0, 2, 2, 1, -3, 1, 4, 0, 0, 2, 1, 1, 0, 0, 2, 2, 1, 1, -1, 0}, {2, 5, 2}, -2, "3-d, negative axis"},
      {{4}, {3, 3, -2}, {3}, 0, "1-d"},
  };
  uint64_t seed = 20;
  for (const Case& c : cases)
    for (DType index_dtype : {i32, i64}) {
      Inputs inputs{random_array(c.x, seed++), indices_of(c.indices, c.index_shape, index_dtype)};
      int64_t axis = c.axis;
      auto fn = [axis](const Inputs& in) { return take_along_axis(in[0], in[1], axis); };
      EXPECT_TRUE(check_derivatives(fn, inputs)) << c.what << " with " << describe(inputs[1]);
    }
}

TEST(IndexingDerivatives, TakeAlongAxisGradientIsAScatterAddOfTheUserLine) {
  // Row of x broadcast over three index rows: 0 twice, 3 three times (3, -1, 9), 1 once.
  Array x = random_array({1, 4}, 5);
  Array indices = indices_of({0, 0, 3, -1, 9, 1}, {3, 2}, i32);
  int line = __LINE__ + 1;
  auto fn = [](const Inputs& in) { return take_along_axis(in[0], in[1], 1); };
  Array dx = pull_back_first(fn, {x, indices}, ones({3, 2}, f64));
  EXPECT_TRUE(all_close(dx, array<double>({2, 1, 0, 3}, {1, 4}), 0, 0));

  // Traced, the reverse pass records take's transpose, scatter_add, at the
  // line that called take_along_axis. (The forward take itself is dead in a
  // graph that returns only the gradient, and is eliminated.)
  auto gradient = [&](const Array& x, const Array& indices) {
    auto [value, pullback] = vjp(fn, Inputs{x, indices});
    return std::get<0>(pullback(ones_like(value))).at(0);
  };
  Graph graph = make_graph("take_along_axis_gradient", gradient, x, indices);
  transform::verify(detail::ir_of(graph));
  EXPECT_FALSE(has_node(graph, ir::Primitive::take, line)) << graph;
  EXPECT_TRUE(has_node(graph, ir::Primitive::scatter_add, line)) << graph;
  Array traced = detail::interpret(graph, {x, indices}, {}).at(0);
  EXPECT_TRUE(all_close(traced, dx, 0, 0, "traced gradient"));
}

// ---- scatter_add --------------------------------------------------------------------

TEST(IndexingDerivatives, ScatterAddMatchesFiniteDifferencesInXAndUpdates) {
  struct Case {
    Shape x;
    std::vector<int64_t> indices;
    Shape index_shape;
    int64_t axis;
    Shape updates;
    const char* what;
  };
  const Case cases[] = {
      {{5, 3}, {0, 2, 2, -1, 9}, {5}, 0, {5, 3}, "repeated, negative and clamped"},
      {{3, 4}, {1, -2, 3, 3}, {2, 2}, 1, {3, 2, 2}, "2-d indices on axis 1"},
      {{2, 3, 2}, {0, 0, 2}, {3}, -2, {2, 3, 2}, "negative axis"},
      {{4}, {2}, {}, 0, {}, "0-d index and update"},
      {{3, 2}, {}, {0}, 0, {0, 2}, "no updates"},
  };
  uint64_t seed = 40;
  for (const Case& c : cases)
    for (DType index_dtype : {i32, i64}) {
      Inputs inputs{random_array(c.x, seed++), indices_of(c.indices, c.index_shape, index_dtype),
                    random_array(c.updates, seed++)};
      int64_t axis = c.axis;
      auto fn = [axis](const Inputs& in) { return scatter_add(in[0], in[1], in[2], axis); };
      EXPECT_TRUE(check_derivatives(fn, inputs)) << c.what << " with " << describe(inputs[1]);
    }
}

TEST(IndexingDerivatives, ScatterAddWithOneConstantOperand) {
  // A captured operand has no tangent: the forward rule skips or zero-fills it.
  Array indices = indices_of({1, 1, -1, 7}, {4}, i32);
  Array constant_x = random_array({4, 2}, 60);
  Array constant_updates = random_array({4, 2}, 61);
  auto updates_only = [&](const Inputs& in) { return scatter_add(constant_x, indices, in[0], 0); };
  auto x_only = [&](const Inputs& in) { return scatter_add(in[0], indices, constant_updates, 0); };
  EXPECT_TRUE(check_derivatives(updates_only, {random_array({4, 2}, 62)}));
  EXPECT_TRUE(check_derivatives(x_only, {random_array({4, 2}, 63)}));
}

TEST(IndexingDerivatives, ScatterAddTransposeGathersWithTheSameNormalization) {
  Inputs inputs{zeros({4}, f64), indices_of({1, 1, -1, 7, -9}, {5}, i64), zeros({5}, f64)};
  auto fn = [](const Inputs& in) { return scatter_add(in[0], in[1], in[2], 0); };
  Array seed = array<double>({10, 20, 30, 40});
  auto [value, pullback] = vjp(fn, inputs);
  auto [cotangents] = pullback(seed);
  EXPECT_TRUE(all_close(cotangents.at(0), seed, 0, 0, "x"));
  EXPECT_TRUE(all_close(cotangents.at(2), array<double>({20, 20, 40, 40, 10}), 0, 0, "updates"));
}

// ---- dynamic_slice ------------------------------------------------------------------

struct SliceCase {
  Shape x;
  std::vector<int64_t> starts;
  Shape sizes;
  const char* what;
};

TEST(IndexingDerivatives, DynamicSliceWithArrayStartsMatchesFiniteDifferences) {
  const SliceCase cases[] = {
      {{5, 4}, {1, 2}, {2, 2}, "in range"},
      {{5, 4}, {4, -1}, {3, 2}, "clamped to fit and a negative start"},
      {{5, 4}, {-100, 100}, {2, 4}, "far out of range"},
      {{2, 3, 4}, {1, -2, 1}, {1, 2, 3}, "3-d"},
      {{4, 3}, {2, 1}, {0, 2}, "zero-size window"},
      {{}, {}, {}, "0-d"},
  };
  uint64_t seed = 80;
  for (const SliceCase& c : cases)
    for (DType start_dtype : {i32, i64}) {
      Inputs inputs{random_array(c.x, seed++)};
      for (int64_t start : c.starts) inputs.push_back(indices_of({start}, {}, start_dtype));
      Shape sizes = c.sizes;
      auto fn = [sizes](const Inputs& in) {
        std::vector<Operand> starts(in.begin() + 1, in.end());
        return dynamic_slice(in[0], starts, sizes);
      };
      EXPECT_TRUE(check_derivatives(fn, inputs)) << c.what << " with " << dtype_name(start_dtype) << " starts";
    }
}

TEST(IndexingDerivatives, DynamicSliceWithNumberStartsWritesBackAtTheClampedWindow) {
  auto fn = [](const Inputs& in) { return dynamic_slice(in[0], {4}, {2}); };
  Inputs inputs{random_array({5}, 90)};
  EXPECT_TRUE(check_derivatives(fn, inputs));
  Array dx = pull_back_first(fn, inputs, array<double>({7, 9}));
  EXPECT_TRUE(all_close(dx, array<double>({0, 0, 0, 7, 9}), 0, 0));
}

// ---- dynamic_update_slice ---------------------------------------------------------

TEST(IndexingDerivatives, DynamicUpdateSliceMatchesFiniteDifferences) {
  const SliceCase cases[] = {
      {{5, 4}, {1, 1}, {2, 3}, "in range"},           {{5, 4}, {9, -1}, {2, 3}, "clamped and negative starts"},
      {{5, 4}, {-2, 0}, {3, 4}, "full-width update"}, {{2, 3, 4}, {1, 1, -3}, {1, 2, 2}, "3-d"},
      {{4, 3}, {1, 1}, {0, 3}, "empty update"},       {{}, {}, {}, "0-d"},
  };
  uint64_t seed = 100;
  for (const SliceCase& c : cases)
    for (DType start_dtype : {i32, i64}) {
      Inputs inputs{random_array(c.x, seed++), random_array(c.sizes, seed++)};
      for (int64_t start : c.starts) inputs.push_back(indices_of({start}, {}, start_dtype));
      auto fn = [](const Inputs& in) {
        std::vector<Operand> starts(in.begin() + 2, in.end());
        return dynamic_update_slice(in[0], in[1], starts);
      };
      EXPECT_TRUE(check_derivatives(fn, inputs)) << c.what << " with " << dtype_name(start_dtype) << " starts";
    }
}

TEST(IndexingDerivatives, DynamicUpdateSliceWithOneConstantOperand) {
  Array start = indices_of({9}, {}, i32);
  Array constant_x = random_array({5}, 120);
  Array constant_update = random_array({2}, 121);
  auto update_only = [&](const Inputs& in) { return dynamic_update_slice(constant_x, in[0], {start}); };
  auto x_only = [&](const Inputs& in) { return dynamic_update_slice(in[0], constant_update, {start}); };
  EXPECT_TRUE(check_derivatives(update_only, {random_array({2}, 122)}));
  EXPECT_TRUE(check_derivatives(x_only, {random_array({5}, 123)}));
}

TEST(IndexingDerivatives, DynamicUpdateSliceSplitsTheCotangentAtTheClampedWindow) {
  // Start 9 clamps to 3 for a window of 2 in 5.
  Inputs inputs{random_array({5}, 124), random_array({2}, 125), indices_of({9}, {}, i64)};
  auto fn = [](const Inputs& in) { return dynamic_update_slice(in[0], in[1], {in[2]}); };
  auto [value, pullback] = vjp(fn, inputs);
  auto [cotangents] = pullback(array<double>({1, 2, 3, 4, 5}));
  EXPECT_TRUE(all_close(cotangents.at(0), array<double>({1, 2, 3, 0, 0}), 0, 0, "x"));
  EXPECT_TRUE(all_close(cotangents.at(1), array<double>({4, 5}), 0, 0, "update"));
  EXPECT_FALSE(cotangents.at(2).defined());
}

// ---- derivatives of the derivatives ---------------------------------------------

TEST(IndexingDerivatives, TransposesDifferentiateAgain) {
  // The pullback of take is a scatter_add and that of dynamic_slice a
  // dynamic_update_slice; both are linear in the cotangent, whose
  // derivatives are checked here.
  Array indices = indices_of({0, 2, 2, -1, 8}, {5}, i32);
  Array x = random_array({4, 3}, 130);
  auto take_pullback = [&](const Inputs& in) {
    auto inner = [&](const Inputs& primal) { return take(primal[0], indices, 0); };
    return pull_back_first(inner, {x}, in[0]);
  };
  EXPECT_TRUE(check_derivatives(take_pullback, {random_array({5, 3}, 131)}));

  Array start = indices_of({-1}, {}, i32);
  auto slice_pullback = [&](const Inputs& in) {
    auto inner = [&](const Inputs& primal) { return dynamic_slice(primal[0], {start, 1}, {2, 2}); };
    return pull_back_first(inner, {x}, in[0]);
  };
  EXPECT_TRUE(check_derivatives(slice_pullback, {random_array({2, 2}, 132)}));
}

// ---- one_hot in a loss ------------------------------------------------------------

Array cross_entropy(const Array& logits, const Array& labels) {
  int64_t classes = logits.shape().back();
  return -sum(one_hot(labels, classes, logits.dtype()) * log_softmax(logits));
}

TEST(IndexingDerivatives, OneHotCrossEntropyGradientInTheLogits) {
  // Label 7 is out of range: its one-hot row is zeros, so its logits get no gradient.
  Array logits = random_array({4, 5}, 140);
  Array labels = indices_of({0, 4, 2, 7}, {4}, i32);
  auto fn = [](const Inputs& in) { return cross_entropy(in[0], in[1]); };
  EXPECT_TRUE(check_derivatives(fn, {logits, labels}));

  auto [loss, gradient] = value_and_grad(cross_entropy)(logits, labels);
  Array hot = one_hot(labels, 5, f64);
  Array expected = softmax(logits) * sum(hot, -1, true) - hot;
  EXPECT_TRUE(all_close(gradient, expected, 1e-12, 1e-14, "softmax - one_hot"));
}

// ---- integer operands ---------------------------------------------------------------

TEST(IndexingDerivatives, IndicesAndStartsGetNoGradient) {
  Inputs inputs{random_array({4, 3}, 150), indices_of({1, 3}, {2}, i32), indices_of({2}, {}, i64)};
  auto fn = [](const Inputs& in) { return dynamic_slice(take(in[0], in[1], 0), {in[2], 0}, {1, 3}); };
  auto [value, pullback] = vjp(fn, inputs);
  auto [cotangents] = pullback(ones({1, 3}, f64));
  ASSERT_EQ(cotangents.size(), 3u);
  EXPECT_TRUE(all_close(cotangents[0], array<double>({0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1}, {4, 3}), 0, 0));
  EXPECT_FALSE(cotangents[1].defined());
  EXPECT_FALSE(cotangents[2].defined());

  // Through grad: only the floating argument is asked for.
  auto loss = [](const Array& x, const Array& indices) { return sum(take(x, indices, 1)); };
  Array dx = grad(loss)(inputs[0], inputs[1]);
  // Index 3 clamps to column 2.
  EXPECT_TRUE(all_close(dx, array<double>({0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1}, {4, 3}), 0, 0));
}

TEST(IndexingDerivatives, AskingForTheGradientOfAnIndexRaises) {
  Array x = random_array({4, 3}, 160);
  Array indices = indices_of({1, 3}, {2}, i32);
  Array start = indices_of({1}, {}, i64);
  auto take_loss = [](const Array& x, const Array& indices) { return sum(take(x, indices, 0)); };
  auto slice_loss = [](const Array& x, const Array& start) { return sum(dynamic_slice(x, {start, 0}, {2, 3})); };
  auto expect_error = [](auto&& call, const std::string& leaf) {
    try {
      call();
      ADD_FAILURE() << "expected kiln::Error for a " << leaf << " leaf";
    } catch (const Error& e) {
      std::string message = e.what();
      EXPECT_NE(message.find("[grad"), std::string::npos) << message;
      EXPECT_NE(message.find(leaf), std::string::npos) << message;
      EXPECT_NE(message.find("no gradient"), std::string::npos) << message;
    }
  };
  expect_error([&] { grad(take_loss, {0, 1})(x, indices); }, "i32[2]");
  expect_error([&] { grad(take_loss, {1})(x, indices); }, "i32[2]");
  expect_error([&] { grad(slice_loss, {0, 1})(x, start); }, "i64[]");
  EXPECT_THROW(value_and_grad(take_loss, {1})(x, indices), Error);
}

// ---- f32 against f64, and under jit -----------------------------------------------

Array indexing_loss(const Array& x, const Array& indices, const Array& columns, const Array& start) {
  Array gathered = take_along_axis(x, indices, 1);
  Array window = dynamic_slice(x, {start, 1}, {2, 2});
  Array updated = dynamic_update_slice(x, square(window), {0, start});
  Array scattered = scatter_add(updated, columns, gathered * gathered, 1);
  return sum(square(scattered)) + sum(take(x, indices, std::nullopt));
}

TEST(IndexingDerivatives, ValueAndGradF32AgreesWithF64AndUnderJit) {
  Array x = random_array({3, 4}, 170);
  Array indices = indices_of({0, 3, 3, -1, 9, 1}, {3, 2}, i32);
  Array columns = indices_of({3, -1}, {2}, i64);
  Array start = indices_of({-1}, {}, i32);
  auto fn = [&](const Inputs& in) { return indexing_loss(in[0], indices, columns, start); };
  EXPECT_TRUE(check_derivatives(fn, {x}));

  auto value_and_gradient = value_and_grad(indexing_loss);
  auto [value, gradient] = value_and_gradient(x, indices, columns, start);
  auto [value32, gradient32] = value_and_gradient(astype(x, f32), indices, columns, start);
  EXPECT_EQ(gradient32.dtype(), f32);
  EXPECT_TRUE(all_close(astype(value32, f64), value, 1e-5, 1e-5, "f32 value"));
  EXPECT_TRUE(all_close(astype(gradient32, f64), gradient, 1e-4, 1e-4, "f32 gradient"));

  auto jitted = jit(value_and_gradient);
  for (int call = 0; call < 2; ++call) {
    auto [jit_value, jit_gradient] = jitted(x, indices, columns, start);
    EXPECT_TRUE(all_close(jit_value, value, 1e-12, 1e-12, "jit value"));
    EXPECT_TRUE(all_close(jit_gradient, gradient, 1e-12, 1e-12, "jit gradient"));
  }
}

}  // namespace
}  // namespace kiln
