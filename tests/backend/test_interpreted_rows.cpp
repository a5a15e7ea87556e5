// Interpreted column reductions (backend/llvm/interpreted_rows.h): a sum or
// product over leading or middle axes, added in C++ in the compiled
// kernel's order, gives the compiled kernel's bits (its quick code and its
// optimized code) on row counts around the f32 blocks, on columns of -0.0,
// infinities, NaN, subnormals and values whose f32 partial sums overflow.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/llvm/interpreted_rows.h"
#include "cache/backend_choice.h"
#include "core/array_impl.h"
#include "runtime/compile_profile.h"
#include "trace/trace.h"

namespace kiln {
namespace {

class InterpretedRows : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cache::native_backend_chosen()) GTEST_SKIP() << "interpreted rows are the native backend's code";
  }
};

using Reduce = Array (*)(const Array&, Axes, bool, Location);

std::shared_ptr<const ir::Graph> reduction_graph(Reduce reduce, const Array& x, std::vector<int64_t> axes) {
  auto record = [&](detail::TraceSession& session) {
    Array placeholder = session.argument(detail::allocate(detail::impl(x)->type));
    return std::vector<Array>{reduce(placeholder, Axes(axes), false, Location::current())};
  };
  return detail::shared_ir(detail::trace("column reduction", Location(), record).graph);
}

std::string bytes_of(const Array& array) {
  const detail::ArrayImpl& impl = *detail::impl(array);
  return std::string(static_cast<const char*>(impl.buffer->data()), impl.buffer->bytes());
}

// Mostly ordinary values, with whole columns of -0.0, infinities, NaN,
// subnormals and values near the largest f32.
template <class T>
Array columns_of_every_kind(const Shape& shape, size_t inner, unsigned seed) {
  using Limits = std::numeric_limits<T>;
  std::mt19937 random(seed);
  std::normal_distribution<double> normal(0, 1);
  int64_t size = 1;
  for (int64_t extent : shape) size *= extent;
  std::vector<T> values(static_cast<size_t>(size));
  for (size_t i = 0; i < values.size(); ++i) {
    size_t column = i % inner;
    double ordinary = normal(random);
    T value = static_cast<T>(ordinary);
    switch (column % 8) {
      case 1: value = -T(0); break;
      case 2: value = i % 5 == 0 ? Limits::infinity() : value; break;
      case 3: value = i % 7 == 0 ? Limits::quiet_NaN() : value; break;
      case 4: value = static_cast<T>(ordinary * double(Limits::denorm_min()) * 8); break;
      case 5: value = static_cast<T>(ordinary * 1e37); break;  // f32 partials overflow, f64 totals do not
      default: break;
    }
    values[i] = value;
  }
  return array(values, shape);
}

struct Case {
  Shape shape;
  std::vector<int64_t> axes;
};

template <class T>
void expect_interpreted_equals_compiled(Reduce reduce, const char* name) {
  const std::vector<Case> cases = {
      {{256, 512}, {0}},        {{256, 10}, {0}},  {{301, 77}, {0}}, {{9, 40, 33}, {0, 1}}, {{5, 7, 40}, {1}},
      {{3, 17, 4, 20}, {1, 2}}, {{1000, 16}, {0}}, {{8, 3}, {0}},    {{1, 50}, {0}},        {{0, 20}, {0}},
  };
  unsigned seed = 1;
  for (const Case& c : cases) {
    size_t inner = 1;
    for (size_t d = static_cast<size_t>(c.axes.back()) + 1; d < c.shape.size(); ++d) inner *= c.shape[d];
    Array x = columns_of_every_kind<T>(c.shape, inner, seed++);
    std::shared_ptr<const ir::Graph> graph = reduction_graph(reduce, x, c.axes);
    std::string label = std::string(name) + " of " + detail::impl(x)->type.to_string();
    std::shared_ptr<const runtime::Executable> interpreted = llvm_backend::interpreted_rows_executable(graph);
    const std::vector<Array> arguments{x};
    ASSERT_NE(interpreted, nullptr) << label;
    std::string got = bytes_of(interpreted->run(arguments, {}).at(0));
    EXPECT_EQ(got, bytes_of(cache::default_backend().compile(graph)->run(arguments, {}).at(0)))
        << label << ", optimized";
    runtime::CodeQualityScope quick(runtime::CodeQuality::quick);
    EXPECT_EQ(got, bytes_of(cache::default_backend().compile(graph)->run(arguments, {}).at(0))) << label << ", quick";
  }
}

Array sum_of(const Array& x, Axes axes, bool keepdims, Location where) { return sum(x, axes, keepdims, where); }
Array product_of(const Array& x, Axes axes, bool keepdims, Location where) { return prod(x, axes, keepdims, where); }
Array max_of(const Array& x, Axes axes, bool keepdims, Location where) { return max(x, axes, keepdims, where); }

TEST_F(InterpretedRows, SumsAndProductsEqualTheirCompiledKernelsBitForBit) {
  expect_interpreted_equals_compiled<float>(&sum_of, "f32 sum");
  expect_interpreted_equals_compiled<double>(&sum_of, "f64 sum");
  expect_interpreted_equals_compiled<float>(&product_of, "f32 product");
  expect_interpreted_equals_compiled<double>(&product_of, "f64 product");
}

TEST_F(InterpretedRows, WhatTheCompiledKernelDoesNotAddRowByRowIsRefused) {
  Array x = random::normal(random::key(1), {40, 5, 3});
  auto refused = [&](Reduce reduce, const Array& input, std::vector<int64_t> axes) {
    return llvm_backend::interpreted_rows_executable(reduction_graph(reduce, input, axes)) == nullptr;
  };
  EXPECT_TRUE(refused(&sum_of, x, {2})) << "innermost axis: the vectorizer's partial sums";
  EXPECT_TRUE(refused(&sum_of, x, {1})) << "middle axis over rows of 3: added otherwise";
  EXPECT_TRUE(refused(&sum_of, x, {0, 1, 2})) << "to one value";
  EXPECT_TRUE(refused(&max_of, x, {0})) << "max rounds as its reference kernel: nothing to interpret";
  EXPECT_TRUE(refused(&sum_of, astype(x, i32), {0})) << "integers";
  EXPECT_TRUE(refused(&sum_of, random::normal(random::key(2), {600, 512}), {0})) << "over 2^18 elements";
  EXPECT_FALSE(refused(&sum_of, x, {0}));
}

}  // namespace
}  // namespace kiln
