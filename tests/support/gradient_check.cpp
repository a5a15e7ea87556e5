// Finite-difference derivative checks (see the header).
#include "support/gradient_check.h"

#include <cmath>
#include <random>
#include <sstream>

namespace kiln::testing {

namespace {
std::vector<double> values(const Array& x) { return x.to_vector<double>(); }

Array with_values(const Array& like, const std::vector<double>& data) {
  return astype(array(data, like.shape()), like.dtype());
}

Array random_like(const Array& like, std::mt19937_64& engine) {
  std::normal_distribution<double> normal;
  std::vector<double> data(static_cast<size_t>(like.size()));
  for (double& v : data) v = normal(engine);
  return with_values(like, data);
}

double dot(const Array& a, const Array& b) {
  std::vector<double> x = values(a), y = values(b);
  double total = 0;
  for (size_t i = 0; i < x.size(); ++i) total += x[i] * y[i];
  return total;
}

bool close(double got, double expected, const DerivativeTolerance& t) {
  if (std::isnan(got) || std::isnan(expected)) return std::isnan(got) && std::isnan(expected);
  return std::fabs(got - expected) <= t.atol + t.rtol * std::fabs(expected);
}
}  // namespace

::testing::AssertionResult check_derivatives(const ArrayFunction& fn, const std::vector<Array>& inputs,
                                             DerivativeTolerance tolerance, uint64_t seed) {
  std::mt19937_64 engine(seed);
  Array output = fn(inputs);
  if (!is_floating(output.dtype())) return ::testing::AssertionFailure() << "the function's output is not floating";
  Array cotangent = random_like(output, engine);

  auto [value, pullback] = vjp(fn, inputs);
  auto [reverse] = pullback(cotangent);
  std::ostringstream failures;
  int bad = 0;
  auto report = [&](const std::string& what, double got, double expected) {
    if (bad++ < 6) failures << "\n  " << what << ": got " << got << ", finite differences " << expected;
  };

  std::vector<Array> tangents;
  for (size_t i = 0; i < inputs.size(); ++i) {
    bool floating = is_floating(inputs[i].dtype());
    tangents.push_back(floating ? random_like(inputs[i], engine) : Array());
    if (!floating) continue;
    if (!reverse[i].defined()) return ::testing::AssertionFailure() << "input " << i << " got no cotangent";
    if (reverse[i].shape() != inputs[i].shape() || reverse[i].dtype() != inputs[i].dtype())
      return ::testing::AssertionFailure()
             << "input " << i << " cotangent is " << reverse[i].dtype() << shape_string(reverse[i].shape())
             << ", input is " << inputs[i].dtype() << shape_string(inputs[i].shape());
    std::vector<double> base = values(inputs[i]);
    std::vector<double> analytic = values(reverse[i]);
    for (size_t j = 0; j < base.size(); ++j) {
      std::vector<Array> plus = inputs, minus = inputs;
      std::vector<double> up = base, down = base;
      up[j] += tolerance.step;
      down[j] -= tolerance.step;
      plus[i] = with_values(inputs[i], up);
      minus[i] = with_values(inputs[i], down);
      double numeric = (dot(fn(plus), cotangent) - dot(fn(minus), cotangent)) / (2 * tolerance.step);
      if (!close(analytic[j], numeric, tolerance))
        report("vjp input " + std::to_string(i) + " element " + std::to_string(j), analytic[j], numeric);
    }
  }

  // Forward mode along random tangents.
  std::tuple<std::vector<Array>> primals{inputs};
  auto [forward_value, forward_tangent] = jvp(fn, primals, std::tuple<std::vector<Array>>{tangents});
  std::vector<Array> plus = inputs, minus = inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!is_floating(inputs[i].dtype())) continue;
    std::vector<double> base = values(inputs[i]), t = values(tangents[i]), up = base, down = base;
    for (size_t j = 0; j < base.size(); ++j) {
      up[j] += tolerance.step * t[j];
      down[j] -= tolerance.step * t[j];
    }
    plus[i] = with_values(inputs[i], up);
    minus[i] = with_values(inputs[i], down);
  }
  std::vector<double> upper = values(fn(plus)), lower = values(fn(minus)), analytic = values(forward_tangent);
  for (size_t j = 0; j < analytic.size(); ++j) {
    double numeric = (upper[j] - lower[j]) / (2 * tolerance.step);
    if (!close(analytic[j], numeric, tolerance)) report("jvp element " + std::to_string(j), analytic[j], numeric);
  }

  // <c, J t> == <J^T c, t>
  double forward_side = dot(cotangent, forward_tangent), reverse_side = 0;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (is_floating(inputs[i].dtype())) reverse_side += dot(reverse[i], tangents[i]);
  if (!close(forward_side, reverse_side, tolerance)) report("<c, J t> vs <J^T c, t>", forward_side, reverse_side);

  if (bad) return ::testing::AssertionFailure() << bad << " derivative mismatches" << failures.str();
  return ::testing::AssertionSuccess();
}

std::vector<std::complex<double>> numerical_complex_gradient(const std::function<Array(const Array&)>& f,
                                                             const Array& z, double step) {
  using Complex = std::complex<double>;
  std::vector<Complex> values = z.to_vector<Complex>(), gradient(values.size());
  auto at = [&](size_t k, Complex shift) {
    std::vector<Complex> moved = values;
    moved[k] += shift;
    return f(array(moved, z.shape())).item<double>();
  };
  for (size_t k = 0; k < values.size(); ++k) {
    double dx = (at(k, {step, 0}) - at(k, {-step, 0})) / (2 * step);
    double dy = (at(k, {0, step}) - at(k, {0, -step})) / (2 * step);
    gradient[k] = {dx, -dy};
  }
  return gradient;
}

}  // namespace kiln::testing
