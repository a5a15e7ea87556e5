// Interpreted innermost-axis reductions (backend/llvm/interpreted_inner.h):
// a floating sum or product over its innermost axis, followed in C++ in the
// order of the vector shape kiln fixes for its loop, gives the compiled
// kernel's bits (its quick and its optimized code) at every row length
// around the vector, partial-vector and folding boundaries, on -0.0,
// infinities, NaN, subnormals and values whose f32 sums would overflow.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/llvm/interpreted_inner.h"
#include "cache/backend_choice.h"
#include "core/array_impl.h"
#include "runtime/compile_profile.h"
#include "trace/trace.h"

namespace kiln {
namespace {

class InterpretedInner : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cache::native_backend_chosen()) GTEST_SKIP() << "interpreted reductions are the native backend's code";
  }
};

using Reduce = Array (*)(const Array&, Axes, bool, Location);
Array sum_of(const Array& x, Axes axes, bool keepdims, Location where) { return sum(x, axes, keepdims, where); }
Array product_of(const Array& x, Axes axes, bool keepdims, Location where) { return prod(x, axes, keepdims, where); }

std::shared_ptr<const ir::Graph> reduction_graph(Reduce reduce, const Array& x, std::vector<int64_t> axes) {
  auto record = [&](detail::TraceSession& session) {
    Array placeholder = session.argument(detail::allocate(detail::impl(x)->type));
    return std::vector<Array>{reduce(placeholder, Axes(axes), false, Location::current())};
  };
  return detail::shared_ir(detail::trace("inner reduction", Location(), record).graph);
}

std::string bytes_of(const Array& array) {
  const detail::ArrayImpl& impl = *detail::impl(array);
  return std::string(static_cast<const char*>(impl.buffer->data()), impl.buffer->bytes());
}

// Ordinary values of mixed magnitudes (so the order of additions shows in
// the last bit), with rows of -0.0 and rows holding an infinity, a NaN,
// subnormals or values near the largest f32.
template <class T>
Array rows_of_every_kind(int64_t rows, int64_t count, bool product, unsigned seed) {
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
void expect_interpreted_equals_compiled(Reduce reduce, bool product, const char* name) {
  std::vector<int64_t> counts;
  for (int64_t count = 1; count <= 70; ++count) counts.push_back(count);
  for (int64_t count : {95, 96, 97, 127, 128, 129, 255, 256, 257, 1000, 1031}) counts.push_back(count);
  unsigned seed = 1;
  for (int64_t count : counts) {
    for (int64_t rows : {int64_t{1}, int64_t{6}}) {
      Array x = rows_of_every_kind<T>(rows, count, product, seed++);
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
  expect_interpreted_equals_compiled<float>(&sum_of, false, "f32 sum");
  expect_interpreted_equals_compiled<double>(&sum_of, false, "f64 sum");
  expect_interpreted_equals_compiled<float>(&product_of, true, "f32 product");
  expect_interpreted_equals_compiled<double>(&product_of, true, "f64 product");
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
