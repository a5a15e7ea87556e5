// Interpreted floating reductions: a sum or product that C++ adds in the
// compiled kernel's order gives the compiled kernel's bits (its quick and
// its optimized code).
//  - Over leading or middle axes (backend/llvm/interpreted_rows.h): row
//    counts around the f32 blocks, on columns of -0.0, infinities, NaN,
//    subnormals and values whose f32 partial sums overflow.
//  - Over the innermost axis (backend/llvm/interpreted_inner.h): every row
//    length around the vector, partial-vector and folding boundaries, on the
//    same kinds of values.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/llvm/interpreted_inner.h"
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
    if (!cache::native_backend_chosen()) GTEST_SKIP() << "interpreted reductions are the native backend's code";
  }
};

class InterpretedInner : public InterpretedRows {};

using Reduce = Array (*)(const Array&, Axes, bool, Location);

std::shared_ptr<const ir::Graph> reduction_graph(Reduce reduce, const Array& x, std::vector<int64_t> axes) {
  auto record = [&](detail::TraceSession& session) {
    Array placeholder = session.argument(detail::allocate(detail::impl(x)->type));
    return std::vector<Array>{reduce(placeholder, Axes(axes), false, Location::current())};
  };
  return detail::shared_ir(detail::trace("reduction", Location(), record).graph);
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

// Ordinary values of mixed magnitudes (so the order of additions shows in
// the last bit), with rows of -0.0 and rows holding an infinity, a NaN,
// subnormals or values near the largest f32.
template <class T>
Array inner_rows_of_every_kind(int64_t rows, int64_t count, bool product, unsigned seed) {
  using Limits = std::numeric_limits<T>;
  std::mt19937 random(seed);
  std::normal_distribution<double> normal(0, 1);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<T> values(static_cast<size_t>(rows * count));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t e = 0; e < count; ++e) {
      double ordinary = product ? 1.0 + 0.01 * normal(random) : std::ldexp(normal(random), exponent(random));
      T value = static_cast<T>(ordinary);
      switch (r % 6) {
        case 1: value = -T(0); break;
        case 2: value = e == count / 2 ? Limits::infinity() : value; break;
        case 3: value = e == count / 3 ? Limits::quiet_NaN() : value; break;
        case 4: value = static_cast<T>(ordinary * double(Limits::denorm_min()) * 8); break;
        default: break;
      }
      values[static_cast<size_t>(r * count + e)] = value;
    }
  return array(values, {rows, count});
}

template <class T>
void expect_interpreted_rows_of_every_length(Reduce reduce, bool product, const char* name) {
  std::vector<int64_t> counts;
  for (int64_t count = 1; count <= 70; ++count) counts.push_back(count);
  for (int64_t count : {95, 96, 97, 127, 128, 129, 255, 256, 257, 1000, 1031}) counts.push_back(count);
  unsigned seed = 1;
  for (int64_t count : counts) {
    for (int64_t rows : {int64_t{1}, int64_t{6}}) {
      Array x = inner_rows_of_every_kind<T>(rows, count, product, seed++);
      // One row: the reduction of a vector to one value.
      if (rows == 1) x = reshape(x, {count});
      std::shared_ptr<const ir::Graph> graph = reduction_graph(reduce, x, {static_cast<int64_t>(x.ndim()) - 1});
      std::string label = std::string(name) + " of " + detail::impl(x)->type.to_string();
      std::shared_ptr<const runtime::Executable> interpreted = llvm_backend::interpreted_inner_executable(graph);
      ASSERT_NE(interpreted, nullptr) << label;
      const std::vector<Array> arguments{x};
      std::string got = bytes_of(interpreted->run(arguments, {}).at(0));
      EXPECT_EQ(got, bytes_of(cache::default_backend().compile(graph)->run(arguments, {}).at(0)))
          << label << ", optimized";
      runtime::CodeQualityScope quick(runtime::CodeQuality::quick);
      EXPECT_EQ(got, bytes_of(cache::default_backend().compile(graph)->run(arguments, {}).at(0))) << label << ", quick";
    }
  }
}

TEST_F(InterpretedInner, SumsAndProductsEqualTheirCompiledKernelsBitForBitAtEveryLength) {
  expect_interpreted_rows_of_every_length<float>(&sum_of, false, "f32 sum");
  expect_interpreted_rows_of_every_length<double>(&sum_of, false, "f64 sum");
  expect_interpreted_rows_of_every_length<float>(&product_of, true, "f32 product");
  expect_interpreted_rows_of_every_length<double>(&product_of, true, "f64 product");
}

TEST_F(InterpretedInner, WhatTheInterpreterDoesNotFollowIsRefused) {
  Array x = random::normal(random::key(1), {40, 5, 3});
  auto refused = [&](Reduce reduce, const Array& input, std::vector<int64_t> axes) {
    return llvm_backend::interpreted_inner_executable(reduction_graph(reduce, input, axes)) == nullptr;
  };
  EXPECT_TRUE(refused(&sum_of, x, {1, 2})) << "several axes";
  EXPECT_TRUE(refused(&sum_of, x, {0})) << "a leading axis (interpreted_rows.h)";
  EXPECT_TRUE(refused(&sum_of, astype(x, i32), {2})) << "integers";
  EXPECT_TRUE(refused(&sum_of, random::normal(random::key(2), {1 << 16}), {0})) << "split across threads";
  EXPECT_TRUE(refused(&sum_of, random::normal(random::key(3), {600, 512}), {1})) << "over 2^18 elements";
  EXPECT_FALSE(refused(&sum_of, x, {2}));
  EXPECT_FALSE(refused(&sum_of, random::normal(random::key(4), {1000}), {0}));
}

}  // namespace
}  // namespace kiln
