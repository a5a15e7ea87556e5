// Gradients of exp2, log2, log10, the inverse trigonometric and hyperbolic
// functions, arctan2, remainder and copysign against PyTorch's autograd
// (run by the NumPy oracle's Python), the derivatives the composites get
// right at their special points (1 at 0 for the odd ones, -0 kept), and
// the operations with zero or no derivative (floor_divide, bitwise).
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::all_close;
using testing::NumpyOracle;

Array uniform(const Shape& shape, double lo, double hi, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> real(lo, hi);
  std::vector<double> values(static_cast<size_t>(shape_size(shape)));
  for (double& v : values) v = real(engine);
  return array(values, shape);
}

// The gradient of sum(f(inputs...)) with respect to every input, in torch.
std::string torch_gradients(const std::string& body, int inputs) {
  std::string names = "abc";
  std::string parameters, tensors, grads;
  for (int k = 0; k < inputs; ++k) {
    std::string n(1, names[static_cast<size_t>(k)]);
    parameters += (k ? ", " : "") + n;
    tensors += (k ? ", " : "") + std::string("torch.tensor(") + n + ", requires_grad=True)";
    grads += std::string(k ? ", " : "") + "t[" + std::to_string(k) + "].grad.numpy()";
  }
  return "(lambda torch: (lambda t: ((lambda " + parameters + ": " + body + ")(*t).sum().backward(), np.stack([" +
         grads + "]))[1])([" + tensors + "]))(__import__('torch'))";
}

struct Case {
  const char* name;
  std::function<Array(const std::vector<Array>&)> kiln;
  const char* torch;  // in terms of a (and b), torch tensors
  std::vector<std::pair<double, double>> ranges;
};

TEST(ElementwiseDerivatives, InverseFunctionsMatchTorch) {
  const std::vector<Case> cases = {
      {"exp2", [](const std::vector<Array>& in) { return exp2(in[0]); }, "torch.exp2(a)", {{-3, 3}}},
      {"log2", [](const std::vector<Array>& in) { return log2(in[0]); }, "torch.log2(a)", {{0.1, 5}}},
      {"log10", [](const std::vector<Array>& in) { return log10(in[0]); }, "torch.log10(a)", {{0.1, 5}}},
      {"arctan", [](const std::vector<Array>& in) { return arctan(in[0]); }, "torch.atan(a)", {{-5, 5}}},
      {"arcsin", [](const std::vector<Array>& in) { return arcsin(in[0]); }, "torch.asin(a)", {{-0.99, 0.99}}},
      {"arccos", [](const std::vector<Array>& in) { return arccos(in[0]); }, "torch.acos(a)", {{-0.99, 0.99}}},
      {"arcsinh", [](const std::vector<Array>& in) { return arcsinh(in[0]); }, "torch.asinh(a)", {{-5, 5}}},
      {"arccosh", [](const std::vector<Array>& in) { return arccosh(in[0]); }, "torch.acosh(a)", {{1.01, 6}}},
      {"arctanh", [](const std::vector<Array>& in) { return arctanh(in[0]); }, "torch.atanh(a)", {{-0.99, 0.99}}},
      {"arctan2",
       [](const std::vector<Array>& in) { return arctan2(in[0], in[1]); },
       "torch.atan2(a, b)",
       {{-3, 3}, {-3, 3}}},
      {"remainder",
       [](const std::vector<Array>& in) { return remainder(in[0], in[1]); },
       "torch.remainder(a, b)",
       {{-6, 6}, {0.5, 2}}},
      {"copysign",
       [](const std::vector<Array>& in) { return copysign(in[0], in[1]); },
       "torch.copysign(a, b)",
       {{-3, 3}, {-3, 3}}},
  };
  NumpyOracle oracle;
  std::vector<std::tuple<int, Array, std::string>> pending;
  uint64_t seed = 7;
  for (const Case& c : cases) {
    std::vector<Array> inputs;
    for (auto [lo, hi] : c.ranges) inputs.push_back(uniform({40}, lo, hi, seed++));
    auto loss = [&](const std::vector<Array>& in) { return sum(c.kiln(in)); };
    std::vector<Array> gradients = grad(loss)(inputs);
    pending.emplace_back(oracle.add(torch_gradients(c.torch, static_cast<int>(inputs.size())), inputs),
                         stack(gradients), c.name);
    // jit(grad) gives the same, and forward mode agrees with reverse mode.
    std::vector<Array> compiled = jit(grad(loss))(inputs);
    EXPECT_TRUE(all_close(stack(compiled), stack(gradients), 1e-13, 1e-13, std::string(c.name) + " under jit"));
    Array tangent = ones_like(inputs[0]);
    auto first = [&](const Array& x) {
      std::vector<Array> in = inputs;
      in[0] = x;
      return c.kiln(in);
    };
    auto [value, forward] = jvp(first, std::tuple{inputs[0]}, std::tuple{tangent});
    EXPECT_TRUE(all_close(forward, gradients[0], 1e-13, 1e-13, std::string(c.name) + " forward mode"));
  }
  oracle.run();
  for (const auto& [id, actual, context] : pending)
    EXPECT_TRUE(all_close(actual, oracle.expected(id), 1e-12, 1e-12, context + " against torch"));
}

TEST(ElementwiseDerivatives, OddCompositesHaveSlopeOneAtZero) {
  for (const auto& [name, f] : std::vector<std::pair<std::string, std::function<Array(const Array&)>>>{
           {"arcsin", [](const Array& x) { return arcsin(x); }},
           {"arctan", [](const Array& x) { return arctan(x); }},
           {"arcsinh", [](const Array& x) { return arcsinh(x); }},
           {"arctanh", [](const Array& x) { return arctanh(x); }}}) {
    Array zeros = array({0.0, -0.0});
    auto [value, pullback] = vjp(f, zeros);
    auto [gradient] = pullback(ones_like(value));
    EXPECT_EQ(gradient.to_vector<double>(), (std::vector<double>{1, 1})) << name;
    EXPECT_TRUE(std::signbit(value.to_vector<double>()[1])) << name << "(-0) is -0";
  }
  auto [value, pullback] = vjp([](const Array& x) { return arccos(x); }, array({0.0}));
  auto [gradient] = pullback(ones_like(value));
  EXPECT_EQ(gradient.item<double>(), -1.0);
}

TEST(ElementwiseDerivatives, FloorDivideHasZeroGradientsAndNextafterPassesItsFirst) {
  Array a = array({-3.5, 2.25, 7.0}), b = array({2.0, -0.5, 3.0});
  auto [quotient, pullback] = vjp([](const Array& x, const Array& y) { return floor_divide(x, y); }, a, b);
  auto [da, db] = pullback(ones_like(quotient));
  EXPECT_EQ(da.to_vector<double>(), std::vector<double>(3, 0.0));
  EXPECT_EQ(db.to_vector<double>(), std::vector<double>(3, 0.0));
  auto [next, next_pullback] = vjp([](const Array& x, const Array& y) { return nextafter(x, y); }, a, b);
  auto [dx, dy] = next_pullback(ones_like(next));
  EXPECT_EQ(dx.to_vector<double>(), std::vector<double>(3, 1.0));
  EXPECT_EQ(dy.to_vector<double>(), std::vector<double>(3, 0.0));
}

TEST(ElementwiseDerivatives, BitwiseResultsCarryNoDerivative) {
  // An integer value computed from x by bitwise operations is a constant to
  // the derivative, as any integer conversion is.
  auto fn = [](const Array& x) {
    Array bits = astype(x, DType::i32);
    return astype((bits & 6) | (bits << 1) ^ ~bits, DType::f64) + x * 2.0;
  };
  auto [value, pullback] = vjp(fn, array({1.5, 2.5, -3.5}));
  auto [gradient] = pullback(ones_like(value));
  EXPECT_EQ(gradient.to_vector<double>(), std::vector<double>(3, 2.0));
}

}  // namespace
}  // namespace kiln
