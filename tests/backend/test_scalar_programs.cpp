// Scalar programs (backend/llvm/scalar_program.h): an elementwise
// operation's native code interpreted step by step gives the compiled
// kernel's results bit for bit, on special values, on every binade and on
// random bit patterns. The sweep takes every elementwise primitive of the
// rule table the interpreter accepts, so a primitive added later is checked
// the day the first tier starts interpreting it; kiln's vector math must be
// among them. Operations whose code calls libmvec are refused, not run
// approximately.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/llvm/scalar_program.h"
#include "cache/backend_choice.h"
#include "core/allocator.h"
#include "core/array_impl.h"
#include "ir/primitive.h"
#include "ops/common/rules.h"
#include "support/primitive.h"
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

std::vector<char> bytes_of_run(const runtime::Executable& executable, const std::vector<Array>& arguments) {
  return bytes_of(executable.run(arguments, {}).at(0));
}

// The graph of `op` applied to `arity` operands of `dtype` with default
// attributes, or null where the primitive takes no such operands (kiln::Error)
// or needs attributes (a primitive with integer attributes reads them unchecked).
std::shared_ptr<const ir::Graph> primitive_graph(ir::Primitive op, size_t arity, DType dtype, int64_t size) {
  auto record = [&](detail::TraceSession& session) {
    std::vector<Array> operands;
    for (size_t k = 0; k < arity; ++k) operands.push_back(session.argument(detail::allocate({dtype, false, {size}})));
    return std::vector<Array>{testing::primitive(op, operands, {}, {}, dtype)};
  };
  try {
    return detail::shared_ir(detail::trace(std::string(ir::primitive_name(op)), Location(), record).graph);
  } catch (const Error&) {
    return nullptr;
  } catch (const std::out_of_range&) {
    return nullptr;
  }
}

// Every elementwise primitive over the first one to three of `operands` (of
// `dtype`, `count` elements each) that the interpreter accepts, against its
// compiled kernel, element by element; returns their names. `describe(k)`
// names element k's operands where they differ.
std::set<std::string> expect_sweep_equals_kernels(DType dtype, const std::vector<Array>& operands, size_t count,
                                                  const std::function<std::string(size_t)>& describe) {
  std::set<std::string> interpreted;
  for (int index = 0; index < ir::primitive_count; ++index) {
    auto op = static_cast<ir::Primitive>(index);
    if (ops::rules(op).fusion != ops::Fusion::elementwise) continue;
    // The fewest operands it takes (a rule reads the operands it needs and
    // ignores more).
    std::shared_ptr<const ir::Graph> graph;
    size_t arity = 0;
    while (!graph && ++arity <= 3) graph = primitive_graph(op, arity, dtype, static_cast<int64_t>(count));
    if (!graph) continue;
    std::shared_ptr<const runtime::Executable> program = llvm_backend::interpreted_executable(graph);
    if (!program) continue;
    std::string name = std::string(ir::primitive_name(op)) + "/" + std::to_string(arity);
    interpreted.insert(name);
    std::vector<Array> arguments(operands.begin(), operands.begin() + static_cast<std::ptrdiff_t>(arity));
    std::vector<char> expected = bytes_of_run(*cache::default_backend().compile(graph), arguments);
    std::vector<char> got = bytes_of_run(*program, arguments);
    EXPECT_EQ(got.size(), expected.size()) << name;
    if (got.size() != expected.size()) continue;
    size_t element = got.size() / count, differing = 0, first = 0;
    for (size_t k = 0; k < count; ++k)
      if (std::memcmp(got.data() + k * element, expected.data() + k * element, element) != 0 && differing++ == 0)
        first = k;
    EXPECT_EQ(differing, 0u) << name << " " << dtype_name(dtype) << ": " << differing << " of " << count
                             << " elements differ, the first at operands " << describe(first) << " ...";
  }
  return interpreted;
}

// The sweep over `dtype`'s special values, binades and random bits.
template <class T>
std::set<std::string> expect_every_interpreted_primitive_equals_its_kernel(DType dtype) {
  std::vector<T> values = inputs<T>();
  auto size = static_cast<int64_t>(values.size());
  // Later operands are the values rotated: every special value meets many others.
  std::vector<Array> operands;
  for (size_t rotation : {size_t{0}, size_t{7919}, size_t{104729}}) {
    std::vector<T> rotated = values;
    std::rotate(rotated.begin(), rotated.begin() + static_cast<std::ptrdiff_t>(rotation % values.size()),
                rotated.end());
    operands.push_back(array(rotated, {size}));
  }
  return expect_sweep_equals_kernels(dtype, operands, values.size(),
                                     [&](size_t k) { return std::to_string(values[k]); });
}

// The sweep, and kiln's vector math among what it checked: the first tier
// relies on these being interpreted.
template <class T>
void expect_interpreted_equals_compiled(DType dtype) {
  std::set<std::string> checked = expect_every_interpreted_primitive_equals_its_kernel<T>(dtype);
  Array x = zeros({64}, dtype);
  for (const Case& c : interpreted_cases()) {
    std::shared_ptr<const ir::Graph> graph = graph_of(c.operation, x);
    ASSERT_NE(llvm_backend::interpreted_executable(graph), nullptr) << c.name << " " << dtype_name(dtype);
    const ir::Node& node = graph->nodes[static_cast<size_t>(graph->outputs[0])];
    std::string name = std::string(ir::primitive_name(node.op)) + "/" + std::to_string(node.inputs.size());
    EXPECT_TRUE(checked.contains(name)) << c.name << " (" << name << ") was not in the sweep";
  }
  for (const char* arithmetic : {"add/2", "sub/2", "mul/2", "div/2", "neg/1", "sqrt/1"})
    EXPECT_TRUE(checked.contains(arithmetic)) << arithmetic;
  std::string names;
  for (const std::string& name : checked) names += name + " ";
  std::printf("interpreted and checked (%s): %s\n", dtype_name(dtype).data(), names.c_str());
}

TEST_F(ScalarPrograms, EveryInterpretedPrimitiveEqualsItsCompiledKernelBitForBitF32) {
  expect_interpreted_equals_compiled<float>(f32);
}

TEST_F(ScalarPrograms, EveryInterpretedPrimitiveEqualsItsCompiledKernelBitForBitF64) {
  expect_interpreted_equals_compiled<double>(f64);
}

// Bool values are an i1 lane's byte of 0 or 1: every elementwise primitive
// over bool operands the interpreter accepts, and select between floats (a
// ReLU's derivative), against the compiled kernels.
TEST_F(ScalarPrograms, BoolOperandsAndSelectsEqualTheirCompiledKernels) {
  constexpr int64_t size = 4099;  // past a block, with a tail
  std::mt19937_64 random(11);
  std::vector<Array> conditions;
  for (int k = 0; k < 3; ++k) {
    std::vector<uint8_t> bits(size);
    for (uint8_t& bit : bits) bit = static_cast<uint8_t>(random() & 1);
    Array condition = zeros({size}, DType::bool_);
    std::memcpy(detail::impl(condition)->buffer->data(), bits.data(), bits.size());
    conditions.push_back(condition);
  }
  std::set<std::string> interpreted =
      expect_sweep_equals_kernels(DType::bool_, conditions, static_cast<size_t>(size), [&](size_t k) {
        std::string text;
        for (const Array& condition : conditions)
          text += std::to_string(static_cast<const uint8_t*>(detail::impl(condition)->buffer->data())[k]) + " ";
        return text;
      });
  for (const char* logical : {"logical_and/2", "logical_or/2", "logical_not/1"})
    EXPECT_TRUE(interpreted.contains(logical)) << logical << " is not interpreted over bool";
  auto selects = [&]<class T>(DType dtype) {
    std::vector<T> values = inputs<T>();
    values.resize(size);
    std::vector<T> others(values.rbegin(), values.rend());
    auto record = [&](detail::TraceSession& session) {
      Array condition = session.argument(detail::allocate({DType::bool_, false, {size}}));
      Array on_true = session.argument(detail::allocate({dtype, false, {size}}));
      Array on_false = session.argument(detail::allocate({dtype, false, {size}}));
      return std::vector<Array>{where(condition, on_true, on_false)};
    };
    auto graph = detail::shared_ir(detail::trace("select", Location(), record).graph);
    std::shared_ptr<const runtime::Executable> program = llvm_backend::interpreted_executable(graph);
    ASSERT_NE(program, nullptr) << "select over " << dtype_name(dtype);
    std::vector<Array> arguments = {conditions[0], array(values, {size}), array(others, {size})};
    EXPECT_EQ(bytes_of_run(*program, arguments), bytes_of_run(*cache::default_backend().compile(graph), arguments))
        << "select over " << dtype_name(dtype);
  };
  selects.operator()<float>(f32);
  selects.operator()<double>(f64);
}

// A donated operand of the result's type, whose memory no other array shares,
// holds the result, as in compiled code; one not donated, or whose memory a
// view shares, is left alone.
TEST_F(ScalarPrograms, ADonatedOperandHoldsTheResult) {
  constexpr int64_t size = 70000;  // parts on several threads where there are some
  Array a = random::uniform(random::key(5), {size}, f32, -3.0, 3.0);
  Array b = random::uniform(random::key(6), {size}, f32, -3.0, 3.0);
  auto record = [&](detail::TraceSession& session) {
    Array x = session.argument(detail::allocate(detail::impl(a)->type));
    Array y = session.argument(detail::allocate(detail::impl(b)->type));
    return std::vector<Array>{x * y};
  };
  auto product = detail::shared_ir(detail::trace("multiply", Location(), record).graph);
  std::vector<char> expected =
      bytes_of(cache::default_backend().compile(product)->run(std::vector<Array>{a, b}, {}).at(0));
  auto interpreted = llvm_backend::interpreted_executable(product);
  ASSERT_NE(interpreted, nullptr);
  const void* memory_of_a = detail::impl(a)->buffer->data();
  std::vector<char> donated = {1, 0};
  {
    Array view = reshape(a, {2, size / 2});  // another array on a's memory
    ASSERT_EQ(detail::impl(view)->buffer->data(), memory_of_a);
    Array result = interpreted->run(std::vector<Array>{a, b}, {}, donated).at(0);
    EXPECT_NE(detail::impl(result)->buffer->data(), memory_of_a);
    EXPECT_EQ(bytes_of(result), expected);
  }
  Array result;
  {
    std::vector<Array> arguments = {std::move(a), b};
    result = interpreted->run(arguments, {}, donated).at(0);
  }
  EXPECT_EQ(detail::impl(result)->buffer->data(), memory_of_a);
  EXPECT_EQ(bytes_of(result), expected);
  Array not_donated = interpreted->run(std::vector<Array>{result, b}, {}, {}).at(0);
  EXPECT_NE(detail::impl(not_donated)->buffer->data(), memory_of_a);
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

// A tree of operations, as a first tier fuses it (interp/fused_trees.h):
// one program composed of its nodes' programs, reading broadcasts along
// leading axes in place (one value; rows shorter than a block, longer, and
// not dividing it), gives the fused compiled kernel's bits, with no memory
// for the values inside the tree.
TEST_F(ScalarPrograms, ComposedTreesEqualTheirFusedKernels) {
  for (int64_t row : {1, 10, 300, 700}) {
    SCOPED_TRACE("rows of " + std::to_string(row));
    Shape shape = {40, row}, bias_shape = row == 1 ? Shape{} : Shape{1, row};
    std::vector<Array> arguments = {random::normal(random::key(1), shape), random::normal(random::key(2), shape),
                                    random::normal(random::key(3), shape), array(std::vector<float>{0.37f}, Shape{}),
                                    random::uniform(random::key(4), bias_shape, f32, 0.01, 1.0)};
    // Scalars enter as arguments, as a first tier passes its trees' literals.
    auto record = [&](detail::TraceSession& session) {
      std::vector<Array> placeholders;
      for (const Array& argument : arguments)
        placeholders.push_back(session.argument(detail::allocate(detail::impl(argument)->type)));
      Array w = placeholders[0], m = placeholders[1], g = placeholders[2];
      Array scale = broadcast_to(placeholders[3], shape), bias = broadcast_to(placeholders[4], shape);
      Array moment = m * broadcast_to(placeholders[3], shape) + g * scale;
      Array step = moment / (sqrt(abs(g) * scale) + bias);
      return std::vector<Array>{where(logical_or(isnan(step), step > w), w - step * scale, tanh(step) + bias)};
    };
    auto graph = detail::shared_ir(detail::trace("tree", Location(), record).graph);
    auto interpreted = llvm_backend::interpreted_executable(graph, true);
    ASSERT_NE(interpreted, nullptr);
    std::vector<char> expected = bytes_of_run(*cache::default_backend().compile(graph), arguments);
    detail::allocator::Stats before = detail::allocator::stats();
    Array result = interpreted->run(arguments, {}).at(0);
    detail::allocator::Stats after = detail::allocator::stats();
    EXPECT_EQ((after.hits + after.misses) - (before.hits + before.misses), 1u) << "the result's array alone";
    EXPECT_EQ(bytes_of(result), expected);
  }
}

TEST_F(ScalarPrograms, WhatTheInterpreterCannotRunIsRefused) {
  Array x = random::uniform(random::key(3), {64}, f32, 0.1, 3.0);
  // libmvec's vector and scalar functions round differently.
  for (const Operation& operation :
       std::vector<Operation>{[](const Array& v) { return sin(v); }, [](const Array& v) { return cos(v); },
                              [](const Array& v) { return pow(v, v); }})
    EXPECT_EQ(llvm_backend::interpreted_executable(graph_of(operation, x)), nullptr);
  // A literal in the graph: a first tier passes its trees' constants as arguments.
  EXPECT_EQ(llvm_backend::interpreted_executable(graph_of([](const Array& v) { return tanh(v) * 2.0f; }, x)), nullptr);
  // A broadcast that is not along leading axes (a column) is not read in place.
  Array column = random::uniform(random::key(4), {8, 1}, f32, 0.1, 3.0);
  auto record = [&](detail::TraceSession& session) {
    Array c = session.argument(detail::allocate(detail::impl(column)->type));
    Array m = session.argument(detail::allocate({f32, false, {8, 8}}));
    return std::vector<Array>{m * c};
  };
  EXPECT_EQ(llvm_backend::interpreted_executable(detail::shared_ir(detail::trace("column", Location(), record).graph)),
            nullptr);
  // Past 2^18 elements a compiled kernel wins.
  Array large = zeros({(int64_t{1} << 18) + 1});
  EXPECT_EQ(llvm_backend::interpreted_executable(graph_of([](const Array& v) { return exp(v); }, large)), nullptr);
  EXPECT_NE(llvm_backend::interpreted_executable(graph_of([](const Array& v) { return exp(v); }, x)), nullptr);
}

}  // namespace
}  // namespace kiln
