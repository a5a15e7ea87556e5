// Derivatives where a formula could answer for the wrong function: erfinv's
// is the closed form sqrt(pi)/2 exp(erfinv(x)^2), not the derivative of the
// steps that approximate it (infinite at +-1, exact at 0, forward and
// reverse mode alike); at a tie between two arguments the derivative is
// shared, not sent to one side (logaddexp, maximum, minimum, hypot, clip,
// softplus, max), as JAX shares it. PyTorch's autograd is the oracle where
// it agrees with JAX (mpmath where torch's erfinv is inexact); clip's bounds
// follow JAX's rule.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using testing::all_close;
using testing::NumpyOracle;

using Inputs = std::vector<Array>;
using Function = std::function<Array(const Inputs&)>;

constexpr double infinity = std::numeric_limits<double>::infinity();

// The gradients of sum(body) with respect to a (and b), stacked, by torch's
// autograd; `body` is Python over the torch tensors a and b.
std::string torch_gradients(const std::string& body, size_t inputs) {
  std::string names = inputs == 1 ? "a" : "a, b";
  std::string tensors = inputs == 1 ? "torch.tensor(a, requires_grad=True)"
                                    : "torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)";
  return "(lambda torch: (lambda t: ((lambda " + names + ": " + body +
         ")(*t).sum().backward(), np.stack([x.grad.numpy() for x in t]))[1])([" + tensors + "]))(__import__('torch'))";
}

// Reverse mode, stacked, after checking that forward mode agrees with it
// input by input for elementwise functions (their Jacobians are diagonal, so
// a tangent of ones gives the gradient) and that jit gives the same.
Array gradients(const Function& f, const Inputs& inputs, const std::string& name) {
  auto loss = [&](const Inputs& in) { return sum(f(in)); };
  Inputs reverse = grad(loss)(inputs);
  bool elementwise = f(inputs).shape() == inputs[0].shape();
  for (size_t k = 0; elementwise && k < inputs.size(); ++k) {
    auto only_k = [&](const Array& x) {
      Inputs in = inputs;
      in[k] = x;
      return f(in);
    };
    auto [value, forward] = jvp(only_k, std::tuple{inputs[k]}, std::tuple{ones_like(inputs[k])});
    EXPECT_TRUE(all_close(forward, reverse[k], 1e-14, 1e-15, name + ": jvp against vjp, input " + std::to_string(k)));
  }
  double rtol = testing::native_rtol(inputs[0].dtype());
  EXPECT_TRUE(all_close(stack(jit(grad(loss))(inputs)), stack(reverse), rtol, 0, name + " under jit"));
  return stack(reverse);
}

TEST(SpecialPointDerivatives, ErfinvHasTheClosedFormDerivative) {
  const double slope_at_zero = std::sqrt(std::numbers::pi) / 2;
  for (DType dtype : {DType::f32, DType::f64}) {
    std::string name = "erfinv " + std::string(dtype_name(dtype));
    Array x = astype(array({-1.0, -0.999, -0.5, 0.0, 0.25, 0.9, 0.999999, 1.0}), dtype);
    Array g = reshape(gradients([](const Inputs& in) { return erfinv(in[0]); }, {x}, name), x.shape());
    std::vector<double> values = g.to_vector<double>();
    EXPECT_EQ(values.front(), infinity) << name << " at -1";
    EXPECT_EQ(values.back(), infinity) << name << " at 1";
    double rounded = dtype == DType::f32 ? static_cast<double>(static_cast<float>(slope_at_zero)) : slope_at_zero;
    EXPECT_EQ(values[3], rounded) << name << " at 0";
    // The closed form, by the output: sqrt(pi)/2 exp(y^2).
    Array y = erfinv(x);
    EXPECT_TRUE(all_close(g, exp(y * y) * slope_at_zero, testing::native_rtol(dtype), 0, name + " is the closed form"));
  }
}

// PyTorch where its own erfinv is accurate; mpmath's 40 digits everywhere.
// Next to +-1 the slope exp(y^2) magnifies an error e in y = erfinv(x) by
// 2 y^2 e: torch's y is off by 2e-11 at 1 - 1e-7, kiln's (erfc's asymptotic
// series past |y| = 4) by up to 1e-9 at 1 - 1e-12.
TEST(SpecialPointDerivatives, ErfinvDerivativesMatchTorchAndMpmath) {
  NumpyOracle oracle;
  Array central = array({-0.97, -0.6, -0.1, 0.0, 0.3, 0.75, 0.995});
  Array tails = array({-0.99999, 0.9999999, 1 - 1e-12});
  auto first = [](const Array& v) { return grad([](const Array& w) { return sum(erfinv(w)); })(v); };
  auto second = [&](const Array& v) { return grad([&](const Array& w) { return sum(first(w)); })(v); };
  std::string slope = "mpmath.sqrt(mpmath.pi) / 2 * mpmath.exp(mpmath.erfinv(v) ** 2)";
  std::string exact = "(lambda mpmath: (mpmath.mp.__setattr__('dps', 40), np.array([float(" + slope +
                      ") for v in a]))[1])(__import__('mpmath'))";
  // erfinv'' = 2 erfinv(x) erfinv'(x)^2
  std::string curvature = "2 * mpmath.erfinv(v) * (" + slope + ") ** 2";
  std::string exact_second = "(lambda mpmath: (mpmath.mp.__setattr__('dps', 40), np.array([float(" + curvature +
                             ") for v in a]))[1])(__import__('mpmath'))";
  std::string torch_second =
      "(lambda torch: (lambda t: torch.autograd.grad(torch.autograd.grad(torch.special.erfinv(t).sum(), t, "
      "create_graph=True)[0].sum(), t)[0].numpy())(torch.tensor(a, requires_grad=True)))(__import__('torch'))";
  std::vector<std::tuple<int, Array, std::string, double>> checks;
  checks.emplace_back(oracle.add(exact, {central}), first(central), "erfinv' against mpmath", 1e-13);
  checks.emplace_back(oracle.add(exact_second, {central}), second(central), "erfinv'' against mpmath", 1e-13);
  checks.emplace_back(oracle.add(exact, {tails}), first(tails), "erfinv' next to +-1 against mpmath", 1e-7);
  checks.emplace_back(oracle.add(exact_second, {tails}), second(tails), "erfinv'' next to +-1 against mpmath", 2e-7);
  checks.emplace_back(oracle.add(torch_gradients("torch.special.erfinv(a)", 1), {central}),
                      reshape(first(central), {1, 7}), "erfinv' against torch", 1e-13);
  checks.emplace_back(oracle.add(torch_second, {central}), second(central), "erfinv'' against torch", 1e-12);
  oracle.run();
  for (const auto& [id, actual, context, rtol] : checks)
    EXPECT_TRUE(all_close(actual, oracle.expected(id), rtol, 0, context));
}

struct TieCase {
  std::string name;
  Function kiln;
  std::string torch;  // empty: no torch oracle (clip: torch gives the bound nothing)
  Inputs inputs;
};

std::vector<TieCase> tie_cases() {
  // Ties on purpose: equal pairs, and values at clip's bounds and softplus's kink.
  Array a = array({-2.0, 0.0, 0.5, 3.0, 1e-3, -7.25});
  Array b = array({-2.0, 0.0, 0.5, 1.0, 1e-3, 4.0});
  return {
      {"logaddexp", [](const Inputs& in) { return logaddexp(in[0], in[1]); }, "torch.logaddexp(a, b)", {a, b}},
      {"maximum", [](const Inputs& in) { return maximum(in[0], in[1]); }, "torch.maximum(a, b)", {a, b}},
      {"minimum", [](const Inputs& in) { return minimum(in[0], in[1]); }, "torch.minimum(a, b)", {a, b}},
      {"hypot",
       [](const Inputs& in) { return hypot(in[0], in[1]); },
       "torch.hypot(a, b)",
       {array({-2.0, 0.5, 3.0, 4.0}), array({-2.0, 0.5, -3.0, 1.0})}},
      {"softplus",
       [](const Inputs& in) { return softplus(in[0]); },
       "torch.nn.functional.softplus(a)",
       {array({0.0, -1.0, 2.5})}},
      {"max", [](const Inputs& in) { return max(in[0]); }, "torch.amax(a)", {array({3.0, 1.0, 3.0, 3.0})}},
      {"clip", [](const Inputs& in) { return clip(in[0], -1.0, 2.0); }, "", {array({-1.0, 0.0, 2.0, 5.0})}},
  };
}

TEST(SpecialPointDerivatives, TiesShareTheDerivative) {
  NumpyOracle oracle;
  std::vector<std::tuple<int, Array, std::string>> pending;
  for (const TieCase& c : tie_cases()) {
    Array g = gradients(c.kiln, c.inputs, c.name);
    if (!c.torch.empty())
      pending.emplace_back(oracle.add(torch_gradients(c.torch, c.inputs.size()), c.inputs), g, c.name);
  }
  oracle.run();
  for (const auto& [id, actual, name] : pending)
    EXPECT_TRUE(all_close(actual, oracle.expected(id), 1e-13, 1e-15, name + " against torch"));
  // The cases the issue names, by value: equal arguments share the cotangent.
  Array half = gradients([](const Inputs& in) { return logaddexp(in[0], in[1]); }, {array({1.5}), array({1.5})},
                         "logaddexp at a tie");
  EXPECT_EQ(half.to_vector<double>(), (std::vector<double>{0.5, 0.5}));
  // clip at its bounds, as JAX's clip (maximum, then minimum): half to x.
  Array at_bounds =
      gradients([](const Inputs& in) { return clip(in[0], -1.0, 2.0); }, {array({-1.0, 0.0, 2.0, 5.0})}, "clip");
  EXPECT_EQ(at_bounds.to_vector<double>(), (std::vector<double>{0.5, 1.0, 0.5, 0.0}));
}

}  // namespace
}  // namespace kiln
