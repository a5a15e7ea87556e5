// Derivative checks against central finite differences (in f64): the vjp
// against numerical gradients, the jvp against numerical directional
// derivatives, and the two against each other (<c, J t> == <J^T c, t>).
#pragma once

#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <complex>
#include <functional>
#include <vector>

namespace kiln::testing {

using ArrayFunction = std::function<Array(const std::vector<Array>& inputs)>;

struct DerivativeTolerance {
  double step = 1e-6;
  double rtol = 1e-5;
  double atol = 1e-6;
};

/// `inputs` should be f64 (integer inputs are passed through and not
/// differentiated). Each floating input element is perturbed once each way.
::testing::AssertionResult check_derivatives(const ArrayFunction& fn, const std::vector<Array>& inputs,
                                             DerivativeTolerance tolerance = {}, uint64_t seed = 7);

/// The gradient of a real function of a complex array by central differences
/// on each element's real and imaginary parts, in JAX's convention:
/// df/dx - i df/dy (PyTorch's is its conjugate).
std::vector<std::complex<double>> numerical_complex_gradient(const std::function<Array(const Array&)>& f,
                                                             const Array& z, double step = 1e-6);

}  // namespace kiln::testing
