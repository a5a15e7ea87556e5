// Scalar programs (backend/llvm/scalar_program.h): an elementwise
// operation's native code interpreted step by step gives the compiled
// kernel's results bit for bit, on special values, on every binade and on
// random bit patterns, for every function of kiln's vector math; operations
// whose code calls libmvec are refused, not run approximately.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/llvm/scalar_program.h"
#include "cache/backend_choice.h"
#include "core/array_impl.h"
#include "trace/trace.h"

namespace kiln {
namespace {

using Operation = std::function<Array(const Array&)>;

std::shared_ptr<const ir::Graph> graph_of(const Operation& operation, const Array& x) {
  auto record = [&](detail::TraceSession& session) {
    return std::vector<Array>{operation(session.argument(detail::allocate(detail::impl(x)->type)))};
  };
  return detail::shared_ir(detail::trace("scalar program", Location(), record).graph);
}

// Special values, both signs of every binade, and random bit patterns.
template <class T>
std::vector<T> inputs() {
  using Limits = std::numeric_limits<T>;
  std::vector<T> values = {0,
                           -T(0),
                           1,
                           -1,
                           Limits::infinity(),
                           -Limits::infinity(),
                           Limits::quiet_NaN(),
                           -Limits::quiet_NaN(),
                           Limits::min(),
                           Limits::denorm_min(),
                           Limits::max(),
                           Limits::lowest(),
                           T(0.5),
                           T(1e-3),
                           T(0.9999),
                           T(1.0001),
                           T(88.7),
                           T(-103.9),
                           T(709.7),
                           T(-745.1),
                           T(20),
                           T(-20)};
  for (int exponent = Limits::min_exponent - Limits::digits; exponent < Limits::max_exponent; ++exponent)
    for (T mantissa : {T(0.5), T(0.75), T(0.999)}) {
      values.push_back(std::ldexp(mantissa, exponent));
      values.push_back(-std::ldexp(mantissa, exponent));
    }
  std::mt19937_64 random(7);
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  for (int k = 0; k < 20000; ++k) {
    auto bits = static_cast<Bits>(random());
    T value;
    std::memcpy(&value, &bits, sizeof value);
    values.push_back(value);
  }
  std::uniform_real_distribution<double> ordinary(-12.0, 12.0);
  for (int k = 0; k < 20000; ++k) values.push_back(static_cast<T>(ordinary(random)));
  return values;
}

std::vector<char> bytes_of(const Array& array) {
  const detail::ArrayImpl& impl = *detail::impl(array);
  auto* data = static_cast<const char*>(impl.buffer->data());
  return {data, data + impl.type.size() * static_cast<int64_t>(dtype_size(impl.type.dtype))};
}

struct Case {
  const char* name;
  Operation operation;
};

const std::vector<Case>& interpreted_cases() {
  static const std::vector<Case> cases = {
      {"exp", [](const Array& x) { return exp(x); }},         {"exp2", [](const Array& x) { return exp2(x); }},
      {"expm1", [](const Array& x) { return expm1(x); }},     {"log", [](const Array& x) { return log(x); }},
      {"log2", [](const Array& x) { return log2(x); }},       {"log10", [](const Array& x) { return log10(x); }},
      {"log1p", [](const Array& x) { return log1p(x); }},     {"tanh", [](const Array& x) { return tanh(x); }},
      {"sigmoid", [](const Array& x) { return sigmoid(x); }}, {"erf", [](const Array& x) { return erf(x); }},
      {"erfinv", [](const Array& x) { return erfinv(x); }},
  };
  return cases;
}

class ScalarPrograms : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cache::native_backend_chosen()) GTEST_SKIP() << "scalar programs are the native backend's code";
  }
};

template <class T>
void expect_interpreted_equals_compiled(DType dtype) {
  std::vector<T> values = inputs<T>();
  Array x = array(values, {static_cast<int64_t>(values.size())});
  ASSERT_EQ(x.dtype(), dtype);
  for (const Case& c : interpreted_cases()) {
    std::shared_ptr<const ir::Graph> graph = graph_of(c.operation, x);
    std::shared_ptr<const runtime::Executable> interpreted = llvm_backend::interpreted_executable(graph);
    ASSERT_NE(interpreted, nullptr) << c.name << " " << dtype_name(dtype) << " is not interpreted";
    std::shared_ptr<const runtime::Executable> compiled = cache::default_backend().compile(graph);
    std::vector<Array> arguments = {x};
    std::vector<char> expected = bytes_of(compiled->run(arguments, {}).at(0));
    std::vector<char> got = bytes_of(interpreted->run(arguments, {}).at(0));
    ASSERT_EQ(got.size(), expected.size());
    size_t element = dtype_size(dtype), differing = 0, first = 0;
    for (size_t k = 0; k < values.size(); ++k)
      if (std::memcmp(got.data() + k * element, expected.data() + k * element, element) != 0 && differing++ == 0)
        first = k;
    EXPECT_EQ(differing, 0u) << c.name << " " << dtype_name(dtype) << ": " << differing << " of " << values.size()
                             << " elements differ, the first at input " << values[first];
  }
}

TEST_F(ScalarPrograms, VectorMathInterpretedEqualsTheCompiledKernelBitForBitF32) {
  expect_interpreted_equals_compiled<float>(f32);
}

TEST_F(ScalarPrograms, VectorMathInterpretedEqualsTheCompiledKernelBitForBitF64) {
  expect_interpreted_equals_compiled<double>(f64);
}

// Operands read in blocks: every length around the block's, and two operands.
TEST_F(ScalarPrograms, BinaryOperationsAndTailsOfEveryLength) {
  for (int64_t n : {1, 2, 15, 255, 256, 257, 1000}) {
    Array a = random::uniform(random::key(static_cast<uint64_t>(n)), {n}, f32, -3.0, 3.0);
    Array b = random::uniform(random::key(static_cast<uint64_t>(n) + 1), {n}, f32, 0.1, 2.0);
    auto record = [&](detail::TraceSession& session) {
      Array x = session.argument(detail::allocate(detail::impl(a)->type));
      Array y = session.argument(detail::allocate(detail::impl(b)->type));
      return std::vector<Array>{x / y};
    };
    std::vector<Array> arguments = {a, b};
    auto quotient = detail::shared_ir(detail::trace("divide", Location(), record).graph);
    auto interpreted = llvm_backend::interpreted_executable(quotient);
    ASSERT_NE(interpreted, nullptr) << "n = " << n;
    EXPECT_EQ(bytes_of(interpreted->run(arguments, {}).at(0)),
              bytes_of(cache::default_backend().compile(quotient)->run(arguments, {}).at(0)))
        << "n = " << n;
    interpreted = llvm_backend::interpreted_executable(graph_of([](const Array& x) { return exp(x); }, a));
    ASSERT_NE(interpreted, nullptr);
    EXPECT_EQ(bytes_of(interpreted->run(std::vector<Array>{a}, {}).at(0)), bytes_of(exp(a))) << "n = " << n;
  }
}

TEST_F(ScalarPrograms, WhatTheInterpreterCannotRunIsRefused) {
  Array x = random::uniform(random::key(3), {64}, f32, 0.1, 3.0);
  // libmvec's vector and scalar functions round differently.
  for (const Operation& operation :
       std::vector<Operation>{[](const Array& v) { return sin(v); }, [](const Array& v) { return cos(v); },
                              [](const Array& v) { return pow(v, v); }})
    EXPECT_EQ(llvm_backend::interpreted_executable(graph_of(operation, x)), nullptr);
  // Two operations: not an eager operation's graph.
  EXPECT_EQ(llvm_backend::interpreted_executable(graph_of([](const Array& v) { return tanh(v) * 2.0f; }, x)), nullptr);
  // Past 2^18 elements a compiled kernel wins.
  Array large = zeros({(int64_t{1} << 18) + 1});
  EXPECT_EQ(llvm_backend::interpreted_executable(graph_of([](const Array& v) { return exp(v); }, large)), nullptr);
  EXPECT_NE(llvm_backend::interpreted_executable(graph_of([](const Array& v) { return exp(v); }, x)), nullptr);
}

}  // namespace
}  // namespace kiln
