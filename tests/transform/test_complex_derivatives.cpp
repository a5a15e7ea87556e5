// Derivatives of complex functions, by JAX's convention: a vjp is the
// transpose of the jvp (never its conjugate transpose), so for a real-valued
// f of z = x + iy, grad(f)(z) = df/dx - i df/dy. PyTorch's gradient of the
// same f is the conjugate, df/dx + i df/dy: the tests check both relations,
// against central finite differences on the real and imaginary parts, and
// the jvp against directional differences, eagerly and compiled.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <complex>
#include <functional>
#include <string>
#include <vector>

#include "support/errors.h"
#include "support/gradient_check.h"
#include "support/numpy_oracle.h"

namespace kiln {
namespace {

using c128_t = std::complex<double>;
using RealFunction = std::function<Array(const Array&)>;

Array random_complex(uint64_t seed, const Shape& shape, double lo, double hi) {
  testing::RandomArrays random(seed);
  Array re = random.uniform(shape, f64, lo, hi), im = random.uniform(shape, f64, lo, hi);
  return astype(re, c128) + astype(im, c128) * c128_t(0, 1);
}

::testing::AssertionResult close(const std::vector<c128_t>& actual, const std::vector<c128_t>& expected, double tol,
                                 const std::string& context) {
  if (actual.size() != expected.size()) return ::testing::AssertionFailure() << context << ": sizes differ";
  for (size_t k = 0; k < actual.size(); ++k)
    if (std::abs(actual[k] - expected[k]) > tol * (1 + std::abs(expected[k])))
      return ::testing::AssertionFailure()
             << context << ": [" << k << "] got " << actual[k] << ", expected " << expected[k];
  return ::testing::AssertionSuccess();
}

struct Case {
  std::string name;
  RealFunction f;
};

std::vector<Case> cases() {
  Array w = random_complex(21, {2, 3}, -1, 1);
  Array m = random_complex(22, {3, 2}, -1, 1);
  Array r = testing::RandomArrays(23).uniform({2, 3}, f64, -1, 1);
  return {
      {"|z|^2", [](const Array& z) { return sum(real(z * conj(z))); }},
      {"abs", [](const Array& z) { return sum(abs(z)); }},
      {"real(w z)", [=](const Array& z) { return sum(real(w * z)); }},
      {"imag(z / w)", [=](const Array& z) { return sum(imag(z / w)); }},
      {"abs(exp(z) + z^2)", [](const Array& z) { return sum(abs(exp(z) + square(z))); }},
      {"angle(log(z))", [](const Array& z) { return sum(angle(log(z)) * 0.5); }},
      {"abs(sqrt(z)) * r", [=](const Array& z) { return sum(abs(sqrt(z)) * r); }},
      {"real(sin(z) * cos(z)) + imag(tanh(z))",
       [](const Array& z) { return sum(real(sin(z) * cos(z)) + imag(tanh(z))); }},
      {"abs(z^w)", [=](const Array& z) { return sum(abs(pow(z, w))); }},
      {"abs(z @ m)", [=](const Array& z) { return sum(abs(matmul(z, m))); }},
      {"mean and prod", [](const Array& z) { return real(mean(z * z)) + sum(imag(slice(prod(z, 1), {0}, {1}))); }},
      {"angle", [](const Array& z) { return sum(angle(z) * 3.0); }},
      {"real part of conj(z) r", [=](const Array& z) { return sum(real(conj(z) * r)) + sum(imag(conj(z))); }},
      {"through a real array", [=](const Array& z) { return sum(abs(astype(real(z), c128) * w + r)); }},
  };
}

TEST(ComplexDerivatives, GradIsDfDxMinusIDfDyAgainstFiniteDifferences) {
  Array z = random_complex(20, {2, 3}, 0.3, 1.5);
  for (const Case& c : cases()) {
    Array g = grad(c.f)(z);
    EXPECT_EQ(g.dtype(), c128) << c.name;
    std::vector<c128_t> expected = testing::numerical_complex_gradient(c.f, z);
    EXPECT_TRUE(close(g.to_vector<c128_t>(), expected, 1e-6, c.name));
    // Compiled, the same bits as eager.
    Array compiled = jit(grad(c.f))(z);
    EXPECT_EQ(compiled.to_vector<c128_t>(), g.to_vector<c128_t>()) << c.name << " (jit)";
  }
}

TEST(ComplexDerivatives, JvpMatchesDirectionalDifferences) {
  Array z = random_complex(30, {2, 3}, 0.3, 1.5);
  Array t = random_complex(31, {2, 3}, -1, 1);
  double step = 1e-6;
  for (const Case& c : cases()) {
    auto [value, tangent] = jvp(c.f, std::tuple{z}, std::tuple{t});
    double expected = (c.f(z + t * step).item<double>() - c.f(z - t * step).item<double>()) / (2 * step);
    EXPECT_NEAR(tangent.item<double>(), expected, 1e-6 * (1 + std::abs(expected))) << c.name;
    // <grad, t> in JAX's convention: real(sum(grad * t)) is the directional derivative.
    Array g = grad(c.f)(z);
    EXPECT_NEAR(real(sum(g * t)).item<double>(), tangent.item<double>(), 1e-9 * (1 + std::abs(expected))) << c.name;
  }
}

// The worked example of the README: f(z) = |z|^2 at 3 + 4i. JAX's grad is
// 2 conj(z) = 6 - 8i; PyTorch's z.grad is its conjugate, 6 + 8i.
TEST(ComplexDerivatives, AgreeWithTorchUpToConjugation) {
  Array z = array<c128_t>({{3, 4}});
  auto f = [](const Array& v) { return sum(real(v * conj(v))); };
  EXPECT_EQ(grad(f)(z).to_vector<c128_t>(), (std::vector<c128_t>{{6, -8}}));

  Array points = random_complex(40, {2, 3}, 0.3, 1.5);
  Array w = random_complex(41, {2, 3}, -1, 1);
  struct TorchCase {
    RealFunction f;
    std::string torch;  // a, b: the points and w as complex128 tensors requiring grad on a
  };
  std::vector<TorchCase> torch_cases = {
      {[](const Array& v) { return sum(abs(v)); }, "t.abs().sum()"},
      {[=](const Array& v) { return sum(abs(exp(v) * w)); }, "(t.exp() * u).abs().sum()"},
      {[=](const Array& v) { return sum(real(log(v) * w) + imag(sqrt(v))); },
       "((t.log() * u).real + t.sqrt().imag).sum()"},
      {[=](const Array& v) { return sum(abs(v / w + square(v))); }, "(t / u + t * t).abs().sum()"},
      {[](const Array& v) { return sum(angle(v)); }, "t.angle().sum()"},
  };
  testing::NumpyOracle oracle;
  std::vector<int> ids;
  for (const TorchCase& c : torch_cases)
    ids.push_back(oracle.add("(lambda torch: (lambda t, u: (torch.autograd.grad(" + c.torch +
                                 ", t)[0]).numpy())(torch.tensor(a, requires_grad=True), torch.tensor(b)))"
                                 "(__import__('torch'))",
                             {points, w}));
  oracle.run();
  for (size_t k = 0; k < torch_cases.size(); ++k) {
    Array ours = grad(torch_cases[k].f)(points);
    Array torch = oracle.expected(ids[k]);
    EXPECT_TRUE(close(conj(ours).to_vector<c128_t>(), torch.to_vector<c128_t>(), 1e-10, torch_cases[k].torch));
  }
}

TEST(ComplexDerivatives, VjpOfRealToComplexKeepsTheRealPartAndGradRefusesComplexOutputs) {
  // f: R -> C -> R. d/dx |x + 2i|^2 = 2x.
  auto f = [](const Array& x) {
    return sum(abs(astype(x, c128) + c128_t(0, 2)) * abs(astype(x, c128) + c128_t(0, 2)));
  };
  Array x = array({1.5, -0.5});
  Array g = grad(f)(x);
  EXPECT_EQ(g.dtype(), f64);
  EXPECT_NEAR(g.to_vector<double>()[0], 3.0, 1e-12);
  EXPECT_NEAR(g.to_vector<double>()[1], -1.0, 1e-12);
  auto complex_valued = [](const Array& v) { return sum(v * v); };
  auto differentiate = [&] { grad(complex_valued)(array<c128_t>({{1, 1}})); };
  testing::expect_error(__LINE__ - 1, differentiate, {"real scalar", "c128[]", "kiln::abs"});
  // vjp takes a complex cotangent: the pullback of v -> v * v is c -> 2 v c.
  auto [value, pullback] = vjp([](const Array& v) { return v * v; }, array<c128_t>({{1, 2}}));
  auto [dv] = pullback(array<c128_t>({{0, 1}}));
  EXPECT_EQ(dv.to_vector<c128_t>(), (std::vector<c128_t>{c128_t(1, 2) * 2.0 * c128_t(0, 1)}));
}

}  // namespace
}  // namespace kiln
