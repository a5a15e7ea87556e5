// Repeated transcendental functions in a long elementwise body are compiled
// once per module (backend/llvm/outlined_math.h): the body calls one copy of
// each, the vector loop calls its full-width twin. These tests hold the
// compiled code to that shape (read from KILN_DUMP's assembly) and the
// results to the bits of the same operations run one at a time, where each
// function is inlined in a kernel of its own.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "backend/llvm/backend.h"
#include "cache/backend_choice.h"
#include "differential.h"

namespace kiln {
namespace {

struct Function {
  const char* name;  // as outlined_math.cpp names its copy
  std::function<Array(const Array&)> apply;
};

// Arguments each function takes in its domain and beyond: the rounds keep
// values finite and spread (h * 0.75 + 0.1 before each use), the inputs add
// zeros of both signs, infinities, NaN, a subnormal and the extremes.
const std::vector<Function> functions = {
    {"exp", [](const Array& x) { return kiln::exp(x); }},
    {"exp2", [](const Array& x) { return kiln::exp2(x); }},
    {"log", [](const Array& x) { return kiln::log(x); }},
    {"log2", [](const Array& x) { return kiln::log2(x); }},
    {"log10", [](const Array& x) { return kiln::log10(x); }},
    {"log1p", [](const Array& x) { return kiln::log1p(x); }},
    {"expm1", [](const Array& x) { return kiln::expm1(x); }},
    {"tanh", [](const Array& x) { return kiln::tanh(x); }},
    {"logistic", [](const Array& x) { return kiln::sigmoid(x); }},
    {"erf", [](const Array& x) { return kiln::erf(x); }},
    {"atan", [](const Array& x) { return kiln::arctan(x); }},
};

constexpr int rounds = 9;  // 9 transcendental functions: a long body (cost >= 128)

Array rounds_of(const Function& function, const Array& x) {
  Array h = x;
  for (int round = 0; round < rounds; ++round) h = function.apply(h * 0.75 + 0.1) - h * 0.25;
  return h;
}

Array inputs(DType dtype, int64_t count) {
  std::vector<double> values;
  for (int64_t i = 0; i < count; ++i) values.push_back(std::sin(static_cast<double>(i)) * 3.0 + 0.5);
  double special[] = {0.0,
                      -0.0,
                      std::numeric_limits<double>::infinity(),
                      -std::numeric_limits<double>::infinity(),
                      std::numeric_limits<double>::quiet_NaN(),
                      dtype == DType::f32 ? 1e-40 : 1e-310,
                      dtype == DType::f32 ? 3e38 : 1e308,
                      -1.0,
                      1e-7};
  for (size_t k = 0; k < std::size(special); ++k) values[k * 7] = special[k];
  return astype(array(values, Shape{count}), dtype);
}

bool same_bits(const Array& a, const Array& b) {
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0;
}

class OutlinedMath : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cache::default_backend().name() != "llvm") GTEST_SKIP() << "outlining is the native backend's";
  }
};

// The shapes here are these tests' alone, so no kernel of another test is
// reused (a reused kernel writes no dump).
using testing::compiled_assembly;

std::string rounds_assembly(const Function& function, DType dtype) {
  return compiled_assembly(make_graph(
      std::string("outlined_") + function.name, [&](const Array& v) { return rounds_of(function, v); },
      inputs(dtype, 1011)));
}

size_t occurrences(const std::string& text, const std::regex& pattern) {
  return static_cast<size_t>(std::distance(std::sregex_iterator(text.begin(), text.end(), pattern), {}));
}

TEST_F(OutlinedMath, RepeatedFunctionsAreCompiledOnceAndCalledPerVector) {
  for (const Function& function : functions)
    for (DType dtype : {DType::f32, DType::f64}) {
      std::string context = std::string(function.name) + " " + std::string(dtype_name(dtype));
      std::string assembly = rounds_assembly(function, dtype);
      ASSERT_FALSE(assembly.empty()) << context << ": KILN_DUMP wrote no assembly";
      std::string copy = std::string("kiln_math_") + function.name + (dtype == DType::f32 ? "_f32" : "_f64");
      // One vector copy, full width (16 f32 or 8 f64 lanes with AVX-512, 8 or 4 with AVX2).
      std::regex vector_copy_label("\\n" + copy + "_x([0-9]+):");
      EXPECT_EQ(occurrences(assembly, vector_copy_label), 1u) << context << ": the vector copy is not defined once";
      // Called for every use after the first (which stays inline), through
      // its address (JIT code uses the large code model), and nothing else is.
      EXPECT_EQ(occurrences(assembly, std::regex("\\scall[q]?\\s")), static_cast<size_t>(rounds - 1)) << context;
      EXPECT_GE(occurrences(assembly, std::regex("\\$" + copy + "_x[0-9]+\\b")), 1u) << context;
      // The scalar copy only served the vectorizer: nothing is left of it once the loop is vector.
      EXPECT_EQ(occurrences(assembly, std::regex(copy + "\\b(?!_x)")), 0u) << context << ": a scalar copy was compiled";
    }
}

TEST_F(OutlinedMath, OutlinedFunctionsKeepTheBitsOfTheOperationsRunOneAtATime) {
  for (const Function& function : functions)
    for (DType dtype : {DType::f32, DType::f64})
      for (int64_t count : {int64_t{64}, int64_t{1000}, int64_t{4099}}) {
        Array x = inputs(dtype, count);
        auto jitted = jit([&](const Array& v) { return rounds_of(function, v); });
        Array eager = rounds_of(function, x);  // one kernel per operation: every function inline
        EXPECT_TRUE(same_bits(jitted(x), eager)) << function.name << " " << dtype_name(dtype) << "[" << count << "]";
      }
}

// A function used once keeps its inline code: no call in the loop.
TEST_F(OutlinedMath, AFunctionUsedOnceStaysInline) {
  auto body = [](const Array& v) {
    Array h = kiln::tanh(v);
    for (const Function& function : functions)
      if (std::string(function.name) != "tanh") h = h + function.apply(v * 0.5 + 2.0);
    return h;
  };
  std::string assembly = compiled_assembly(make_graph("outlined_once_each", body, inputs(DType::f32, 1013)));
  ASSERT_FALSE(assembly.empty());
  std::smatch call;
  EXPECT_FALSE(std::regex_search(assembly, call, std::regex("\\scall[q]?\\s[^\\n]*"))) << "a call: " << call.str();
}

}  // namespace
}  // namespace kiln
